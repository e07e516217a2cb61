// Op family: quantization — QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// QLinearConv, QLinearMatMul, MatMulInteger and ConvInteger, and onnxkit's integer fused ops
// (MatMulIntegerToFloat, ConvIntegerToFloat, ChannelsLastQLinearConv).
//
// Integer products accumulate exactly in int32 (wrapping on overflow, which the spec
// allows); requantization then runs in float as ONNX Runtime's reference does:
// q = saturate(round_half_to_even(acc * (scale_in / scale_out)) + zero_point).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/gemm.h"
#include "core/low_precision.h"
#include "core/resource_limits.h"
#include "ir/domain.h"
#include "ops/channels_last_ops.h"
#include "ops/conv_attributes.h"
#include "ops/fused_ops.h"
#include "ops/matmul_shape.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

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
template <typename Q, typename F>
Q quantize_value(F scaled, F zero_point) {
  constexpr F lo = static_cast<F>(std::numeric_limits<Q>::min());
  constexpr F hi = static_cast<F>(std::numeric_limits<Q>::max());
  const F rounded = std::nearbyint(scaled) + zero_point;
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
// QuantizeLinear and DequantizeLinear: per-tensor, per-axis (13) and blocked (21)
// parameters; from 19 on float8 and 16-bit float scales, from 21 the 16- and 4-bit integers,
// later float4 (23), e8m0 scales (24), int2 (25) and float6 (28).

// How x's elements find their scale and zero point: x viewed as [outer, channels, inner]
// around the axis; a per-tensor parameter has one value, a per-axis one a value per
// channel, a blocked one a value per (outer, block of `block` channels, inner).
struct QuantLayout {
  int64_t outer = 1, channels = 1, inner = 1;
  enum class Kind { kPerTensor, kPerAxis, kBlocked } kind = Kind::kPerTensor;
  int64_t block = 0;
  int64_t blocks = 1;  // blocked: the parameter's length along the axis

  // Calls f(begin, end, parameter index) for runs of x's elements sharing a parameter.
  template <typename F>
  void for_each_run(F&& f) const {
    if (kind == Kind::kPerTensor) {
      f(int64_t{0}, outer * channels * inner, int64_t{0});
      return;
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t base = (o * channels + c) * inner;
        if (kind == Kind::kPerAxis) {
          f(base, base + inner, c);
          continue;
        }
        const int64_t param_base = (o * blocks + c / block) * inner;
        for (int64_t i = 0; i < inner; ++i) f(base + i, base + i + 1, param_base + i);
      }
    }
  }
};

QuantLayout quant_layout(const KernelContext& context, const Tensor& x, const Tensor& scale,
                         const Tensor* zero_point, int64_t axis, int64_t block_size,
                         bool per_axis_allowed, std::string_view scale_name,
                         std::string_view zero_point_name) {
  if (zero_point && zero_point->shape() != scale.shape() &&
      !(zero_point->numel() == 1 && scale.numel() == 1)) {
    context.fail("{} has shape {} but {} has shape {} (they must match)", zero_point_name,
                 shape_to_string(zero_point->shape()), scale_name, shape_to_string(scale.shape()));
  }
  QuantLayout layout;
  layout.outer = x.numel();
  if (scale.numel() == 1 && (scale.rank() <= 1 || block_size == 0)) return layout;
  if (!per_axis_allowed) {
    context.fail("{} must be a scalar in opset 10 (per-axis needs opset 13), got shape {}",
                 scale_name, shape_to_string(scale.shape()));
  }
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (block_size == 0 && scale.rank() != 1) {
    context.fail("{} must be a scalar or a 1-D tensor, got shape {}", scale_name,
                 shape_to_string(scale.shape()));
  }
  if (axis < -rank || axis >= rank) {
    context.fail("axis {} is out of range for x of rank {}", axis, rank);
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  layout.outer = shape_numel(std::span(x.shape()).first(a));
  layout.channels = x.shape()[a];
  layout.inner = shape_numel(std::span(x.shape()).subspan(a + 1));
  if (block_size == 0) {
    if (scale.numel() != x.shape()[a]) {
      context.fail("{} has {} values but x has {} along axis {} (shape {})", scale_name,
                   scale.numel(), x.shape()[a], axis, shape_to_string(x.shape()));
    }
    layout.kind = QuantLayout::Kind::kPerAxis;
    return layout;
  }
  if (block_size < 0) context.fail("block_size is {} (needs a positive number)", block_size);
  bool fits = scale.rank() == x.rank();
  for (int64_t d = 0; fits && d < rank; ++d) {
    const int64_t want = d == a ? (x.shape()[d] + block_size - 1) / block_size : x.shape()[d];
    fits = scale.shape()[d] == want;
  }
  if (!fits) {
    context.fail(
        "{} has shape {}: blocked quantization of x {} along axis {} in blocks of {} needs x's "
        "shape with ceil(dim / block_size) on the axis",
        scale_name, shape_to_string(scale.shape()), shape_to_string(x.shape()), axis, block_size);
  }
  layout.kind = QuantLayout::Kind::kBlocked;
  layout.block = block_size;
  layout.blocks = scale.shape()[a];
  return layout;
}

// The elements of a numeric tensor of any type as double (small types decoded).
std::vector<double> read_doubles(const Tensor& tensor, std::string_view what) {
  const auto n = static_cast<size_t>(tensor.numel());
  std::vector<double> out(n);
  const DType dtype = tensor.dtype();
  if (dtype_is_small_float(dtype) || dtype_is_small_integer(dtype)) {
    const uint8_t* src = tensor.data<uint8_t>();
    for (size_t i = 0; i < n; ++i) {
      out[i] = dtype_is_small_integer(dtype) ? static_cast<double>(small_int_value(dtype, src[i]))
                                             : small_float_to_float(dtype, src[i]);
    }
    return out;
  }
  dispatch_numeric(dtype, what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = tensor.data<T>();
    for (size_t i = 0; i < n; ++i) out[i] = convert_element<double>(src[i]);
  });
  return out;
}

