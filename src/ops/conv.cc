// Op family: conv — Conv (im2col + GEMM) and ConvTranspose (GEMM + col2im), 1-D to N-D.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/gemm.h"
#include "ops/conv_attributes.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

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
  std::vector<Dim> out{x ? (*x)[0] : Dim{},
                       w && w->size() == rank
                           ? map_dim((*w)[1], [&](int64_t value) { return value * conv.group; })
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
  registry.add("Conv", {1, 11}, kernel_factory<ConvKernel>());
  registry.add("ConvTranspose", {1, 11}, kernel_factory<ConvTransposeKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "Conv", infer_conv);
  registry.set_type_rule("", "ConvTranspose", infer_conv_transpose);
}

}  // namespace onnxkit
