// Op family: quantization — QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// QLinearConv, QLinearMatMul, MatMulInteger and ConvInteger.
//
// Integer products accumulate exactly in int32 (wrapping on overflow, which the spec
// allows); requantization then runs in float as ONNX Runtime's reference does:
// q = saturate(round_half_to_even(acc * (scale_in / scale_out)) + zero_point).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/gemm.h"
#include "ops/conv_attributes.h"
#include "ops/matmul_shape.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// Elements of an im2col buffer built at a time; bigger images are done in chunks.
constexpr int64_t kColumnBudget = int64_t{1} << 21;

// Calls f(TypeTag<T>{}) for the 8-bit quantized types (and int32 where `allow_int32`).
template <typename F>
decltype(auto) dispatch_quantized(const KernelContext& context, DType dtype, std::string_view what,
                                  F&& f, bool allow_int32 = false) {
  switch (dtype) {
    case DType::kUInt8:
      return f(TypeTag<uint8_t>{});
    case DType::kInt8:
      return f(TypeTag<int8_t>{});
    case DType::kInt32:
      if (allow_int32) return f(TypeTag<int32_t>{});
      [[fallthrough]];
    default:
      context.fail("{} has type {} (needs {})", what, dtype_name(dtype),
                   allow_int32 ? "uint8, int8 or int32" : "uint8 or int8");
  }
}

// Rounds half to even, adds the zero point and saturates to Q's range. NaN maps to the
// zero point (the spec leaves it open; a cast of NaN would be undefined).
template <typename Q>
Q quantize_value(float scaled, float zero_point) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  const float rounded = std::nearbyint(scaled) + zero_point;
  if (std::isnan(rounded)) return static_cast<Q>(zero_point);
  return static_cast<Q>(static_cast<int32_t>(std::clamp(rounded, lo, hi)));
}

// int32 addition that wraps instead of overflowing (signed overflow is undefined).
int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// The values of an int8/uint8/int32 tensor as int32.
std::vector<int32_t> read_int32s(const KernelContext& context, const Tensor& tensor,
                                 std::string_view what) {
  return dispatch_quantized(
      context, tensor.dtype(), what,
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* src = tensor.data<T>();
        return std::vector<int32_t>(src, src + tensor.numel());
      },
      true);
}

const Tensor& float_input(const KernelContext& context, size_t index, std::string_view what) {
  const Tensor& tensor = context.input(index);
  if (tensor.dtype() != DType::kFloat) {
    context.fail("{} has type {} (needs float)", what, dtype_name(tensor.dtype()));
  }
  return tensor;
}

void require_type(const KernelContext& context, const Tensor& tensor, DType dtype,
                  std::string_view what, std::string_view of) {
  if (tensor.dtype() != dtype) {
    context.fail("{} has type {} but {} has type {}", what, dtype_name(tensor.dtype()), of,
                 dtype_name(dtype));
  }
}

// A per-tensor parameter: a scalar or a one-element tensor.
void require_scalar(const KernelContext& context, const Tensor& tensor, std::string_view what) {
  if (tensor.numel() != 1) {
    context.fail("{} must be a scalar (per-tensor), got shape {}", what,
                 shape_to_string(tensor.shape()));
  }
}

float read_float_scalar(const KernelContext& context, size_t index, std::string_view what) {
  const Tensor& tensor = float_input(context, index, what);
  require_scalar(context, tensor, what);
  return tensor.data<float>()[0];
}

// The elements of `values` (float or int32), whose logical shape is `shape`, repeated as
// numpy broadcasting to `target` does; fails when `shape` does not broadcast to `target`.
template <typename V>
std::vector<V> broadcast_to(const KernelContext& context, const std::vector<V>& values,
                            const Shape& shape, const Shape& target, std::string_view what) {
  if (!broadcasts_to(shape, target)) {
    context.fail("{} has shape {}, which does not broadcast to {}", what, shape_to_string(shape),
                 shape_to_string(target));
  }
  std::vector<V> out(static_cast<size_t>(shape_numel(target)));
  if (out.empty()) return out;
  std::vector<std::vector<int64_t>> strides{broadcast_strides(shape, target)};
  for_each_broadcast(target, strides,
                     [&](int64_t i, const int64_t* offsets) { out[i] = values[offsets[0]]; });
  return out;
}

// ---------------------------------------------------------------------------------------
// Per-tensor / per-axis parameters of QuantizeLinear and DequantizeLinear.