// Calls f(read) where read(i) is element i of x as double, read in place: x may hold
// billions of weights (blocked int4), so it is never copied. x's types: the quantized ones,
// int32, and the float types QuantizeLinear takes.
template <typename F>
void with_x_reader(const KernelContext& context, const Tensor& x, F&& f) {
  const DType dtype = x.dtype();
  if (dtype_is_small_integer(dtype) || dtype_is_small_float(dtype)) {
    const uint8_t* src = x.data<uint8_t>();
    if (dtype_is_small_integer(dtype)) {
      f([src, dtype](int64_t i) { return static_cast<double>(small_int_value(dtype, src[i])); });
    } else {
      f([src, dtype](int64_t i) {
        return static_cast<double>(small_float_to_float(dtype, src[i]));
      });
    }
    return;
  }
  auto typed = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    f([src](int64_t i) { return convert_element<double>(src[i]); });
  };
  switch (dtype) {
    case DType::kInt8:
      return typed(TypeTag<int8_t>{});
    case DType::kUInt8:
      return typed(TypeTag<uint8_t>{});
    case DType::kInt16:
      return typed(TypeTag<int16_t>{});
    case DType::kUInt16:
      return typed(TypeTag<uint16_t>{});
    case DType::kInt32:
      return typed(TypeTag<int32_t>{});
    case DType::kFloat:
      return typed(TypeTag<float>{});
    case DType::kFloat16:
      return typed(TypeTag<Float16>{});
    case DType::kBFloat16:
      return typed(TypeTag<BFloat16>{});
    default:
      context.fail("x has type {}, which is not supported", dtype_name(dtype));
  }
}

// `value` rounded to the float type `dtype` (double: unchanged), once: through float
// rounded to odd for the 16-bit types.
double round_to_type(DType dtype, double value) {
  switch (dtype) {
    case DType::kFloat:
      return static_cast<float>(value);
    case DType::kFloat16:
    case DType::kBFloat16: {
      float f = static_cast<float>(value);
      if (std::isfinite(value) && static_cast<double>(f) != value) {
        if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
        f = std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
      }
      return dtype == DType::kFloat16 ? static_cast<float>(Float16(f))
                                      : static_cast<float>(BFloat16(f));
    }
    default:
      return value;
  }
}

// The type numpy computes x / y_scale in (ONNX's reference does), unless `precision` names
// one: the common type; int32 with anything gives double.
DType division_type(DType x, DType scale) {
  if (x == DType::kInt32 || scale == DType::kInt32) return DType::kDouble;
  if (x == scale) return x;
  if (x == DType::kDouble || scale == DType::kDouble) return DType::kDouble;
  return DType::kFloat;
}

bool is_scale_type(DType dtype, int64_t opset) {
  switch (dtype) {
    case DType::kFloat:
      return true;
    case DType::kFloat16:
    case DType::kBFloat16:
      return opset >= 19;
    case DType::kFloat8E8M0:
      return opset >= 24;
    default:
      return false;
  }
}

// The quantized types each version takes.
bool is_quantized_type(DType dtype, int64_t opset) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kInt8:
      return true;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
      return opset >= 19;
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kUInt4:
    case DType::kInt4:
      return opset >= 21;
    case DType::kFloat4E2M1:
      return opset >= 23;
    case DType::kUInt2:
    case DType::kInt2:
      return opset >= 25;
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2:
      return opset >= 28;
    default:
      return false;
  }
}

// Range of an integer quantized type.
std::pair<double, double> integer_range(DType dtype) {
  if (dtype_is_small_integer(dtype)) {
    return {static_cast<double>(small_int_min(dtype)), static_cast<double>(small_int_max(dtype))};
  }
  return dispatch_integer(dtype, "quantized type", [](auto tag) {
    using T = typename decltype(tag)::type;
    return std::pair(static_cast<double>(std::numeric_limits<T>::min()),
                     static_cast<double>(std::numeric_limits<T>::max()));
  });
}

// The attributes QuantizeLinear and DequantizeLinear share.
struct QuantAttributes {
  int64_t axis = 1;
  int64_t block_size = 0;
  DType output_dtype = DType::kUndefined;

  explicit QuantAttributes(const KernelCreateContext& context) {
    if (context.opset() >= 13) axis = context.attr_int("axis", 1);
    if (context.opset() >= 21) block_size = context.attr_int("block_size", 0);
    if (block_size < 0) context.fail("block_size is {} (needs a positive number)", block_size);
    const bool has_output_dtype = context.opset() >= (is_quantize(context) ? 21 : 23);
    if (has_output_dtype) {
      const int64_t code = context.attr_int("output_dtype", 0);
      if (code != 0) {
        if (code < 0 || code > INT32_MAX || !dtype_is_known(static_cast<int32_t>(code))) {
          context.fail("output_dtype {} is not a known data type", code);
        }
        output_dtype = static_cast<DType>(code);
      }
    }
  }
  static bool is_quantize(const KernelCreateContext& context) {
    return context.node().op_type() == "QuantizeLinear";
  }
};

