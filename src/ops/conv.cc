// Op family: conv — Conv (im2col + GEMM) and ConvTranspose (GEMM + col2im), 1-D to N-D.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/gemm.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// Elements of the column buffer built at a time; bigger images are done in chunks.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

AutoPad parse_auto_pad(const KernelCreateContext& context) {
  const std::string value = context.attr_string("auto_pad", "NOTSET");
  if (value == "NOTSET" || value.empty()) return AutoPad::kNotSet;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value == "VALID") return AutoPad::kValid;
  context.fail("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", value);
}

// Spatial sizes of one convolution: `in` is the image the columns are gathered from
// (Conv: X; ConvTranspose: X too, scattered into `out` = Y).
struct Geometry {
  Shape in, out, kernel;
  std::vector<int64_t> strides, dilations, pad_begin;
  int64_t in_size = 1, out_size = 1, kernel_size = 1;

  size_t rank() const { return in.size(); }
  void finish() {
    in_size = shape_numel(in);
    out_size = shape_numel(out);
    kernel_size = shape_numel(kernel);
  }
};

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
int64_t outer_offset(const Geometry& g, const Shape& from, const Shape& to,
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
void im2col(const Geometry& g, const C* x, int64_t channels, int64_t outer_begin, int64_t outer_end,
            C* col) {
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
void col2im(const Geometry& g, const C* col, int64_t channels, int64_t outer_begin,
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

// Attributes both ops share, parsed once.
struct ConvAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> kernel_shape, strides, dilations, pads;

  explicit ConvAttributes(const KernelCreateContext& context)
      : auto_pad(parse_auto_pad(context)),
        group(context.attr_int("group", 1)),
        kernel_shape(context.attr_ints("kernel_shape")),
        strides(context.attr_ints("strides")),
        dilations(context.attr_ints("dilations")),
        pads(context.attr_ints("pads")) {
    if (group < 1) context.fail("group must be >= 1, got {}", group);
    for (int64_t v : strides) {
      if (v < 1) context.fail("strides must be >= 1, got {}", v);
    }
    for (int64_t v : dilations) {
      if (v < 1) context.fail("dilations must be >= 1, got {}", v);
    }
    for (int64_t v : pads) {
      if (v < 0) context.fail("pads must be >= 0, got {}", v);
    }
  }

  // Spatial geometry for X and W (kernel dims from W[2:]); out and pads left to the op.
  Geometry base_geometry(const KernelContext& context, const Shape& x, const Shape& w) const {
    if (x.size() < 3) {
      context.fail("X must have rank >= 3 (N, C, spatial...), got shape {}", shape_to_string(x));
    }
    if (w.size() != x.size()) {
      context.fail("W has rank {} but X has rank {}", w.size(), x.size());
    }
    const size_t rank = x.size() - 2;
    Geometry g;
    g.in.assign(x.begin() + 2, x.end());
    g.kernel.assign(w.begin() + 2, w.end());
    if (!kernel_shape.empty() && Shape(kernel_shape) != g.kernel) {
      context.fail("kernel_shape {} does not match W's spatial dims {}",
                   shape_to_string(kernel_shape), shape_to_string(g.kernel));
    }
    auto check = [&](const std::vector<int64_t>& values, size_t want, const char* name) {
      if (!values.empty() && values.size() != want) {
        context.fail("{} has {} values but X has {} spatial dims (needs {})", name, values.size(),
                     rank, want);
      }
    };
    check(strides, rank, "strides");
    check(dilations, rank, "dilations");
    check(pads, 2 * rank, "pads");
    g.strides = strides.empty() ? std::vector<int64_t>(rank, 1) : strides;
    g.dilations = dilations.empty() ? std::vector<int64_t>(rank, 1) : dilations;
    g.pad_begin.assign(rank, 0);
    return g;
  }

  int64_t pad_end(size_t d, size_t rank) const {
    return pads.empty() || auto_pad != AutoPad::kNotSet ? 0 : pads[rank + d];
  }
};

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

class ConvKernel : public OpKernel {
 public:
  explicit ConvKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    if (x.dtype() != w.dtype()) {
      context.fail("X has type {} but W has type {}", dtype_name(x.dtype()), dtype_name(w.dtype()));
    }
    Geometry g = attrs_.base_geometry(context, x.shape(), w.shape());
    const int64_t batch = x.shape()[0];
    const int64_t channels = x.shape()[1];
    const int64_t maps = w.shape()[0];
    const int64_t group = attrs_.group;
    const int64_t group_channels = w.shape()[1];
    if (group_channels * group != channels) {
      context.fail("X has {} channels but W expects {} per group x group {} = {}", channels,
                   group_channels, group, group_channels * group);
    }
    if (maps % group != 0) {
      context.fail("W has {} output channels, not divisible by group {}", maps, group);
    }
    const size_t rank = g.rank();
    for (size_t d = 0; d < rank; ++d) {
      const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
      const int64_t in = g.in[d];
      const int64_t stride = g.strides[d];
      int64_t begin = 0, end = 0;
      switch (attrs_.auto_pad) {
        case AutoPad::kNotSet:
          begin = attrs_.pads.empty() ? 0 : attrs_.pads[d];
          end = attrs_.pad_end(d, rank);
          break;
        case AutoPad::kValid:
          break;
        case AutoPad::kSameUpper:
        case AutoPad::kSameLower: {
          const int64_t out = (in + stride - 1) / stride;
          const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
          begin = attrs_.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
          end = total - begin;
          break;
        }
      }
      if (in + begin + end < extent) {
        context.fail("kernel extent {} on spatial axis {} exceeds the padded input size {}", extent,
                     d, in + begin + end);
      }
      g.pad_begin[d] = begin;
      g.out.push_back((in + begin + end - extent) / stride + 1);
    }
    g.finish();
    const Tensor* bias = read_bias(context, maps, x.dtype());
    Shape out_shape{batch, maps};
    out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
    Tensor& out = context.allocate_output(0, x.dtype(), out_shape);
    if (out.numel() == 0) return;

    dispatch_conv(x.dtype(), context, [&]<typename T, typename C>() {
      std::vector<C> x_store, w_store;
      const C* px = elements_as<T, C>(x, x_store);
      const C* pw = elements_as<T, C>(w, w_store);
      std::vector<C> result(static_cast<size_t>(out.numel()));
      run<C>(g, px, pw, result.data(), batch, channels, maps);
      finish<T, C>(out, result, bias, batch, maps, g.out_size);
    });
  }

 private:
  template <typename C>
  void run(const Geometry& g, const C* x, const C* w, C* y, int64_t batch, int64_t channels,
           int64_t maps) const {
    const int64_t group = attrs_.group;
    const int64_t group_channels = channels / group;
    const int64_t group_maps = maps / group;
    const int64_t rows = group_channels * g.kernel_size;
    bool pointwise = g.kernel_size == 1 && g.in == g.out;
    for (size_t d = 0; d < g.rank(); ++d) pointwise = pointwise && g.strides[d] == 1;
    const int64_t out_last = g.out.back();
    const int64_t outer_total = g.out_size / out_last;
    // Whole rows of the last spatial dim per chunk, within the column budget.
    const int64_t chunk =
        std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, rows * out_last));
    std::vector<C> col;
    if (!pointwise) col.resize(static_cast<size_t>(rows * std::min(chunk, outer_total) * out_last));
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t gi = 0; gi < group; ++gi) {
        const C* xg = x + (n * channels + gi * group_channels) * g.in_size;
        const C* wg = w + gi * group_maps * rows;
        C* yg = y + (n * maps + gi * group_maps) * g.out_size;
        if (pointwise) {  // 1x1, stride 1, no padding: X is already the column matrix
          gemm<C>(false, false, group_maps, g.out_size, group_channels, C(1), wg, rows, xg,
                  g.in_size, C(0), yg, g.out_size);
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

  ConvAttributes attrs_;
};

// ---------------------------------------------------------------------------------------

class ConvTransposeKernel : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelCreateContext& context)
      : attrs_(context),
        output_padding_(context.attr_ints("output_padding")),
        output_shape_(context.attr_ints("output_shape")),
        // Opset 11 reversed which side gets the odd padding unit when output_shape is set.
        extra_pad_at_end_(context.opset() >= 11) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    if (x.dtype() != w.dtype()) {
      context.fail("X has type {} but W has type {}", dtype_name(x.dtype()), dtype_name(w.dtype()));
    }
    Geometry g = attrs_.base_geometry(context, x.shape(), w.shape());
    const size_t rank = g.rank();
    const int64_t batch = x.shape()[0];
    const int64_t channels = x.shape()[1];
    const int64_t group = attrs_.group;
    if (w.shape()[0] != channels) {
      context.fail("W has {} input channels but X has {}", w.shape()[0], channels);
    }
    if (channels % group != 0) {
      context.fail("X has {} channels, not divisible by group {}", channels, group);
    }
    const int64_t maps = w.shape()[1] * group;
    if (!output_padding_.empty() && output_padding_.size() != rank) {
      context.fail("output_padding has {} values but X has {} spatial dims", output_padding_.size(),
                   rank);
    }
    // output_shape may list the spatial dims only or (N, C, spatial...).
    std::vector<int64_t> wanted;
    if (!output_shape_.empty()) {
      if (output_shape_.size() != rank && output_shape_.size() != rank + 2) {
        context.fail("output_shape has {} values but X has {} spatial dims", output_shape_.size(),
                     rank);
      }
      wanted.assign(output_shape_.end() - static_cast<int64_t>(rank), output_shape_.end());
    }
    for (size_t d = 0; d < rank; ++d) {
      const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
      const int64_t adjust = output_padding_.empty() ? 0 : output_padding_[d];
      const int64_t full = g.strides[d] * (g.in[d] - 1) + adjust + extent;
      int64_t begin = 0, end = 0, out = 0;
      const bool same =
          attrs_.auto_pad == AutoPad::kSameUpper || attrs_.auto_pad == AutoPad::kSameLower;
      if (!wanted.empty() || same) {
        out = wanted.empty() ? g.in[d] * g.strides[d] : wanted[d];
        const int64_t total = std::max<int64_t>(0, full - out);
        bool small_begin;  // begin gets total / 2 (the odd unit goes to the end)
        if (wanted.empty()) {
          small_begin = attrs_.auto_pad == AutoPad::kSameUpper;
        } else if (extra_pad_at_end_) {
          small_begin = attrs_.auto_pad == AutoPad::kSameUpper;
        } else {
          small_begin = attrs_.auto_pad != AutoPad::kSameUpper;
        }
        begin = small_begin ? total / 2 : total - total / 2;
        end = total - begin;
      } else {
        if (attrs_.auto_pad == AutoPad::kNotSet && !attrs_.pads.empty()) {
          begin = attrs_.pads[d];
          end = attrs_.pads[rank + d];
        }
        out = full - begin - end;
      }
      if (out < 0) {
        context.fail("output size on spatial axis {} would be {} (pads {} + {} exceed {})", d, out,
                     begin, end, full);
      }
      g.pad_begin[d] = begin;
      g.out.push_back(out);
    }
    g.finish();
    const Tensor* bias = read_bias(context, maps, x.dtype());
    Shape out_shape{batch, maps};
    out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
    Tensor& out = context.allocate_output(0, x.dtype(), out_shape);
    if (out.numel() == 0) return;

    dispatch_conv(x.dtype(), context, [&]<typename T, typename C>() {
      std::vector<C> x_store, w_store;
      const C* px = elements_as<T, C>(x, x_store);
      const C* pw = elements_as<T, C>(w, w_store);
      std::vector<C> result(static_cast<size_t>(out.numel()), C(0));
      run<C>(g, px, pw, result.data(), batch, channels, maps);
      finish<T, C>(out, result, bias, batch, maps, g.out_size);
    });
  }

 private:
  template <typename C>
  void run(const Geometry& g, const C* x, const C* w, C* y, int64_t batch, int64_t channels,
           int64_t maps) const {
    const int64_t group = attrs_.group;
    const int64_t group_channels = channels / group;
    const int64_t group_maps = maps / group;
    const int64_t rows = group_maps * g.kernel_size;
    const int64_t in_last = g.in.back();
    const int64_t outer_total = g.in_size / std::max<int64_t>(1, in_last);
    if (g.in_size == 0) return;
    const int64_t chunk =
        std::max<int64_t>(1, kColumnBudget / std::max<int64_t>(1, rows * in_last));
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

  ConvAttributes attrs_;
  std::vector<int64_t> output_padding_;
  std::vector<int64_t> output_shape_;
  bool extra_pad_at_end_;
};

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  registry.add("Conv", {1, 11}, kernel_factory<ConvKernel>());
  registry.add("ConvTranspose", {1, 11}, kernel_factory<ConvTransposeKernel>());
}

}  // namespace onnxkit