struct AxisLayout {
  int64_t outer = 1, channels = 1, inner = 1;  // x viewed as [outer, channels, inner]
};

// The layout x has relative to its scale: one channel when the scale is per-tensor.
AxisLayout axis_layout(const KernelContext& context, const Tensor& x, const Tensor& scale,
                       const Tensor* zero_point, int64_t axis, bool per_axis_allowed,
                       std::string_view scale_name, std::string_view zero_point_name) {
  if (zero_point && zero_point->shape() != scale.shape() &&
      !(zero_point->numel() == 1 && scale.numel() == 1)) {
    context.fail("{} has shape {} but {} has shape {} (they must match)", zero_point_name,
                 shape_to_string(zero_point->shape()), scale_name, shape_to_string(scale.shape()));
  }
  AxisLayout layout;
  layout.outer = x.numel();
  if (scale.numel() == 1 && scale.rank() <= 1) return layout;
  if (!per_axis_allowed) {
    context.fail("{} must be a scalar in opset 10 (per-axis needs opset 13), got shape {}",
                 scale_name, shape_to_string(scale.shape()));
  }
  if (scale.rank() != 1) {
    context.fail("{} must be a scalar or a 1-D tensor, got shape {}", scale_name,
                 shape_to_string(scale.shape()));
  }
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (axis < -rank || axis >= rank) {
    context.fail("axis {} is out of range for x of rank {}", axis, rank);
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (scale.numel() != x.shape()[a]) {
    context.fail("{} has {} values but x has {} along axis {} (shape {})", scale_name,
                 scale.numel(), x.shape()[a], axis, shape_to_string(x.shape()));
  }
  layout.outer = shape_numel(std::span(x.shape()).first(a));
  layout.channels = x.shape()[a];
  layout.inner = shape_numel(std::span(x.shape()).subspan(a + 1));
  return layout;
}

class QuantizeLinearKernel : public OpKernel {
 public:
  explicit QuantizeLinearKernel(const KernelCreateContext& context)
      : per_axis_(context.opset() >= 13), axis_(per_axis_ ? context.attr_int("axis", 1) : 1) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kFloat && x.dtype() != DType::kInt32) {
      context.fail("x has type {} (needs float or int32)", dtype_name(x.dtype()));
    }
    const Tensor& scale = float_input(context, 1, "y_scale");
    const Tensor* zero_point = context.has_input(2) ? &context.input(2) : nullptr;
    const AxisLayout layout =
        axis_layout(context, x, scale, zero_point, axis_, per_axis_, "y_scale", "y_zero_point");
    const DType out_type = zero_point ? zero_point->dtype() : DType::kUInt8;
    const std::vector<int32_t> zero_points =
        zero_point ? read_int32s(context, *zero_point, "y_zero_point")
                   : std::vector<int32_t>(static_cast<size_t>(layout.channels), 0);
    Tensor& out = context.allocate_output(0, out_type, x.shape());
    if (out.numel() == 0) return;
    const float* scales = scale.data<float>();
    dispatch_quantized(context, out_type, "y_zero_point", [&](auto tag) {
      using Q = typename decltype(tag)::type;
      Q* dst = out.mutable_data<Q>();
      auto run = [&]<typename T>(const T* src) {
        for (int64_t o = 0; o < layout.outer; ++o) {
          for (int64_t c = 0; c < layout.channels; ++c) {
            const float s = scales[c];
            const float zp = static_cast<float>(zero_points[c]);
            const int64_t base = (o * layout.channels + c) * layout.inner;
            for (int64_t i = base; i < base + layout.inner; ++i) {
              dst[i] = quantize_value<Q>(static_cast<float>(src[i]) / s, zp);
            }
          }
        }
      };
      if (x.dtype() == DType::kFloat) {
        run(x.data<float>());
      } else {
        run(x.data<int32_t>());
      }
    });
  }

 private:
  bool per_axis_;
  int64_t axis_;
};