class QuantizeLinearKernel : public OpKernel {
 public:
  explicit QuantizeLinearKernel(const KernelCreateContext& context)
      : attrs_(context),
        opset_(context.opset()),
        saturate_(context.opset() < 19 || context.attr_int("saturate", 1) != 0) {
    if (attrs_.output_dtype != DType::kUndefined &&
        !is_quantized_type(attrs_.output_dtype, opset_)) {
      context.fail("output_dtype is {}, not a quantized type of opset {}",
                   dtype_name(attrs_.output_dtype), opset_);
    }
    if (context.opset() >= 23) {
      const int64_t code = context.attr_int("precision", 0);
      if (code != 0) {
        const auto dtype = static_cast<DType>(code);
        if (code < 0 || code > INT32_MAX || !dtype_is_known(static_cast<int32_t>(code)) ||
            !dtype_is_float(dtype)) {
          context.fail("precision {} is not a floating-point data type", code);
        }
        precision_ = dtype;
      }
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const bool x_ok =
        x.dtype() == DType::kFloat || x.dtype() == DType::kInt32 ||
        ((x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16) && opset_ >= 19);
    if (!x_ok)
      context.fail("x has type {} (needs float, float16, bfloat16 or int32)",
                   dtype_name(x.dtype()));
    const Tensor& scale = context.input(1);
    if (!is_scale_type(scale.dtype(), opset_) &&
        !(scale.dtype() == DType::kInt32 && opset_ >= 23)) {
      context.fail("y_scale has type {}, not a scale type of opset {}", dtype_name(scale.dtype()),
                   opset_);
    }
    const Tensor* zero_point = context.has_input(2) ? &context.input(2) : nullptr;
    DType out_type = attrs_.output_dtype;
    if (zero_point) {
      if (out_type != DType::kUndefined && out_type != zero_point->dtype()) {
        context.fail("output_dtype is {} but y_zero_point has type {}", dtype_name(out_type),
                     dtype_name(zero_point->dtype()));
      }
      out_type = zero_point->dtype();
    }
    if (out_type == DType::kUndefined) out_type = DType::kUInt8;
    if (!is_quantized_type(out_type, opset_)) {
      context.fail("y_zero_point has type {} (needs {})", dtype_name(out_type),
                   opset_ < 19 ? "uint8 or int8" : "a quantized type of this opset");
    }
    const QuantLayout layout =
        quant_layout(context, x, scale, zero_point, attrs_.axis, attrs_.block_size, opset_ >= 13,
                     "y_scale", "y_zero_point");
    Tensor& out = context.allocate_output(0, out_type, x.shape());
    if (out.numel() == 0) return;
    const std::vector<double> scales = read_doubles(scale, "y_scale");
    const std::vector<double> zero_points = zero_point ? read_doubles(*zero_point, "y_zero_point")
                                                       : std::vector<double>(scales.size(), 0.0);
    const DType compute =
        precision_ != DType::kUndefined ? precision_ : division_type(x.dtype(), scale.dtype());
    with_x_reader(context, x, [&](auto read) {
      auto quotient = [&](int64_t i, double s) {
        return round_to_type(compute, round_to_type(compute, read(i)) / s);
      };
      if (dtype_is_small_float(out_type)) {
        uint8_t* dst = out.mutable_data<uint8_t>();
        layout.for_each_run([&](int64_t begin, int64_t end, int64_t p) {
          const double s = round_to_type(compute, scales[p]);
          for (int64_t i = begin; i < end; ++i) {
            dst[i] = to_small_float(out_type, quotient(i, s) + zero_points[p], saturate_);
          }
        });
        return;
      }
      // Integers: round half to even, add the zero point, saturate. NaN gives the zero
      // point (the spec leaves it open).
      const auto [lo, hi] = integer_range(out_type);
      auto quantize = [&](auto store) {
        layout.for_each_run([&](int64_t begin, int64_t end, int64_t p) {
          const double s = round_to_type(compute, scales[p]);
          const double zp = zero_points[p];
          for (int64_t i = begin; i < end; ++i) {
            const double q = std::nearbyint(quotient(i, s)) + zp;
            store(i, std::isnan(q) ? zp : std::clamp(q, lo, hi));
          }
        });
      };
      if (dtype_is_small_integer(out_type)) {
        uint8_t* dst = out.mutable_data<uint8_t>();
        quantize([&](int64_t i, double q) { dst[i] = small_int_byte(static_cast<int64_t>(q)); });
        return;
      }
      dispatch_integer(out_type, "y", [&](auto tag) {
        using Q = typename decltype(tag)::type;
        Q* dst = out.mutable_data<Q>();
        quantize([&](int64_t i, double q) { dst[i] = static_cast<Q>(q); });
      });
    });
  }

 private:
  QuantAttributes attrs_;
  int64_t opset_;
  bool saturate_;
  DType precision_ = DType::kUndefined;
};

class DequantizeLinearKernel : public OpKernel {
 public:
  explicit DequantizeLinearKernel(const KernelCreateContext& context)
      : attrs_(context), opset_(context.opset()) {
    const DType out = attrs_.output_dtype;
    if (out != DType::kUndefined && out != DType::kFloat && out != DType::kFloat16 &&
        out != DType::kBFloat16) {
      context.fail("output_dtype is {} (needs float, float16 or bfloat16)", dtype_name(out));
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kInt32 && !is_quantized_type(x.dtype(), opset_)) {
      context.fail("x has type {} (needs {})", dtype_name(x.dtype()),
                   opset_ < 19 ? "uint8, int8 or int32" : "a quantized type of this opset");
    }
    const Tensor& scale = context.input(1);
    if (!is_scale_type(scale.dtype(), opset_)) {
      context.fail("x_scale has type {} (needs {})", dtype_name(scale.dtype()),
                   opset_ < 19 ? "float" : "float, float16 or bfloat16");
    }
    const Tensor* zero_point = context.has_input(2) ? &context.input(2) : nullptr;
    if (zero_point) require_type(context, *zero_point, x.dtype(), "x_zero_point", "x");
    const QuantLayout layout =
        quant_layout(context, x, scale, zero_point, attrs_.axis, attrs_.block_size, opset_ >= 13,
                     "x_scale", "x_zero_point");
    const std::vector<double> scales = read_doubles(scale, "x_scale");
    const std::vector<double> zero_points = zero_point ? read_doubles(*zero_point, "x_zero_point")
                                                       : std::vector<double>(scales.size(), 0.0);
    if (x.dtype() == DType::kInt32) {
      for (double zp : zero_points) {
        if (zp != 0) context.fail("x is int32, whose zero point must be 0, got {}", zp);
      }
    }
    DType out_type = attrs_.output_dtype;
    if (out_type == DType::kUndefined) {
      out_type = scale.dtype() == DType::kFloat8E8M0 ? DType::kFloat : scale.dtype();
    }
    Tensor& out = context.allocate_output(0, out_type, x.shape());
    if (out.numel() == 0) return;
    // As ONNX's reference: (x - zero point) and the product in float, in double for int32.
    const bool wide = x.dtype() == DType::kInt32;
    with_x_reader(context, x, [&](auto read) {
      dispatch_float(out_type, "y", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* dst = out.mutable_data<T>();
        layout.for_each_run([&](int64_t begin, int64_t end, int64_t p) {
          const float zp = static_cast<float>(zero_points[p]);
          const float s = static_cast<float>(scales[p]);
          for (int64_t i = begin; i < end; ++i) {
            if (wide) {
              dst[i] = convert_element<T>((read(i) - zero_points[p]) * scales[p]);
            } else {
              dst[i] = convert_element<T>((static_cast<float>(read(i)) - zp) * s);
            }
          }
        });
      });
    });
  }

