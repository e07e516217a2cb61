// Op family: conv — Conv (im2col + GEMM) and ConvTranspose (GEMM + col2im), 1-D to N-D; Col2Im,
// DeformConv and CausalConvWithState.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/gemm.h"
#include "core/resource_limits.h"
#include "core/status.h"
#include "ops/conv_attributes.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// Elements of the column buffer built at a time; bigger images are done in chunks.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

// [lo, hi): the o in [0, count) with 0 <= o * stride + offset < limit.
std::pair<int64_t, int64_t> valid_range(int64_t count, int64_t stride, int64_t offset,
                                        int64_t limit) {
  auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); };
  const int64_t lo = std::clamp<int64_t>(ceil_div(-offset, stride), 0, count);
  const int64_t hi = std::min<int64_t>(count, ceil_div(limit - offset, stride));
  return {lo, std::max(lo, hi)};
}

// Row-major multi-index of `index` within `dims`.
void unravel(int64_t index, const Shape& dims, std::vector<int64_t>& out) {
  for (size_t d = dims.size(); d-- > 0;) {
    out[d] = index % dims[d];
    index /= dims[d];
  }
}

// Maps outer position `outer` (all spatial dims but the last) of `from` through kernel
// offset `kpos` into `to`: the flat offset of the outer coordinates there, or -1 outside.
int64_t outer_offset(const ConvGeometry& g, const Shape& from, const Shape& to,
                     const std::vector<int64_t>& to_strides, const std::vector<int64_t>& kpos,
                     int64_t outer) {
  int64_t offset = 0;
  for (size_t d = g.rank() - 1; d-- > 0;) {
    const int64_t pos = outer % from[d];
    outer /= from[d];
    // Conv gathers in[o * s - p + k * dl]; ConvTranspose scatters to out[i * s - p + k * dl].
    const int64_t target = pos * g.strides[d] - g.pad_begin[d] + kpos[d] * g.dilations[d];
    if (target < 0 || target >= to[d]) return -1;
    offset += target * to_strides[d];
  }
  return offset;
}

// col[r][j] for r = (channel, kernel offset) over `channels` channels of `x`, and j over
// output positions [outer_begin, outer_end) x (last spatial dim); zero where padded.
template <typename C>
void im2col(const ConvGeometry& g, const C* x, int64_t channels, int64_t outer_begin,
            int64_t outer_end, C* col) {
  const size_t last = g.rank() - 1;
  const int64_t out_last = g.out[last];
  const int64_t stride = g.strides[last];
  const int64_t cols = (outer_end - outer_begin) * out_last;
  const std::vector<int64_t> in_strides = contiguous_strides(g.in);
  std::vector<int64_t> kpos(g.rank());
  for (int64_t r = 0; r < channels * g.kernel_size; ++r) {
    const C* channel = x + (r / g.kernel_size) * g.in_size;
    unravel(r % g.kernel_size, g.kernel, kpos);
    const int64_t shift = kpos[last] * g.dilations[last] - g.pad_begin[last];
    const auto [lo, hi] = valid_range(out_last, stride, shift, g.in[last]);
    C* dst = col + r * cols;
    for (int64_t o = outer_begin; o < outer_end; ++o, dst += out_last) {
      const int64_t base = outer_offset(g, g.out, g.in, in_strides, kpos, o);
      if (base < 0) {
        std::fill(dst, dst + out_last, C(0));
        continue;
      }
      std::fill(dst, dst + lo, C(0));
      for (int64_t i = lo; i < hi; ++i) dst[i] = channel[base + i * stride + shift];
      std::fill(dst + hi, dst + out_last, C(0));
    }
  }
}