class DequantizeLinearKernel : public OpKernel {
 public:
  explicit DequantizeLinearKernel(const KernelCreateContext& context)
      : per_axis_(context.opset() >= 13), axis_(per_axis_ ? context.attr_int("axis", 1) : 1) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& scale = float_input(context, 1, "x_scale");
    const Tensor* zero_point = context.has_input(2) ? &context.input(2) : nullptr;
    if (zero_point) require_type(context, *zero_point, x.dtype(), "x_zero_point", "x");
    const AxisLayout layout =
        axis_layout(context, x, scale, zero_point, axis_, per_axis_, "x_scale", "x_zero_point");
    std::vector<int32_t> zero_points =
        zero_point ? read_int32s(context, *zero_point, "x_zero_point")
                   : std::vector<int32_t>(static_cast<size_t>(layout.channels), 0);
    if (x.dtype() == DType::kInt32) {
      for (int32_t zp : zero_points) {
        if (zp != 0) context.fail("x is int32, whose zero point must be 0, got {}", zp);
      }
    }
    Tensor& out = context.allocate_output(0, DType::kFloat, x.shape());
    if (out.numel() == 0) return;
    const float* scales = scale.data<float>();
    float* dst = out.mutable_data<float>();
    dispatch_quantized(
        context, x.dtype(), "x",
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* src = x.data<T>();
          for (int64_t o = 0; o < layout.outer; ++o) {
            for (int64_t c = 0; c < layout.channels; ++c) {
              const float s = scales[c];
              const int64_t zp = zero_points[c];
              const int64_t base = (o * layout.channels + c) * layout.inner;
              for (int64_t i = base; i < base + layout.inner; ++i) {
                dst[i] = static_cast<float>(static_cast<int64_t>(src[i]) - zp) * s;
              }
            }
          }
        },
        true);
  }

 private:
  bool per_axis_;
  int64_t axis_;
};

// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point = saturate(round(-min / y_scale)).
class DynamicQuantizeLinearKernel : public OpKernel {
 public:
  explicit DynamicQuantizeLinearKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = float_input(context, 0, "x");
    const float* src = x.data<float>();
    const int64_t n = x.numel();
    // The range always includes 0; NaNs are ignored.
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::fmin(lo, src[i]);
      hi = std::fmax(hi, src[i]);
    }
    const float scale = (hi - lo) / 255.0f;
    // An all-zero (or empty) input has scale 0: its zero point is 0, as is every y.
    float zero_point = 0.0f;
    if (scale != 0.0f) zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
    Tensor& y = context.allocate_output(0, DType::kUInt8, x.shape());
    context.allocate_output(1, DType::kFloat, {}).mutable_data<float>()[0] = scale;
    context.allocate_output(2, DType::kUInt8, {}).mutable_data<uint8_t>()[0] =
        static_cast<uint8_t>(zero_point);
    if (n == 0 || scale == 0.0f) return;
    uint8_t* dst = y.mutable_data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) dst[i] = quantize_value<uint8_t>(src[i] / scale, zero_point);
  }
};

// ---------------------------------------------------------------------------------------
// Integer matrix products (MatMulInteger, QLinearMatMul): numpy matmul broadcasting, with
// a zero point (and scale) per tensor, per row of A or per column of B.

// A parameter of A expanded to one value per row: [a_batch..., M]. It may be a scalar,
// a 1-D [M], or [..., M, 1] broadcastable to A's rows.
template <typename V>
std::vector<V> per_row(const KernelContext& context, const std::vector<V>& values,
                       const Tensor& param, const MatMulShape& s, std::string_view what) {
  Shape rows = s.a_batch;
  rows.push_back(s.m);
  if (param.numel() == 1) return std::vector<V>(static_cast<size_t>(shape_numel(rows)), values[0]);
  Shape shape = param.shape();
  if (shape.size() >= 2) {
    if (shape.back() != 1) {
      context.fail("{} has shape {}: a per-row parameter of A must end in 1 ([..., M, 1])", what,
                   shape_to_string(shape));
    }
    shape.pop_back();
  }
  return broadcast_to(context, values, shape, rows, what);
}

// A parameter of B expanded to one value per column: [b_batch..., N]. It may be a scalar,
// a 1-D [N], or [..., 1, N] broadcastable to B's columns.
template <typename V>
std::vector<V> per_column(const KernelContext& context, const std::vector<V>& values,
                          const Tensor& param, const MatMulShape& s, std::string_view what) {
  Shape cols = s.b_batch;
  cols.push_back(s.n);
  if (param.numel() == 1) return std::vector<V>(static_cast<size_t>(shape_numel(cols)), values[0]);
  Shape shape = param.shape();
  if (shape.size() >= 2) {
    if (shape[shape.size() - 2] != 1) {
      context.fail("{} has shape {}: a per-column parameter of B must be [..., 1, N]", what,
                   shape_to_string(shape));
    }
    shape.erase(shape.end() - 2);
  }
  return broadcast_to(context, values, shape, cols, what);
}