 private:
  QuantAttributes attrs_;
  int64_t opset_;
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

// Elements of the [batch, M, N] accumulator of a product, bounded as its output is, before it
// is allocated: two small inputs' broadcast batches can ask for TiBs.
size_t accumulator_size(const MatMulShape& s, size_t element_bytes) {
  constexpr std::string_view what = "the product's accumulator";
  const int64_t numel = checked_mul(checked_mul(shape_numel(s.batch), s.m, what), s.n, what);
  check_allocation(
      static_cast<size_t>(checked_mul(numel, static_cast<int64_t>(element_bytes), what)));
  return static_cast<size_t>(numel);
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
  std::vector<int32_t> acc(accumulator_size(s, sizeof(int32_t)));
  if (acc.empty()) return acc;
  s.for_each_matrix([&](int64_t index, int64_t a_matrix, int64_t b_matrix) {
    int32_t* out = acc.data() + index * s.m * s.n;
    gemm<int32_t>(false, false, s.m, s.n, s.k, 1, a_shifted.data() + a_matrix * s.m * s.k, s.k,
                  b_shifted.data() + b_matrix * s.k * s.n, s.n, 0, out, s.n);
    per_matrix(index, a_matrix, b_matrix);
  });
  return acc;
}

// MatMulInteger's accumulators for the node's inputs 0-3 (A, B, a_zero_point?,
// b_zero_point?), with the product's shape.
std::vector<int32_t> matmul_integer_acc(const KernelContext& context, MatMulShape& s) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  s = matmul_shape(context.node(), a.shape(), b.shape());
  auto zero_points = [&](size_t index, const Tensor& of, std::string_view name, bool rows) {
    if (!context.has_input(index)) {
      return std::vector<int32_t>(
          static_cast<size_t>(shape_numel(rows ? s.a_batch : s.b_batch) * (rows ? s.m : s.n)), 0);
    }
    const Tensor& zp = context.input(index);
    require_type(context, zp, of.dtype(), name, rows ? "A" : "B");
    const std::vector<int32_t> values = read_int32s(context, zp, name);
    return rows ? per_row(context, values, zp, s, name) : per_column(context, values, zp, s, name);
  };
  const std::vector<int32_t> a_zp = zero_points(2, a, "a_zero_point", true);
  const std::vector<int32_t> b_zp = zero_points(3, b, "b_zero_point", false);
  if (shape_numel(s.out) == 0) return {};
  return integer_matmul(context, a, b, s, a_zp, b_zp, [](int64_t, int64_t, int64_t) {});
}

class MatMulIntegerKernel : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    MatMulShape s;
    const std::vector<int32_t> acc = matmul_integer_acc(context, s);
    Tensor& out = context.allocate_output(0, DType::kInt32, s.out);
    std::copy(acc.begin(), acc.end(), out.mutable_data<int32_t>());
  }
};

// The float epilogue of com.onnxkit MatMulIntegerToFloat / ConvIntegerToFloat
// (ops/fused_ops.h): y = float(acc) * Scale + Bias, Scale (input 4) and Bias (input 5, optional)
// per tensor or per output channel; `channel(i)` is element i's channel, of `channels`.
template <typename Channel>
void integer_to_float(KernelContext& context, const std::vector<int32_t>& acc, const Shape& shape,
                      int64_t channels, Channel&& channel) {
  const Tensor& scale = float_input(context, 4, "Scale");
  if (scale.numel() != 1 && scale.numel() != channels) {
    context.fail("Scale has {} values (needs 1 or {})", scale.numel(), channels);
  }
  const Tensor* bias = context.has_input(5) ? &float_input(context, 5, "Bias") : nullptr;
  if (bias && bias->numel() != channels) {
    context.fail("Bias has {} values (needs {})", bias->numel(), channels);
  }
  Tensor& out = context.allocate_output(0, DType::kFloat, shape);
  float* y = out.mutable_data<float>();
  const float* scales = scale.data<float>();
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t c = channel(static_cast<int64_t>(i));
    y[i] = static_cast<float>(acc[i]) * scales[scale.numel() == 1 ? 0 : c];
    if (bias) y[i] += bias->data<float>()[c];
  }
}