// The inverse scatter: y[channel][position] += col[r][j] with r = (channel, kernel
// offset), j over input positions [outer_begin, outer_end) x (last spatial dim).
template <typename C>
void col2im(const ConvGeometry& g, const C* col, int64_t channels, int64_t outer_begin,
            int64_t outer_end, C* y) {
  const size_t last = g.rank() - 1;
  const int64_t in_last = g.in[last];
  const int64_t stride = g.strides[last];
  const int64_t cols = (outer_end - outer_begin) * in_last;
  const std::vector<int64_t> out_strides = contiguous_strides(g.out);
  std::vector<int64_t> kpos(g.rank());
  for (int64_t r = 0; r < channels * g.kernel_size; ++r) {
    C* channel = y + (r / g.kernel_size) * g.out_size;
    unravel(r % g.kernel_size, g.kernel, kpos);
    const int64_t shift = kpos[last] * g.dilations[last] - g.pad_begin[last];
    const auto [lo, hi] = valid_range(in_last, stride, shift, g.out[last]);
    const C* src = col + r * cols;
    for (int64_t o = outer_begin; o < outer_end; ++o, src += in_last) {
      const int64_t base = outer_offset(g, g.in, g.out, out_strides, kpos, o);
      if (base < 0) continue;
      for (int64_t i = lo; i < hi; ++i) channel[base + i * stride + shift] += src[i];
    }
  }
}

// A bias of shape [M] (or nullptr when absent), checked.
const Tensor* read_bias(const KernelContext& context, int64_t m, DType dtype) {
  if (!context.has_input(2)) return nullptr;
  const Tensor& bias = context.input(2);
  if (bias.dtype() != dtype) {
    context.fail("B has type {} but X has type {}", dtype_name(bias.dtype()), dtype_name(dtype));
  }
  if (bias.rank() != 1 || bias.shape()[0] != m) {
    context.fail("B must have shape [{}] (one value per output channel), got {}", m,
                 shape_to_string(bias.shape()));
  }
  return &bias;
}

// Calls f.template operator()<T, C>() for the float types.
template <typename F>
void dispatch_conv(DType dtype, const KernelContext& context, F&& f) {
  if (!dtype_is_float(dtype)) {
    context.fail("type {} is not supported (needs float, double or float16)", dtype_name(dtype));
  }
  dispatch_float(dtype, context.node().op_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    f.template operator()<T, ComputeType<T>>();
  });
}

// Writes the C result into `out` (T) and adds the per-channel bias over (N, M, spatial).
template <typename T, typename C>
void finish(Tensor& out, const std::vector<C>& result, const Tensor* bias, int64_t batch,
            int64_t channels, int64_t spatial) {
  std::vector<C> bias_store;
  const C* pb = bias ? elements_as<T, C>(*bias, bias_store) : nullptr;
  T* dst = out.mutable_data<T>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t m = 0; m < channels; ++m) {
      const C add = pb ? pb[m] : C(0);
      const int64_t base = (n * channels + m) * spatial;
      for (int64_t i = 0; i < spatial; ++i) {
        dst[base + i] = convert_element<T>(static_cast<C>(result[base + i] + add));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------

// Y = conv(X, W) by im2col + GEMM, per batch entry and group, in chunks of whole rows.
template <typename C>
void conv_columns(const ConvGeometry& g, const C* x, const C* w, C* y) {
  const int64_t batch = g.batch, channels = g.channels, maps = g.maps;
  const int64_t group = g.group;
  const int64_t group_channels = channels / group;
  const int64_t group_maps = maps / group;
  const int64_t rows = group_channels * g.kernel_size;
  bool pointwise = g.kernel_size == 1 && g.in == g.out;
  for (size_t d = 0; d < g.rank(); ++d) pointwise = pointwise && g.strides[d] == 1;
  const int64_t out_last = g.out.back();
  const int64_t outer_total = g.out_size / out_last;
  // Whole rows of the last spatial dim per chunk, within the column budget.
  const int64_t chunk = std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, rows * out_last));
  std::vector<C> col;
  if (!pointwise) col.resize(static_cast<size_t>(rows * std::min(chunk, outer_total) * out_last));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const C* xg = x + (n * channels + gi * group_channels) * g.in_size;
      const C* wg = w + gi * group_maps * rows;
      C* yg = y + (n * maps + gi * group_maps) * g.out_size;
      if (pointwise) {  // 1x1, stride 1, no padding: X is already the column matrix
        gemm<C>(false, false, group_maps, g.out_size, group_channels, C(1), wg, rows, xg, g.in_size,
                C(0), yg, g.out_size);
        continue;
      }
      for (int64_t o = 0; o < outer_total; o += chunk) {
        const int64_t o_end = std::min(outer_total, o + chunk);
        const int64_t cols = (o_end - o) * out_last;
        im2col(g, xg, group_channels, o, o_end, col.data());
        gemm<C>(false, false, group_maps, cols, rows, C(1), wg, rows, col.data(), cols, C(0),
                yg + o * out_last, g.out_size);
      }
    }
  }
}