// acc[batch, M, N] = (A - a_zp) x (B - b_zp), exact in int32 (wrapping like the spec
// allows). a_zp holds one value per row of A, b_zp one per column of B. f(index, a_offset,
// b_offset) is called for each output matrix with the batch offsets of its operands (in
// matrices), so callers can find the rows' and columns' parameters.
template <typename F>
std::vector<int32_t> integer_matmul(const KernelContext& context, const Tensor& a, const Tensor& b,
                                    const MatMulShape& s, const std::vector<int32_t>& a_zp,
                                    const std::vector<int32_t>& b_zp, F&& per_matrix) {
  const std::vector<int32_t> a_values = read_int32s(context, a, "A");
  const std::vector<int32_t> b_values = read_int32s(context, b, "B");
  std::vector<int32_t> a_shifted(a_values.size()), b_shifted(b_values.size());
  for (size_t i = 0; i < a_values.size(); ++i) {
    a_shifted[i] = a_values[i] - a_zp[i / static_cast<size_t>(s.k)];
  }
  const size_t n = static_cast<size_t>(s.n), kn = static_cast<size_t>(s.k * s.n);
  for (size_t i = 0; i < b_values.size(); ++i) {
    b_shifted[i] = b_values[i] - b_zp[(i / kn) * n + i % n];
  }
  std::vector<int32_t> acc(static_cast<size_t>(shape_numel(s.batch) * s.m * s.n));
  if (acc.empty()) return acc;
  s.for_each_matrix([&](int64_t index, int64_t a_matrix, int64_t b_matrix) {
    int32_t* out = acc.data() + index * s.m * s.n;
    gemm<int32_t>(false, false, s.m, s.n, s.k, 1, a_shifted.data() + a_matrix * s.m * s.k, s.k,
                  b_shifted.data() + b_matrix * s.k * s.n, s.n, 0, out, s.n);
    per_matrix(index, a_matrix, b_matrix);
  });
  return acc;
}

class MatMulIntegerKernel : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    const MatMulShape s = matmul_shape(context.node(), a.shape(), b.shape());
    auto zero_points = [&](size_t index, const Tensor& of, std::string_view name, bool rows) {
      if (!context.has_input(index)) {
        return std::vector<int32_t>(
            static_cast<size_t>(shape_numel(rows ? s.a_batch : s.b_batch) * (rows ? s.m : s.n)), 0);
      }
      const Tensor& zp = context.input(index);
      require_type(context, zp, of.dtype(), name, rows ? "A" : "B");
      const std::vector<int32_t> values = read_int32s(context, zp, name);
      return rows ? per_row(context, values, zp, s, name)
                  : per_column(context, values, zp, s, name);
    };
    const std::vector<int32_t> a_zp = zero_points(2, a, "a_zero_point", true);
    const std::vector<int32_t> b_zp = zero_points(3, b, "b_zero_point", false);
    Tensor& out = context.allocate_output(0, DType::kInt32, s.out);
    if (out.numel() == 0) return;
    const std::vector<int32_t> acc =
        integer_matmul(context, a, b, s, a_zp, b_zp, [](int64_t, int64_t, int64_t) {});
    std::copy(acc.begin(), acc.end(), out.mutable_data<int32_t>());
  }
};