class MatMulIntegerToFloatKernel : public OpKernel {
 public:
  explicit MatMulIntegerToFloatKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    MatMulShape s;
    const std::vector<int32_t> acc = matmul_integer_acc(context, s);
    integer_to_float(context, acc, s.out, s.n, [&](int64_t i) { return i % s.n; });
  }
};

// (A - a_zp) x (B - b_zp) in double, for QLinearMatMul's float8 operands; a_zp holds one
// value per row of A, b_zp one per column of B (as integer_matmul).
std::vector<double> float_matmul(const Tensor& a, const Tensor& b, const MatMulShape& s,
                                 const std::vector<double>& a_zp, const std::vector<double>& b_zp) {
  std::vector<double> a_shifted = read_doubles(a, "a");
  std::vector<double> b_shifted = read_doubles(b, "b");
  for (size_t i = 0; i < a_shifted.size(); ++i) a_shifted[i] -= a_zp[i / static_cast<size_t>(s.k)];
  const size_t n = static_cast<size_t>(s.n), kn = static_cast<size_t>(s.k * s.n);
  for (size_t i = 0; i < b_shifted.size(); ++i) b_shifted[i] -= b_zp[(i / kn) * n + i % n];
  std::vector<double> acc(accumulator_size(s, sizeof(double)));
  if (acc.empty()) return acc;
  s.for_each_matrix([&](int64_t index, int64_t a_matrix, int64_t b_matrix) {
    gemm<double>(false, false, s.m, s.n, s.k, 1, a_shifted.data() + a_matrix * s.m * s.k, s.k,
                 b_shifted.data() + b_matrix * s.k * s.n, s.n, 0, acc.data() + index * s.m * s.n,
                 s.n);
  });
  return acc;
}