// Y += the columns of W^T X scattered back (col2im), per batch entry and group.
template <typename C>
void conv_transpose_columns(const ConvGeometry& g, const C* x, const C* w, C* y) {
  const int64_t batch = g.batch, channels = g.channels, maps = g.maps;
  const int64_t group = g.group;
  const int64_t group_channels = channels / group;
  const int64_t group_maps = maps / group;
  const int64_t rows = group_maps * g.kernel_size;
  const int64_t in_last = g.in.back();
  const int64_t outer_total = g.in_size / std::max<int64_t>(1, in_last);
  if (g.in_size == 0) return;
  const int64_t chunk = std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, rows * in_last));
  std::vector<C> col(static_cast<size_t>(rows * std::min(chunk, outer_total) * in_last));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      const C* xg = x + (n * channels + gi * group_channels) * g.in_size;
      // W is [C, M/group, k...]: this group's rows form a (C/group) x rows matrix.
      const C* wg = w + gi * group_channels * rows;
      C* yg = y + (n * maps + gi * group_maps) * g.out_size;
      for (int64_t o = 0; o < outer_total; o += chunk) {
        const int64_t o_end = std::min(outer_total, o + chunk);
        const int64_t cols = (o_end - o) * in_last;
        gemm<C>(true, false, rows, cols, group_channels, C(1), wg, rows, xg + o * in_last,
                g.in_size, C(0), col.data(), cols);
        col2im(g, col.data(), group_maps, o, o_end, yg);
      }
    }
  }
}

// Conv and ConvTranspose alike: checks X and W, lays out the geometry (`geometry(x, w)`)
// and computes Y in the compute type, plus B per output channel.
template <typename Geometry>
void compute_conv(KernelContext& context, Geometry&& geometry, bool transposed) {
  const Tensor& x = context.input(0);
  const Tensor& w = context.input(1);
  if (x.dtype() != w.dtype()) {
    context.fail("X has type {} but W has type {}", dtype_name(x.dtype()), dtype_name(w.dtype()));
  }
  const ConvGeometry g = geometry(x.shape(), w.shape());
  const Tensor* bias = read_bias(context, g.maps, x.dtype());
  Tensor& out = context.allocate_output(0, x.dtype(), g.out_shape);
  if (out.numel() == 0) return;

  dispatch_conv(x.dtype(), context, [&]<typename T, typename C>() {
    std::vector<C> x_store, w_store;
    const C* px = elements_as<T, C>(x, x_store);
    const C* pw = elements_as<T, C>(w, w_store);
    std::vector<C> result(static_cast<size_t>(out.numel()), C(0));
    if (transposed) {
      conv_transpose_columns(g, px, pw, result.data());
    } else {
      conv_columns(g, px, pw, result.data());
    }
    finish<T, C>(out, result, bias, g.batch, g.maps, g.out_size);
  });
}

// ---------------------------------------------------------------------------------------

class ConvKernel : public OpKernel {
 public:
  explicit ConvKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    compute_conv(
        context,
        [&](const Shape& x, const Shape& w) { return conv_geometry(context, attrs_, x, w); },
        false);
  }

 private:
  ConvAttributes attrs_;
};

class ConvTransposeKernel : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelCreateContext& context)
      : attrs_(context), transpose_(context) {}

  void compute(KernelContext& context) const override {
    compute_conv(
        context,
        [&](const Shape& x, const Shape& w) {
          return conv_transpose_geometry(context, attrs_, transpose_, x, w);
        },
        true);
  }

 private:
  ConvAttributes attrs_;
  ConvTransposeAttributes transpose_;
};