class QLinearMatMulKernel : public OpKernel {
 public:
  explicit QLinearMatMulKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(3);
    const MatMulShape s = matmul_shape(context.node(), a.shape(), b.shape());
    // Scale and zero point of one operand, expanded per row (A) or per column (B).
    auto params = [&](size_t index, const Tensor& of, std::string_view scale_name,
                      std::string_view zp_name, bool rows) {
      const Tensor& scale = float_input(context, index, scale_name);
      const Tensor& zp = context.input(index + 1);
      require_type(context, zp, of.dtype(), zp_name, rows ? "a" : "b");
      if (zp.shape() != scale.shape() && !(zp.numel() == 1 && scale.numel() == 1)) {
        context.fail("{} has shape {} but {} has shape {} (they must match)", zp_name,
                     shape_to_string(zp.shape()), scale_name, shape_to_string(scale.shape()));
      }
      const std::vector<float> scales(scale.data<float>(), scale.data<float>() + scale.numel());
      const std::vector<int32_t> zps = read_int32s(context, zp, zp_name);
      if (rows) {
        return std::pair(per_row(context, scales, scale, s, scale_name),
                         per_row(context, zps, zp, s, zp_name));
      }
      return std::pair(per_column(context, scales, scale, s, scale_name),
                       per_column(context, zps, zp, s, zp_name));
    };
    const auto [a_scale, a_zp] = params(1, a, "a_scale", "a_zero_point", true);
    const auto [b_scale, b_zp] = params(4, b, "b_scale", "b_zero_point", false);
    const float y_scale = read_float_scalar(context, 6, "y_scale");
    const Tensor& y_zp_tensor = context.input(7);
    require_scalar(context, y_zp_tensor, "y_zero_point");
    const float y_zp = static_cast<float>(read_int32s(context, y_zp_tensor, "y_zero_point")[0]);
    Tensor& out = context.allocate_output(0, y_zp_tensor.dtype(), s.out);
    if (out.numel() == 0) return;
    // Each output matrix's multipliers, a_scale[row] * b_scale[col] / y_scale, are
    // recorded as the product runs and applied afterwards.
    std::vector<int64_t> a_offsets(static_cast<size_t>(shape_numel(s.batch)));
    std::vector<int64_t> b_offsets(a_offsets.size());
    const std::vector<int32_t> acc = integer_matmul(
        context, a, b, s, a_zp, b_zp, [&](int64_t index, int64_t a_offset, int64_t b_offset) {
          a_offsets[index] = a_offset;
          b_offsets[index] = b_offset;
        });
    dispatch_quantized(context, out.dtype(), "y_zero_point", [&](auto tag) {
      using Q = typename decltype(tag)::type;
      Q* dst = out.mutable_data<Q>();
      for (size_t index = 0; index < a_offsets.size(); ++index) {
        const float* row_scales = a_scale.data() + a_offsets[index] * s.m;
        const float* col_scales = b_scale.data() + b_offsets[index] * s.n;
        const int64_t base = static_cast<int64_t>(index) * s.m * s.n;
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            const float multiplier = row_scales[i] * col_scales[j] / y_scale;
            const int64_t at = base + i * s.n + j;
            dst[at] = quantize_value<Q>(static_cast<float>(acc[at]) * multiplier, y_zp);
          }
        }
      }
    });
  }
};

// ---------------------------------------------------------------------------------------
// Integer convolution (ConvInteger, QLinearConv): Conv's attributes, im2col + int32 GEMM.

// y[N, M, out...] = conv(x, w) in int32; x and w already have their zero points
// subtracted, so padding (the zero point in the quantized domain) is 0 here.
std::vector<int32_t> integer_conv(const ConvGeometry& g, const std::vector<int32_t>& x,
                                  const std::vector<int32_t>& w) {
  const size_t rank = g.in.size();
  const int64_t group_channels = g.channels / g.group;
  const int64_t group_maps = g.maps / g.group;
  const int64_t rows = group_channels * g.kernel_size;
  std::vector<int32_t> y(static_cast<size_t>(shape_numel(g.out_shape)), 0);
  if (y.empty()) return y;
  // Kernel offsets unravelled once: kpos[kidx * rank + d].
  std::vector<int64_t> kpos(static_cast<size_t>(g.kernel_size) * rank);
  for (int64_t kidx = 0; kidx < g.kernel_size; ++kidx) {
    int64_t rest = kidx;
    for (size_t d = rank; d-- > 0;) {
      kpos[kidx * rank + d] = rest % g.kernel[d];
      rest /= g.kernel[d];
    }
  }
  const std::vector<int64_t> in_strides = contiguous_strides(g.in);
  const int64_t chunk =
      std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(1, rows), 1, g.out_size);
  std::vector<int32_t> col(static_cast<size_t>(rows * chunk));
  std::vector<int64_t> out_pos(rank);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.group; ++gi) {
      const int32_t* xg = x.data() + (n * g.channels + gi * group_channels) * g.in_size;
      const int32_t* wg = w.data() + gi * group_maps * rows;
      int32_t* yg = y.data() + (n * g.maps + gi * group_maps) * g.out_size;
      for (int64_t p0 = 0; p0 < g.out_size; p0 += chunk) {
        const int64_t cols = std::min(chunk, g.out_size - p0);
        // col[(c, kidx), p - p0] = x[c, in position of (p, kidx)] or 0 in the padding.
        int64_t rest = p0;
        for (size_t d = rank; d-- > 0;) {
          out_pos[d] = rest % g.out[d];
          rest /= g.out[d];
        }
        for (int64_t j = 0; j < cols; ++j) {
          for (int64_t kidx = 0; kidx < g.kernel_size; ++kidx) {
            int64_t offset = 0;
            for (size_t d = 0; d < rank && offset >= 0; ++d) {
              const int64_t at = out_pos[d] * g.strides[d] - g.pad_begin[d] +
                                 kpos[kidx * rank + d] * g.dilations[d];
              offset = at < 0 || at >= g.in[d] ? -1 : offset + at * in_strides[d];
            }
            for (int64_t c = 0; c < group_channels; ++c) {
              col[(c * g.kernel_size + kidx) * cols + j] =
                  offset < 0 ? 0 : xg[c * g.in_size + offset];
            }
          }
          for (size_t d = rank; d-- > 0;) {  // next output position
            if (++out_pos[d] < g.out[d]) break;
            out_pos[d] = 0;
          }
        }
        gemm<int32_t>(false, false, group_maps, cols, rows, 1, wg, rows, col.data(), cols, 0,
                      yg + p0, g.out_size);
      }
    }
  }
  return y;
}