// QLinearMatMul-21 takes float16 and bfloat16 scales besides float, whose multipliers are
// then computed in that type as ONNX's reference does, and float8 operands and output
// (dequantized, multiplied in double, quantized with saturation).
class QLinearMatMulKernel : public OpKernel {
 public:
  explicit QLinearMatMulKernel(const KernelCreateContext& context) : opset_(context.opset()) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(3);
    const Tensor& y_zp_tensor = context.input(7);
    bool any_float8 = false;
    for (auto [tensor, name] :
         {std::pair(&a, "a"), std::pair(&b, "b"), std::pair(&y_zp_tensor, "y_zero_point")}) {
      const DType dtype = tensor->dtype();
      const bool float8 =
          dtype_is_small_float(dtype) && dtype != DType::kFloat8E8M0 && dtype_bits(dtype) == 8;
      if (!(dtype == DType::kInt8 || dtype == DType::kUInt8 || (float8 && opset_ >= 21))) {
        context.fail("{} has type {} (needs uint8 or int8{})", name, dtype_name(dtype),
                     opset_ >= 21 ? " or a float8 type" : "");
      }
      any_float8 = any_float8 || float8;
    }
    const MatMulShape s = matmul_shape(context.node(), a.shape(), b.shape());
    const DType scale_type = context.input(1).dtype();
    if (!(scale_type == DType::kFloat ||
          (opset_ >= 21 && (scale_type == DType::kFloat16 || scale_type == DType::kBFloat16)))) {
      context.fail("a_scale has type {} (needs float{})", dtype_name(scale_type),
                   opset_ >= 21 ? ", float16 or bfloat16" : "");
    }
    // One of the scales as float, after checking it has a_scale's type.
    auto scale_input = [&](size_t index, std::string_view name) -> std::vector<float> {
      const Tensor& scale = context.input(index);
      if (index != 1) require_type(context, scale, scale_type, name, "a_scale");
      const std::vector<double> values = read_doubles(scale, name);
      return std::vector<float>(values.begin(), values.end());
    };
    // Scale and zero point of one operand, expanded per row (A) or per column (B).
    auto params = [&](size_t index, const Tensor& of, std::string_view scale_name,
                      std::string_view zp_name, bool rows) {
      const Tensor& scale = context.input(index);
      const Tensor& zp = context.input(index + 1);
      require_type(context, zp, of.dtype(), zp_name, rows ? "a" : "b");
      if (zp.shape() != scale.shape() && !(zp.numel() == 1 && scale.numel() == 1)) {
        context.fail("{} has shape {} but {} has shape {} (they must match)", zp_name,
                     shape_to_string(zp.shape()), scale_name, shape_to_string(scale.shape()));
      }
      const std::vector<float> scales = scale_input(index, scale_name);
      const std::vector<double> zps = read_doubles(zp, zp_name);
      if (rows) {
        return std::pair(per_row(context, scales, scale, s, scale_name),
                         per_row(context, zps, zp, s, zp_name));
      }
      return std::pair(per_column(context, scales, scale, s, scale_name),
                       per_column(context, zps, zp, s, zp_name));
    };
    const auto [a_scale, a_zp] = params(1, a, "a_scale", "a_zero_point", true);
    const auto [b_scale, b_zp] = params(4, b, "b_scale", "b_zero_point", false);
    require_scalar(context, context.input(6), "y_scale");
    const float y_scale = scale_input(6, "y_scale")[0];
    require_scalar(context, y_zp_tensor, "y_zero_point");
    const double y_zp = read_doubles(y_zp_tensor, "y_zero_point")[0];
    Tensor& out = context.allocate_output(0, y_zp_tensor.dtype(), s.out);
    if (out.numel() == 0) return;
    // Each output matrix's multipliers, a_scale[row] * b_scale[col] / y_scale, are
    // recorded as the product runs and applied afterwards.
    std::vector<int64_t> a_offsets(static_cast<size_t>(shape_numel(s.batch)));
    std::vector<int64_t> b_offsets(a_offsets.size());
    s.for_each_matrix([&](int64_t index, int64_t a_offset, int64_t b_offset) {
      a_offsets[index] = a_offset;
      b_offsets[index] = b_offset;
    });
    std::vector<double> acc;
    if (any_float8) {
      acc = float_matmul(a, b, s, a_zp, b_zp);
    } else {  // exact in int32, as the spec asks
      const std::vector<int32_t> ints = integer_matmul(
          context, a, b, s, std::vector<int32_t>(a_zp.begin(), a_zp.end()),
          std::vector<int32_t>(b_zp.begin(), b_zp.end()), [](int64_t, int64_t, int64_t) {});
      acc.assign(ints.begin(), ints.end());
    }
    // f(at, scaled value) for every output element.
    auto requantize = [&](auto store) {
      for (size_t index = 0; index < a_offsets.size(); ++index) {
        const float* row_scales = a_scale.data() + a_offsets[index] * s.m;
        const float* col_scales = b_scale.data() + b_offsets[index] * s.n;
        const int64_t base = static_cast<int64_t>(index) * s.m * s.n;
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            const double multiplier = round_to_type(
                scale_type,
                round_to_type(scale_type, double{row_scales[i]} * col_scales[j]) / y_scale);
            const int64_t at = base + i * s.n + j;
            // Integer products in float, as ONNX Runtime's MLAS requantizes (and the int8
            // kernel): float(acc) * multiplier, rounded once to float.
            const double scaled =
                any_float8 ? acc[static_cast<size_t>(at)] * multiplier
                           : static_cast<double>(static_cast<float>(acc[static_cast<size_t>(at)]) *
                                                 static_cast<float>(multiplier));
            store(at, scaled);
          }
        }
      }
    };
    if (dtype_is_small_float(out.dtype())) {
      uint8_t* dst = out.mutable_data<uint8_t>();
      requantize(
          [&](int64_t at, double v) { dst[at] = to_small_float(out.dtype(), v + y_zp, true); });
      return;
    }
    dispatch_quantized(context, out.dtype(), "y_zero_point", [&](auto tag) {
      using Q = typename decltype(tag)::type;
      Q* dst = out.mutable_data<Q>();
      requantize([&](int64_t at, double v) { dst[at] = quantize_value<Q>(v, y_zp); });
    });
  }

 private:
  int64_t opset_;
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
  // The int32 accumulator has the output's size (pads of 2^30 make it 32 GiB): bounded as
  // the output itself is, before it is allocated.
  const int64_t numel = shape_numel(g.out_shape);
  check_allocation(checked_nbytes(DType::kInt32, numel, shape_to_string(g.out_shape)));
  std::vector<int32_t> y(static_cast<size_t>(numel), 0);
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

// ConvInteger's accumulators for the node's inputs 0-3 (x, w, x_zero_point?, w_zero_point?).
std::vector<int32_t> conv_integer_acc(const KernelContext& context, const ConvAttributes& attrs,
                                      ConvGeometry& g) {
  const Tensor& x = context.input(0);
  const Tensor& w = context.input(1);
  g = conv_geometry(context, attrs, x.shape(), w.shape(), "x", "w");
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
  if (shape_numel(g.out_shape) == 0) return {};
  return integer_conv(g, shifted_input(context, x, x_zp), shifted_weights(context, w, w_zp));
}

class ConvIntegerKernel : public OpKernel {
 public:
  explicit ConvIntegerKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    ConvGeometry g;
    const std::vector<int32_t> y = conv_integer_acc(context, attrs_, g);
    Tensor& out = context.allocate_output(0, DType::kInt32, g.out_shape);
    std::copy(y.begin(), y.end(), out.mutable_data<int32_t>());
  }

 private:
  ConvAttributes attrs_;
};

class ConvIntegerToFloatKernel : public OpKernel {
 public:
  explicit ConvIntegerToFloatKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    ConvGeometry g;
    const std::vector<int32_t> acc = conv_integer_acc(context, attrs_, g);
    integer_to_float(context, acc, g.out_shape, g.maps,
                     [&](int64_t i) { return (i / g.out_size) % g.maps; });
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

// Bytes of an int8 [N, C, positions] tensor moved to [N, positions, C] (to_channels_last) or
// back.
Tensor transpose_channels(const Tensor& x, Shape out_shape, bool to_channels_last) {
  Tensor y(x.dtype(), std::move(out_shape));
  const Shape& s = x.shape();
  const int64_t batch = s[0];
  const int64_t channels = to_channels_last ? s[1] : s.back();
  const int64_t positions = batch == 0 || channels == 0 ? 0 : x.numel() / (batch * channels);
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(y.mutable_raw_data());
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t base = n * channels * positions;
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < positions; ++p) {
        const int64_t planar = base + c * positions + p, interleaved = base + p * channels + c;
        if (to_channels_last) {
          dst[interleaved] = src[planar];
        } else {
          dst[planar] = src[interleaved];
        }
      }
    }
  }
  return y;
}