// ---------------------------------------------------------------------------------------
// Col2Im (opset 18): ConvTranspose's scatter on its own: the columns of (N, C * prod(block),
// L) summed into an image of image_shape, L the sliding blocks a convolution would read.

class Col2ImKernel : public OpKernel {
 public:
  explicit Col2ImKernel(const KernelCreateContext& context)
      : dilations_(context.attr_ints("dilations")),
        pads_(context.attr_ints("pads")),
        strides_(context.attr_ints("strides")) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Shape image = read_int64s(context.input(1), "Col2Im image_shape");
    const Shape block = read_int64s(context.input(2), "Col2Im block_shape");
    const size_t rank = image.size();
    if (rank == 0 || block.size() != rank) {
      context.fail(
          "image_shape ({} values) and block_shape ({} values) must name the same "
          "spatial dims",
          image.size(), block.size());
    }
    if (x.rank() != 3) {
      context.fail("input must have rank 3 (N, C * prod(block_shape), L), got {}",
                   shape_to_string(x.shape()));
    }
    const std::vector<int64_t> dilations = list_or(dilations_, rank, 1, "dilations", context);
    const std::vector<int64_t> strides = list_or(strides_, rank, 1, "strides", context);
    const std::vector<int64_t> pads = list_or(pads_, 2 * rank, 0, "pads", context);
    const int64_t kernel_size = shape_numel(block);
    if (kernel_size <= 0 || x.shape()[1] % kernel_size != 0) {
      context.fail("input dim 1 ({}) is not divisible by the block size {}", x.shape()[1],
                   kernel_size);
    }
    Shape blocks(rank);  // sliding blocks along each axis
    for (size_t d = 0; d < rank; ++d) {
      const int64_t extent = (block[d] - 1) * dilations[d] + 1;
      blocks[d] = (image[d] + pads[d] + pads[d + rank] - extent) / strides[d] + 1;
      if (image[d] < 0 || block[d] < 1 || blocks[d] < 1) {
        context.fail("image_shape {} with block_shape {} leaves no sliding block on axis {}",
                     shape_to_string(image), shape_to_string(block), d);
      }
    }
    const int64_t count = shape_numel(blocks);
    if (x.shape()[2] != count) {
      context.fail("input dim 2 is {}, but image_shape {} has {} sliding blocks of {}",
                   x.shape()[2], shape_to_string(image), count, shape_to_string(block));
    }
    const int64_t n = x.shape()[0], channels = x.shape()[1] / kernel_size;
    Shape out_shape{n, channels};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
    const std::vector<int64_t> image_strides = contiguous_strides(image);
    const int64_t image_size = shape_numel(image);
    // For each (kernel position, block) pair, the image offset it adds to (-1: padding).
    std::vector<int64_t> target(static_cast<size_t>(kernel_size * count));
    std::vector<int64_t> k(rank), b(rank);
    for (int64_t kf = 0; kf < kernel_size; ++kf) {
      unravel(kf, block, k);
      for (int64_t bf = 0; bf < count; ++bf) {
        unravel(bf, blocks, b);
        int64_t offset = 0;
        for (size_t d = 0; d < rank && offset >= 0; ++d) {
          const int64_t pos = b[d] * strides[d] - pads[d] + k[d] * dilations[d];
          offset = pos < 0 || pos >= image[d] ? -1 : offset + pos * image_strides[d];
        }
        target[static_cast<size_t>(kf * count + bf)] = offset;
      }
    }
    dispatch_numeric(x.dtype(), "Col2Im", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      std::vector<C> sum(static_cast<size_t>(image_size));
      for (int64_t plane = 0; plane < n * channels; ++plane) {
        std::fill(sum.begin(), sum.end(), C{});
        const T* col = px + plane * kernel_size * count;
        for (int64_t i = 0; i < kernel_size * count; ++i) {
          const int64_t t = target[static_cast<size_t>(i)];
          if (t >= 0) sum[static_cast<size_t>(t)] += static_cast<C>(col[i]);
        }
        for (int64_t i = 0; i < image_size; ++i) {
          py[plane * image_size + i] = static_cast<T>(sum[static_cast<size_t>(i)]);
        }
      }
    });
  }

 private:
  static std::vector<int64_t> list_or(const std::vector<int64_t>& values, size_t size, int64_t fill,
                                      std::string_view name, const KernelContext& context) {
    if (values.empty()) return std::vector<int64_t>(size, fill);
    if (values.size() != size) {
      context.fail("{} has {} values, expected {}", name, values.size(), size);
    }
    for (int64_t v : values) {
      if (v < (fill == 0 ? 0 : 1)) context.fail("{} has value {}, must be >= {}", name, v, fill);
    }
    return values;
  }

  std::vector<int64_t> dilations_, pads_, strides_;
};