// x - x_zero_point (x_zp a scalar) as int32.
std::vector<int32_t> shifted_input(const KernelContext& context, const Tensor& x, int32_t x_zp) {
  std::vector<int32_t> values = read_int32s(context, x, "x");
  for (int32_t& v : values) v -= x_zp;
  return values;
}

// w - w_zero_point[m] as int32; the zero point is per tensor or per output channel.
std::vector<int32_t> shifted_weights(const KernelContext& context, const Tensor& w,
                                     const std::vector<int32_t>& w_zp) {
  std::vector<int32_t> values = read_int32s(context, w, "w");
  const int64_t maps = w.shape()[0];
  const int64_t per_map = maps == 0 ? 0 : w.numel() / maps;
  for (int64_t m = 0; m < maps; ++m) {
    const int32_t zp = w_zp.size() == 1 ? w_zp[0] : w_zp[m];
    for (int64_t i = m * per_map; i < (m + 1) * per_map; ++i) values[i] -= zp;
  }
  return values;
}

// A per-tensor or per-output-channel parameter of w: one value, or 1-D with M values.
void require_per_channel(const KernelContext& context, const Tensor& param, int64_t maps,
                         std::string_view what) {
  if (param.numel() == 1 && param.rank() <= 1) return;
  if (param.rank() != 1 || param.numel() != maps) {
    context.fail("{} must be a scalar or 1-D with {} values (one per output channel), got shape {}",
                 what, maps, shape_to_string(param.shape()));
  }
}

class ConvIntegerKernel : public OpKernel {
 public:
  explicit ConvIntegerKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    const ConvGeometry g = conv_geometry(context, attrs_, x.shape(), w.shape(), "x", "w");
    int32_t x_zp = 0;
    if (context.has_input(2)) {
      const Tensor& zp = context.input(2);
      require_type(context, zp, x.dtype(), "x_zero_point", "x");
      require_scalar(context, zp, "x_zero_point");
      x_zp = read_int32s(context, zp, "x_zero_point")[0];
    }
    std::vector<int32_t> w_zp{0};
    if (context.has_input(3)) {
      const Tensor& zp = context.input(3);
      require_type(context, zp, w.dtype(), "w_zero_point", "w");
      require_per_channel(context, zp, g.maps, "w_zero_point");
      w_zp = read_int32s(context, zp, "w_zero_point");
    }
    Tensor& out = context.allocate_output(0, DType::kInt32, g.out_shape);
    if (out.numel() == 0) return;
    const std::vector<int32_t> y =
        integer_conv(g, shifted_input(context, x, x_zp), shifted_weights(context, w, w_zp));
    std::copy(y.begin(), y.end(), out.mutable_data<int32_t>());
  }

 private:
  ConvAttributes attrs_;
};