// com.onnxkit ChannelsLastQLinearConv (ops/channels_last_ops.h): QLinearConv's reference kernel
// between transposes, so it computes exactly what the QLinearConv it came from did.
class ChannelsLastQLinearConvKernel : public OpKernel {
 public:
  explicit ChannelsLastQLinearConvKernel(const KernelCreateContext& context) : planar_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 3 || (x.dtype() != DType::kUInt8 && x.dtype() != DType::kInt8)) {
      context.fail("X must be int8 [N, spatial..., C], got {} {}", dtype_name(x.dtype()),
                   shape_to_string(x.shape()));
    }
    Shape planar_shape{x.shape()[0], x.shape().back()};
    planar_shape.insert(planar_shape.end(), x.shape().begin() + 1, x.shape().end() - 1);
    std::vector<RuntimeValue> values(context.num_inputs());
    std::vector<const RuntimeValue*> inputs(context.num_inputs(), nullptr);
    for (size_t i = 0; i < context.num_inputs(); ++i) {
      if (!context.has_input(i)) continue;
      values[i] =
          RuntimeValue(i == 0 ? transpose_channels(x, planar_shape, false) : context.input(i));
      inputs[i] = &values[i];
    }
    RuntimeValue output;
    RuntimeValue* outputs[] = {&output};
    KernelContext inner(context.node(), inputs, outputs, nullptr, nullptr);
    planar_.compute(inner);
    const Tensor& y = output.tensor();
    Shape y_shape{y.shape()[0]};
    y_shape.insert(y_shape.end(), y.shape().begin() + 2, y.shape().end());
    y_shape.push_back(y.shape()[1]);
    context.set_output(0, transpose_channels(y, std::move(y_shape), true));
  }

 private:
  QLinearConvKernel planar_;
};

// ---------------------------------------------------------------------------------------
// Type inference.

// An int attribute naming a data type (output_dtype); kUndefined when absent or 0.
DType dtype_attribute(const TypeInferenceContext& context, std::string_view name) {
  const Attribute* attribute = context.node().find_attribute(name);
  if (!attribute || attribute->type != AttrType::kInt ||
      !dtype_is_known(static_cast<int32_t>(attribute->i))) {
    return DType::kUndefined;
  }
  return static_cast<DType>(attribute->i);
}

SymbolicShape input_shape(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  return type && type->is_tensor() ? type->shape : std::nullopt;
}

// y: x's shape, of y_zero_point's type, else output_dtype's (21), else uint8.
void infer_quantize_linear(TypeInferenceContext& context) {
  DType dtype = DType::kUInt8;
  if (context.has_input(2)) {
    dtype = input_dtype(context, 2);
  } else if (context.opset() >= 21 &&
             dtype_attribute(context, "output_dtype") != DType::kUndefined) {
    dtype = dtype_attribute(context, "output_dtype");
  }
  if (dtype == DType::kUndefined || !context.input_type(0)) return;
  context.set_output(0, tensor_type(dtype, input_shape(context, 0)));
}

// y: x's shape, of output_dtype's type (23), else x_scale's (float for an e8m0 scale).
void infer_dequantize_linear(TypeInferenceContext& context) {
  DType dtype = DType::kFloat;
  if (context.opset() >= 19) dtype = input_dtype(context, 1);
  if (dtype == DType::kFloat8E8M0) dtype = DType::kFloat;
  if (context.opset() >= 23 && dtype_attribute(context, "output_dtype") != DType::kUndefined) {
    dtype = dtype_attribute(context, "output_dtype");
  }
  if (dtype == DType::kUndefined || !context.input_type(0)) return;
  context.set_output(0, tensor_type(dtype, input_shape(context, 0)));
}

// y: uint8 of x's shape; y_scale (float) and y_zero_point (uint8) scalars.
void infer_dynamic_quantize_linear(TypeInferenceContext& context) {
  if (context.input_type(0)) {
    context.set_output(0, tensor_type(DType::kUInt8, input_shape(context, 0)));
  }
  context.set_output(1, tensor_type(DType::kFloat, std::vector<Dim>{}));
  context.set_output(2, tensor_type(DType::kUInt8, std::vector<Dim>{}));
}

// y: numpy matmul's shape of a and b, of y_zero_point's type.
void infer_qlinear_matmul(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 7);
  if (dtype == DType::kUndefined) return;
  const SymbolicShape a = input_shape(context, 0);
  const SymbolicShape b = input_shape(context, 3);
  if (!a || !b || a->empty() || b->empty()) {
    context.set_output(0, tensor_type(dtype, std::nullopt));
    return;
  }
  std::vector<Dim> a_dims = *a, b_dims = *b;
  const bool a_vector = a_dims.size() == 1, b_vector = b_dims.size() == 1;
  if (a_vector) a_dims.insert(a_dims.begin(), Dim::known(1));
  if (b_vector) b_dims.push_back(Dim::known(1));
  const std::vector<SymbolicShape> batches{std::vector<Dim>(a_dims.begin(), a_dims.end() - 2),
                                           std::vector<Dim>(b_dims.begin(), b_dims.end() - 2)};
  std::vector<Dim> out = *broadcast_shapes(batches);
  if (!a_vector) out.push_back(a_dims[a_dims.size() - 2]);
  if (!b_vector) out.push_back(b_dims.back());
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// QLinearConv: Conv's output of y_zero_point's dtype (input 7).
void infer_qlinear_conv(TypeInferenceContext& context) {
  infer_conv_output(context, 0, 3, input_dtype(context, 7));
}