// output: input's dtype, [N, C, image_shape...] with C = dim 1 / prod(block_shape).
void infer_col2im(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::optional<std::vector<int64_t>> image = input_ints(context, 1);
  const std::optional<std::vector<int64_t>> block = input_ints(context, 2);
  if (x && x->size() != 3) fail("input must have rank 3, got rank {}", x->size());
  std::vector<Dim> dims{x ? (*x)[0] : Dim{}, Dim{}};
  if (x && block && (*x)[1].is_known()) {
    const int64_t kernel_size = shape_numel(*block);
    if (kernel_size > 0) dims[1] = Dim::known((*x)[1].value / kernel_size);
  }
  if (image) {
    for (int64_t v : *image) dims.push_back(Dim::known(v));
  } else if (const std::optional<int64_t> spatial = input_length(context, 1)) {
    dims.resize(2 + static_cast<size_t>(*spatial));
  } else {
    context.set_output(0, tensor_type(dtype, std::nullopt));
    return;
  }
  context.set_output(0, tensor_type(dtype, dims));
}

// ---------------------------------------------------------------------------------------
// DeformConv (opset 19): a convolution whose kernel taps read X at per-output learned
// offsets (bilinear interpolation, zero outside X), each tap optionally scaled by a mask.

class DeformConvKernel : public OpKernel {
 public:
  explicit DeformConvKernel(const KernelCreateContext& context)
      : attrs_(context), offset_group_(context.attr_int("offset_group", 1)) {
    if (offset_group_ < 1) context.fail("offset_group must be >= 1, got {}", offset_group_);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    const Tensor& offset = context.input(2);
    const ConvGeometry g = conv_geometry(context, attrs_, x.shape(), w.shape());
    const size_t rank = g.rank();
    const int64_t groups = offset_group_;
    if (g.channels % groups != 0) {
      context.fail("X has {} channels, not divisible by offset_group {}", g.channels, groups);
    }
    // offset_group is the model's number (X may have 0 channels): checked until the offset
    // tensor's shape has matched it.
    const int64_t taps = checked_mul(groups, g.kernel_size, "offset_group x kernel size");
    Shape offset_shape{g.batch, checked_mul(taps, static_cast<int64_t>(rank), "offset channels")};
    offset_shape.insert(offset_shape.end(), g.out.begin(), g.out.end());
    if (offset.shape() != offset_shape) {
      context.fail("offset has shape {}, expected {}", shape_to_string(offset.shape()),
                   shape_to_string(offset_shape));
    }
    const bool has_bias = context.has_input(3) && context.input(3).numel() > 0;
    const bool has_mask = context.has_input(4) && context.input(4).numel() > 0;
    if (has_bias && context.input(3).shape() != Shape{g.maps}) {
      context.fail("B has shape {}, expected [{}]", shape_to_string(context.input(3).shape()),
                   g.maps);
    }
    Shape mask_shape{g.batch, taps};
    mask_shape.insert(mask_shape.end(), g.out.begin(), g.out.end());
    if (has_mask && context.input(4).shape() != mask_shape) {
      context.fail("mask has shape {}, expected {}", shape_to_string(context.input(4).shape()),
                   shape_to_string(mask_shape));
    }
    const std::vector<double> xs = read_doubles(context, x, "X");
    const std::vector<double> ws = read_doubles(context, w, "W");
    const std::vector<double> offsets = read_doubles(context, offset, "offset");
    const std::vector<double> bias =
        has_bias ? read_doubles(context, context.input(3), "B") : std::vector<double>();
    const std::vector<double> mask =
        has_mask ? read_doubles(context, context.input(4), "mask") : std::vector<double>();

    // The sampled columns: col[c][k][o] = mask * X_c(o * s - p + k * dl + offset), so the
    // convolution is then one matrix product per group, as Conv's im2col.
    const int64_t per_group = g.channels / groups;
    const int64_t corners = int64_t{1} << rank;
    const std::vector<int64_t> in_strides = contiguous_strides(g.in);
    std::vector<double> col(static_cast<size_t>(g.channels * g.kernel_size * g.out_size));
    std::vector<double> result(static_cast<size_t>(g.batch * g.maps * g.out_size));
    std::vector<int64_t> k(rank), o(rank);
    std::vector<double> pos(rank);
    const int64_t in_channels_per_group = g.channels / g.group;
    const int64_t maps_per_group = g.maps / g.group;
    for (int64_t b = 0; b < g.batch; ++b) {
      for (int64_t og = 0; og < groups; ++og) {
        for (int64_t kf = 0; kf < g.kernel_size; ++kf) {
          unravel(kf, g.kernel, k);
          for (int64_t of = 0; of < g.out_size; ++of) {
            unravel(of, g.out, o);
            for (size_t d = 0; d < rank; ++d) {
              const int64_t channel =
                  (og * g.kernel_size + kf) * static_cast<int64_t>(rank) + static_cast<int64_t>(d);
              const double shift = offsets[static_cast<size_t>(
                  (b * groups * g.kernel_size * static_cast<int64_t>(rank) + channel) * g.out_size +
                  of)];
              pos[d] = static_cast<double>(o[d] * g.strides[d] - g.pad_begin[d] +
                                           k[d] * g.dilations[d]) +
                       shift;
            }
            const double scale =
                has_mask
                    ? mask[static_cast<size_t>(
                          (b * groups * g.kernel_size + og * g.kernel_size + kf) * g.out_size + of)]
                    : 1.0;
            for (int64_t c = og * per_group; c < (og + 1) * per_group; ++c) {
              const double* xc = xs.data() + (b * g.channels + c) * g.in_size;
              double value = 0;
              for (int64_t corner = 0; corner < corners; ++corner) {
                double weight = 1;
                int64_t at = 0;
                for (size_t d = 0; d < rank && weight != 0; ++d) {
                  const double floor = std::floor(pos[d]);
                  const bool upper = (corner >> d) & 1;
                  const double i = floor + (upper ? 1 : 0);
                  weight *= upper ? pos[d] - floor : 1 - (pos[d] - floor);
                  if (i < 0 || i >= static_cast<double>(g.in[d])) weight = 0;
                  at += static_cast<int64_t>(i) * in_strides[d];
                }
                if (weight != 0) value += weight * xc[at];
              }
              col[static_cast<size_t>((c * g.kernel_size + kf) * g.out_size + of)] = value * scale;
            }
          }
        }
      }
      // result[m][o] = sum over the group's (c, k) of W[m][c % per group][k] * col[c][k][o].
      for (int64_t m = 0; m < g.maps; ++m) {
        const int64_t grp = m / maps_per_group;
        double* out = result.data() + (b * g.maps + m) * g.out_size;
        std::fill_n(out, g.out_size, has_bias ? bias[static_cast<size_t>(m)] : 0.0);
        for (int64_t ci = 0; ci < in_channels_per_group; ++ci) {
          const int64_t c = grp * in_channels_per_group + ci;
          for (int64_t kf = 0; kf < g.kernel_size; ++kf) {
            const double wv =
                ws[static_cast<size_t>((m * in_channels_per_group + ci) * g.kernel_size + kf)];
            if (wv == 0) continue;
            const double* row = col.data() + (c * g.kernel_size + kf) * g.out_size;
            for (int64_t i = 0; i < g.out_size; ++i) out[i] += wv * row[i];
          }
        }
      }
    }
    write_doubles(context, 0, x.dtype(), g.out_shape, result);
  }