class QLinearConvKernel : public OpKernel {
 public:
  explicit QLinearConvKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(3);
    const ConvGeometry g = conv_geometry(context, attrs_, x.shape(), w.shape(), "x", "w");
    const float x_scale = read_float_scalar(context, 1, "x_scale");
    const Tensor& x_zp = context.input(2);
    require_type(context, x_zp, x.dtype(), "x_zero_point", "x");
    require_scalar(context, x_zp, "x_zero_point");
    const Tensor& w_scale = float_input(context, 4, "w_scale");
    require_per_channel(context, w_scale, g.maps, "w_scale");
    const Tensor& w_zp = context.input(5);
    require_type(context, w_zp, w.dtype(), "w_zero_point", "w");
    require_per_channel(context, w_zp, g.maps, "w_zero_point");
    const float y_scale = read_float_scalar(context, 6, "y_scale");
    const Tensor& y_zp = context.input(7);
    require_scalar(context, y_zp, "y_zero_point");
    std::vector<int32_t> bias;
    if (context.has_input(8)) {
      const Tensor& b = context.input(8);
      if (b.dtype() != DType::kInt32)
        context.fail("B has type {} (needs int32)", dtype_name(b.dtype()));
      if (b.rank() != 1 || b.numel() != g.maps) {
        context.fail("B must have shape [{}] (one value per output channel), got {}", g.maps,
                     shape_to_string(b.shape()));
      }
      bias.assign(b.data<int32_t>(), b.data<int32_t>() + b.numel());
    }
    Tensor& out = context.allocate_output(0, y_zp.dtype(), g.out_shape);
    if (out.numel() == 0) return;
    const std::vector<int32_t> acc =
        integer_conv(g, shifted_input(context, x, read_int32s(context, x_zp, "x_zero_point")[0]),
                     shifted_weights(context, w, read_int32s(context, w_zp, "w_zero_point")));
    const float* w_scales = w_scale.data<float>();
    const float y_zero = static_cast<float>(read_int32s(context, y_zp, "y_zero_point")[0]);
    dispatch_quantized(context, y_zp.dtype(), "y_zero_point", [&](auto tag) {
      using Q = typename decltype(tag)::type;
      Q* dst = out.mutable_data<Q>();
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t m = 0; m < g.maps; ++m) {
          const float multiplier = x_scale * w_scales[w_scale.numel() == 1 ? 0 : m] / y_scale;
          const int32_t add = bias.empty() ? 0 : bias[m];
          const int64_t base = (n * g.maps + m) * g.out_size;
          for (int64_t i = base; i < base + g.out_size; ++i) {
            dst[i] =
                quantize_value<Q>(static_cast<float>(wrap_add(acc[i], add)) * multiplier, y_zero);
          }
        }
      }
    });
  }

 private:
  ConvAttributes attrs_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// QLinearConv: Conv's output of y_zero_point's dtype (input 7).
void infer_qlinear_conv(TypeInferenceContext& context) {
  infer_conv_output(context, 0, 3, input_dtype(context, 7));
}

// ConvInteger: Conv's output in int32.
void infer_conv_integer(TypeInferenceContext& context) {
  if (!context.input_type(0)) return;
  infer_conv_output(context, 0, 1, DType::kInt32);
}

// MatMulInteger: MatMul's output in int32.
void infer_matmul_integer(TypeInferenceContext& context) {
  const std::vector<Dim>* a = input_dims(context, 0);
  const std::vector<Dim>* b = input_dims(context, 1);
  context.set_output(
      0, tensor_type(DType::kInt32, a && b ? SymbolicShape(matmul_dims(*a, *b)) : std::nullopt));
}

}  // namespace

void register_quantization_ops(OpRegistry& registry) {
  constexpr OpTraits kQuantization{.quantization = true};
  registry.add("QuantizeLinear", {10, 13}, {kernel_factory<QuantizeLinearKernel>(), kQuantization});
  registry.add("DequantizeLinear", {10, 13},
               {kernel_factory<DequantizeLinearKernel>(), kQuantization});
  registry.add("DynamicQuantizeLinear", {11},
               {kernel_factory<DynamicQuantizeLinearKernel>(), kQuantization});
  registry.add("QLinearConv", {10}, kernel_factory<QLinearConvKernel>());
  registry.add("QLinearMatMul", {10}, kernel_factory<QLinearMatMulKernel>());
  registry.add("MatMulInteger", {10}, kernel_factory<MatMulIntegerKernel>());
  registry.add("ConvInteger", {10}, kernel_factory<ConvIntegerKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "QLinearConv", infer_qlinear_conv);
  registry.set_type_rule("", "MatMulInteger", infer_matmul_integer);
  registry.set_type_rule("", "ConvInteger", infer_conv_integer);
}

}  // namespace onnxkit