// ChannelsLastQLinearConv: QLinearConv's output with the channels moved last.
void infer_channels_last_qlinear_conv(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 7);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* w = input_dims(context, 3);
  if (!x || !w || x->size() < 3 || w->size() != x->size()) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  const ConvAttributes attrs(attributes);
  const std::vector<Dim> kernel = attrs.kernel_shape.empty()
                                      ? std::vector<Dim>(w->begin() + 2, w->end())
                                      : known_dims(attrs.kernel_shape);
  std::vector<Dim> out{(*x)[0]};
  const std::vector<Dim> spatial =
      window_dims(attrs, std::span(*x).subspan(1, x->size() - 2), kernel);
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back((*w)[0]);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// ConvInteger: Conv's output in int32.
void infer_conv_integer(TypeInferenceContext& context) {
  infer_conv_output(context, 0, 1, context.input_type(0) ? DType::kInt32 : DType::kUndefined);
}

// MatMulInteger: MatMul's output in int32.
void infer_matmul_integer(TypeInferenceContext& context) {
  const std::vector<Dim>* a = input_dims(context, 0);
  const std::vector<Dim>* b = input_dims(context, 1);
  context.set_output(
      0, tensor_type(DType::kInt32, a && b ? SymbolicShape(matmul_dims(*a, *b)) : std::nullopt));
}

// MatMulIntegerToFloat / ConvIntegerToFloat: as MatMulInteger / ConvInteger, in float.
void infer_matmul_integer_to_float(TypeInferenceContext& context) {
  const std::vector<Dim>* a = input_dims(context, 0);
  const std::vector<Dim>* b = input_dims(context, 1);
  context.set_output(
      0, tensor_type(DType::kFloat, a && b ? SymbolicShape(matmul_dims(*a, *b)) : std::nullopt));
}
void infer_conv_integer_to_float(TypeInferenceContext& context) {
  infer_conv_output(context, 0, 1, context.input_type(0) ? DType::kFloat : DType::kUndefined);
}

}  // namespace

// com.microsoft QuantizeLinear / DequantizeLinear (version 1), which ORT's tool writes with
// UseQDQContribOps and for 16-bit or 4-bit types before opset 21: ONNX's opset 21 ops (x,
// scale, optional zero point; per tensor or along `axis`), which they predate, without
// block_size.
template <typename Kernel>
std::unique_ptr<OpKernel> make_microsoft_qdq_kernel(const KernelCreateContext& context) {
  if (context.has_attribute("block_size"))
    context.fail("block_size is not an attribute of com.microsoft {}", context.node().op_type());
  return std::make_unique<Kernel>(KernelCreateContext(context.node(), 21, context.registry()));
}

void register_quantization_ops(OpRegistry& registry) {
  constexpr OpTraits kQuantization{.quantization = true};
  registry.add("QuantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28},
               OpDefinition(kernel_factory<QuantizeLinearKernel>(), kQuantization)
                   .with_types(infer_quantize_linear));
  registry.add("DequantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28},
               OpDefinition(kernel_factory<DequantizeLinearKernel>(), kQuantization)
                   .with_types(infer_dequantize_linear));
  const std::string ms(kMicrosoftDomain);
  registry.add(ms, "QuantizeLinear", 1,
               OpDefinition(make_microsoft_qdq_kernel<QuantizeLinearKernel>, kQuantization)
                   .with_types(infer_quantize_linear));
  registry.add(ms, "DequantizeLinear", 1,
               OpDefinition(make_microsoft_qdq_kernel<DequantizeLinearKernel>, kQuantization)
                   .with_types([](TypeInferenceContext& context) {
                     // y has the scale's type (float or float16).
                     const DType dtype = input_dtype(context, 1);
                     if (dtype == DType::kUndefined || !context.input_type(0)) return;
                     context.set_output(0, tensor_type(dtype, input_shape(context, 0)));
                   }));
  registry.add("DynamicQuantizeLinear", {11},
               OpDefinition(kernel_factory<DynamicQuantizeLinearKernel>(), kQuantization)
                   .with_types(infer_dynamic_quantize_linear));
  registry.add("QLinearConv", {10}, kernel_factory<QLinearConvKernel>());
  registry.add(
      "QLinearMatMul", {10, 21},
      OpDefinition(kernel_factory<QLinearMatMulKernel>()).with_types(infer_qlinear_matmul));
  registry.add("MatMulInteger", {10}, kernel_factory<MatMulIntegerKernel>());
  registry.add("ConvInteger", {10}, kernel_factory<ConvIntegerKernel>());
  const std::string onnxkit_domain(kOnnxkitDomain);
  registry.add(onnxkit_domain, "MatMulIntegerToFloat", 1,
               kernel_factory<MatMulIntegerToFloatKernel>());
  registry.add(onnxkit_domain, "ConvIntegerToFloat", 1, kernel_factory<ConvIntegerToFloatKernel>());
  registry.add(onnxkit_domain, std::string(kChannelsLastQLinearConv), 1,
               kernel_factory<ChannelsLastQLinearConvKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "QLinearConv", infer_qlinear_conv);
  registry.set_type_rule("", "MatMulInteger", infer_matmul_integer);
  registry.set_type_rule("", "ConvInteger", infer_conv_integer);
  registry.set_type_rule(onnxkit_domain, "MatMulIntegerToFloat", infer_matmul_integer_to_float);
  registry.set_type_rule(onnxkit_domain, "ConvIntegerToFloat", infer_conv_integer_to_float);
  registry.set_type_rule(onnxkit_domain, std::string(kChannelsLastQLinearConv),
                         infer_channels_last_qlinear_conv);
}

}  // namespace onnxkit