 private:
  ConvAttributes attrs_;
  int64_t offset_group_;
};

// Y: X's dtype, [N, M, offset's spatial dims].
void infer_deform_conv(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* w = input_dims(context, 1);
  const std::vector<Dim>* offset = input_dims(context, 2);
  if (!offset && !x) {
    context.set_output(0, tensor_type(dtype, std::nullopt));
    return;
  }
  const size_t rank = offset ? offset->size() : x->size();
  if (rank < 3 || (x && x->size() != rank)) {
    fail("X and offset must have the same rank >= 3, got ranks {} and {}", x ? x->size() : rank,
         rank);
  }
  std::vector<Dim> dims(rank);
  dims[0] = x ? (*x)[0] : (*offset)[0];
  if (w && w->size() == rank) dims[1] = (*w)[0];
  if (offset) std::copy(offset->begin() + 2, offset->end(), dims.begin() + 2);
  context.set_output(0, tensor_type(dtype, dims));
}

// ---------------------------------------------------------------------------------------
// CausalConvWithState (opset 27): a depthwise causal 1-D convolution over (N, C, L) whose
// left context is past_state (zeros when absent), the last k - 1 positions of which it
// returns as present_state for the next step; optional fused SiLU.

class CausalConvWithStateKernel : public OpKernel {
 public:
  explicit CausalConvWithStateKernel(const KernelCreateContext& context) {
    const std::string activation = context.attr_string("activation", "none");
    if (activation != "none" && activation != "silu" && activation != "swish") {
      context.fail("activation '{}' is not none, silu or swish", activation);
    }
    silu_ = activation != "none";
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    if (x.rank() != 3) {
      context.fail("input must have rank 3 (N, C, L), got {}", shape_to_string(x.shape()));
    }
    const int64_t n = x.shape()[0], channels = x.shape()[1], length = x.shape()[2];
    if (w.rank() != 3 || w.shape()[0] != channels || w.shape()[1] != 1 || w.shape()[2] < 1) {
      context.fail("weight must have shape [{}, 1, k], got {}", channels,
                   shape_to_string(w.shape()));
    }
    const int64_t k = w.shape()[2], context_length = k - 1;
    const bool has_bias = context.has_input(2);
    const bool has_past = context.has_input(3);
    if (has_bias && context.input(2).shape() != Shape{channels}) {
      context.fail("bias must have shape [{}], got {}", channels,
                   shape_to_string(context.input(2).shape()));
    }
    const Shape state_shape{n, channels, context_length};
    if (has_past && context.input(3).shape() != state_shape) {
      context.fail("past_state must have shape {}, got {}", shape_to_string(state_shape),
                   shape_to_string(context.input(3).shape()));
    }
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    Tensor& state = context.allocate_output(1, x.dtype(), state_shape);
    dispatch_float(x.dtype(), "CausalConvWithState", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      const T* pw = w.data<T>();
      const T* pb = has_bias ? context.input(2).data<T>() : nullptr;
      const T* past = has_past ? context.input(3).data<T>() : nullptr;
      T* py = y.mutable_data<T>();
      T* ps = state.mutable_data<T>();
      std::vector<double> padded(static_cast<size_t>(context_length + length));
      for (int64_t row = 0; row < n * channels; ++row) {
        const int64_t c = row % channels;
        for (int64_t i = 0; i < context_length; ++i) {
          padded[i] = past ? static_cast<double>(past[row * context_length + i]) : 0.0;
        }
        for (int64_t i = 0; i < length; ++i) {
          padded[context_length + i] = static_cast<double>(px[row * length + i]);
        }
        const T* wc = pw + c * k;
        for (int64_t t = 0; t < length; ++t) {
          double sum = pb ? static_cast<double>(pb[c]) : 0.0;
          for (int64_t j = 0; j < k; ++j) sum += static_cast<double>(wc[j]) * padded[t + j];
          // The convolution rounds to T before the activation, as the reference does.
          T value = static_cast<T>(sum);
          if (silu_) {
            const double v = static_cast<double>(value);
            value = static_cast<T>(v / (1 + std::exp(-v)));
          }
          py[row * length + t] = value;
        }
        for (int64_t i = 0; i < context_length; ++i) {
          ps[row * context_length + i] = static_cast<T>(padded[length + i]);
        }
      }
    });
  }

 private:
  bool silu_ = false;
};

// output: input's type; present_state: [N, C, k - 1].
void infer_causal_conv_with_state(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* w = input_dims(context, 1);
  if (x && x->size() != 3) fail("input must have rank 3 (N, C, L), got rank {}", x->size());
  context.set_output(0, tensor_type(dtype, x ? SymbolicShape(*x) : std::nullopt));
  Dim context_length;
  if (w && w->size() == 3 && (*w)[2].is_known()) context_length = Dim::known((*w)[2].value - 1);
  context.set_output(1, tensor_type(dtype, std::vector<Dim>{x ? (*x)[0] : Dim{},
                                                            x ? (*x)[1] : Dim{}, context_length}));
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

void infer_conv(TypeInferenceContext& context) {
  infer_conv_output(context, 0, 1, input_dtype(context, 0));
}

// ConvTranspose: [N, W's dim 1 x group, spatial...], the spatial dims output_shape's or
// grown from X's by the strides (ConvTransposeAttributes::window).
void infer_conv_transpose(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* w = input_dims(context, 1);
  const size_t rank = x ? x->size() : w ? w->size() : 0;
  if (rank == 0) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  if (rank < 3) fail("X must have rank >= 3 (N, C, spatial...), got rank {}", rank);
  const KernelCreateContext attributes = attribute_reader(context);
  const ConvAttributes conv(attributes);
  const ConvTransposeAttributes transpose(attributes);
  const size_t spatial = rank - 2;
  if (const std::string error = transpose.shape_error(spatial); !error.empty()) fail("{}", error);
  if (const std::string error = conv.list_error(spatial); !error.empty()) fail("{}", error);
  std::vector<Dim> out{x ? (*x)[0] : Dim{}, w && w->size() == rank
                                                ? map_dim((*w)[1],
                                                          [&](int64_t value) {
                                                            return checked_mul(value, conv.group,
                                                                               "W's dim 1 x group");
                                                          })
                                                : Dim{}};
  for (size_t d = 0; d < spatial; ++d) {
    Dim kernel = !conv.kernel_shape.empty() ? Dim::known(conv.kernel_shape.at(d))
                 : w && w->size() == rank   ? (*w)[d + 2]
                                            : Dim{};
    if (!transpose.output_shape.empty()) {
      out.push_back(
          Dim::known(transpose.output_shape[transpose.output_shape.size() - spatial + d]));
    } else if (x && (*x)[d + 2].is_known() && kernel.is_known()) {
      out.push_back(
          Dim::known(transpose.window(conv, d, spatial, (*x)[d + 2].value, kernel.value).out));
    } else {
      out.emplace_back();
    }
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  registry.add("Conv", {1, 11, 22}, kernel_factory<ConvKernel>());
  registry.add("ConvTranspose", {1, 11, 22}, kernel_factory<ConvTransposeKernel>());
  registry.add("Col2Im", {18},
               OpDefinition(kernel_factory<Col2ImKernel>()).with_types(infer_col2im));
  registry.add("CausalConvWithState", {27},
               OpDefinition(kernel_factory<CausalConvWithStateKernel>())
                   .with_types(infer_causal_conv_with_state));
  registry.add("DeformConv", {19, 22},
               OpDefinition(kernel_factory<DeformConvKernel>()).with_types(infer_deform_conv));

  // Type inference, every version.
  registry.set_type_rule("", "Conv", infer_conv);
  registry.set_type_rule("", "ConvTranspose", infer_conv_transpose);
}

}  // namespace onnxkit
