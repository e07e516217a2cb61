// Op family: elementwise unary math (Neg, Abs, trigonometry, rounding, IsNaN, Not, ...).
//
// Every op maps one tensor to a tensor of the same shape. Float16/BFloat16 compute in
// float; float in float and double in double (as the reference implementation does).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// y[i] = f(x[i]) with half types going through float.
template <typename T, typename U, typename F>
void map_elements(const Tensor& x, Tensor& y, F f) {
  const T* px = x.data<T>();
  U* py = y.mutable_data<U>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kIsHalf<U>) {
      py[i] = U(static_cast<float>(f(static_cast<ComputeType<T>>(px[i]))));
    } else {
      py[i] = static_cast<U>(f(static_cast<ComputeType<T>>(px[i])));
    }
  }
}

enum class Unary {
  kNeg,
  kAbs,
  kSign,
  kSqrt,
  kReciprocal,
  kExp,
  kLog,
  kErf,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kFloor,
  kCeil,
  kRound,
};

// Which element types an op accepts (besides the floating-point ones all accept).
enum class IntegerSupport { kNone, kSigned, kAll };

constexpr IntegerSupport integer_support(Unary op) {
  switch (op) {
    case Unary::kNeg:
      return IntegerSupport::kSigned;
    case Unary::kAbs:
    case Unary::kSign:
    case Unary::kErf:
      return IntegerSupport::kAll;
    default:
      return IntegerSupport::kNone;
  }
}

// Rounds half to even independently of the floating-point environment.
template <typename C>
C round_half_even(C v) {
  const C r = std::round(v);  // half away from zero
  if (std::abs(v - std::trunc(v)) == C(0.5)) return C(2) * std::round(v / C(2));
  return r;
}

template <Unary kOp, typename C>
C apply_unary(C v) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    // Unsigned arithmetic wraps the most negative value instead of overflowing.
    if constexpr (kOp == Unary::kNeg) return static_cast<C>(U(0) - static_cast<U>(v));
    if constexpr (kOp == Unary::kAbs) {
      if constexpr (std::is_signed_v<C>) {
        return v < 0 ? static_cast<C>(U(0) - static_cast<U>(v)) : v;
      } else {
        return v;
      }
    }
    if constexpr (kOp == Unary::kSign) return static_cast<C>((v > 0) - (v < 0));
    if constexpr (kOp == Unary::kErf) return static_cast<C>(std::erf(static_cast<double>(v)));
  } else {
    if constexpr (kOp == Unary::kNeg) return -v;
    if constexpr (kOp == Unary::kAbs) return std::abs(v);
    if constexpr (kOp == Unary::kSign) return v > 0 ? C(1) : (v < 0 ? C(-1) : v);  // keeps NaN
    if constexpr (kOp == Unary::kSqrt) return std::sqrt(v);
    if constexpr (kOp == Unary::kReciprocal) return C(1) / v;
    if constexpr (kOp == Unary::kExp) return std::exp(v);
    if constexpr (kOp == Unary::kLog) return std::log(v);
    if constexpr (kOp == Unary::kErf) return std::erf(v);
    if constexpr (kOp == Unary::kSin) return std::sin(v);
    if constexpr (kOp == Unary::kCos) return std::cos(v);
    if constexpr (kOp == Unary::kTan) return std::tan(v);
    if constexpr (kOp == Unary::kAsin) return std::asin(v);
    if constexpr (kOp == Unary::kAcos) return std::acos(v);
    if constexpr (kOp == Unary::kAtan) return std::atan(v);
    if constexpr (kOp == Unary::kSinh) return std::sinh(v);
    if constexpr (kOp == Unary::kCosh) return std::cosh(v);
    if constexpr (kOp == Unary::kAsinh) return std::asinh(v);
    if constexpr (kOp == Unary::kAcosh) return std::acosh(v);
    if constexpr (kOp == Unary::kAtanh) return std::atanh(v);
    if constexpr (kOp == Unary::kFloor) return std::floor(v);
    if constexpr (kOp == Unary::kCeil) return std::ceil(v);
    if constexpr (kOp == Unary::kRound) return round_half_even(v);
  }
}

template <Unary kOp>
class UnaryKernel : public OpKernel {
 public:
  explicit UnaryKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const DType dtype = x.dtype();
    constexpr IntegerSupport kIntegers = integer_support(kOp);
    const bool is_int = dtype_is_integer(dtype);
    if (is_int && (kIntegers == IntegerSupport::kNone ||
                   (kIntegers == IntegerSupport::kSigned && !dtype_is_signed(dtype)))) {
      context.fail("input type {} is not supported (needs a {} type)", dtype_name(dtype),
                   kIntegers == IntegerSupport::kNone ? "floating-point" : "signed numeric");
    }
    Tensor& y = context.allocate_output(0, dtype, x.shape());
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, T>(x, y, [](auto v) { return apply_unary<kOp>(v); });
    };
    if constexpr (kIntegers == IntegerSupport::kNone) {
      dispatch_float(dtype, context.node().op_type(), run);
    } else {
      dispatch_numeric(dtype, context.node().op_type(), run);
    }
  }
};

// IsNaN: float -> bool.
class IsNaNKernel : public OpKernel {
 public:
  explicit IsNaNKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, DType::kBool, x.shape());
    dispatch_float(x.dtype(), "IsNaN", [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, bool>(x, y, [](auto v) { return std::isnan(v); });
    });
  }
};

// IsInf: float -> bool, optionally only one sign of infinity.
class IsInfKernel : public OpKernel {
 public:
  explicit IsInfKernel(const KernelCreateContext& context)
      : detect_negative_(context.attr_int("detect_negative", 1) != 0),
        detect_positive_(context.attr_int("detect_positive", 1) != 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, DType::kBool, x.shape());
    dispatch_float(x.dtype(), "IsInf", [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, bool>(x, y, [&](auto v) {
        return std::isinf(v) && (v > 0 ? detect_positive_ : detect_negative_);
      });
    });
  }

 private:
  bool detect_negative_;
  bool detect_positive_;
};

class NotKernel : public OpKernel {
 public:
  explicit NotKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kBool) {
      context.fail("input type {} is not supported (needs bool)", dtype_name(x.dtype()));
    }
    Tensor& y = context.allocate_output(0, DType::kBool, x.shape());
    map_elements<bool, bool>(x, y, [](bool v) { return !v; });
  }
};

class BitwiseNotKernel : public OpKernel {
 public:
  explicit BitwiseNotKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_integer(x.dtype(), "BitwiseNot", [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_elements<T, T>(x, y, [](T v) { return static_cast<T>(~v); });
    });
  }
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// IsNaN, IsInf: a bool of the input's shape.
void infer_same_shape_bool(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (type && type->is_tensor()) context.set_output(0, tensor_type(DType::kBool, type->shape));
}

}  // namespace

void register_elementwise_unary_ops(OpRegistry& registry) {
  // Version 1's `consumed_inputs` (a legacy in-place hint, dropped at 6) changes nothing the
  // kernels compute; 13 added bfloat16 and 22 (trigonometry, Round) float8 and bfloat16 to the
  // rest: every registration accepts the types the kernels dispatch on.
  registry.add("Neg", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kNeg>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Abs", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kAbs>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Sign", {9, 13}, kernel_factory<UnaryKernel<Unary::kSign>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Sqrt", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kSqrt>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Reciprocal", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kReciprocal>>(),
               kElementwiseOp);
  registry.add("Exp", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kExp>>(), kElementwiseOp);
  registry.add("Log", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kLog>>(), kElementwiseOp);
  registry.add("Erf", {9, 13}, kernel_factory<UnaryKernel<Unary::kErf>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Sin", {7, 22}, kernel_factory<UnaryKernel<Unary::kSin>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Cos", {7, 22}, kernel_factory<UnaryKernel<Unary::kCos>>(), kElementwiseOp);
  registry.add("Tan", {7, 22}, kernel_factory<UnaryKernel<Unary::kTan>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Asin", {7, 22}, kernel_factory<UnaryKernel<Unary::kAsin>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Acos", {7, 22}, kernel_factory<UnaryKernel<Unary::kAcos>>(), kElementwiseOp);
  registry.add("Atan", {7, 22}, kernel_factory<UnaryKernel<Unary::kAtan>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Sinh", {9, 22}, kernel_factory<UnaryKernel<Unary::kSinh>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Cosh", {9, 22}, kernel_factory<UnaryKernel<Unary::kCosh>>(), kElementwiseOp);
  registry.add("Asinh", {9, 22}, kernel_factory<UnaryKernel<Unary::kAsinh>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Acosh", {9, 22}, kernel_factory<UnaryKernel<Unary::kAcosh>>(), kElementwiseOp);
  registry.add("Atanh", {9, 22}, kernel_factory<UnaryKernel<Unary::kAtanh>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Floor", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kFloor>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Ceil", {1, 6, 13}, kernel_factory<UnaryKernel<Unary::kCeil>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Round", {11, 22}, kernel_factory<UnaryKernel<Unary::kRound>>(),
               kZeroKeepingElementwiseOp);
  // IsNaN and IsInf 20 added the float8 types, which the kernels take as they take the
  // other floating-point types.
  registry.add("IsNaN", {9, 13, 20}, kernel_factory<IsNaNKernel>(), kElementwiseOp);
  registry.add("IsInf", {10, 20}, kernel_factory<IsInfKernel>(), kElementwiseOp);
  registry.add("BitwiseNot", {18},
               OpDefinition(kernel_factory<BitwiseNotKernel>(), kElementwiseOp)
                   .with_types(infer_same_as_input));
  registry.add("Not", {1}, kernel_factory<NotKernel>(), kElementwiseOp);

  // Type inference, every version.
  registry.set_type_rule("", "Neg", infer_same_as_input);
  registry.set_type_rule("", "Abs", infer_same_as_input);
  registry.set_type_rule("", "Sign", infer_same_as_input);
  registry.set_type_rule("", "Sqrt", infer_same_as_input);
  registry.set_type_rule("", "Reciprocal", infer_same_as_input);
  registry.set_type_rule("", "Exp", infer_same_as_input);
  registry.set_type_rule("", "Log", infer_same_as_input);
  registry.set_type_rule("", "Erf", infer_same_as_input);
  registry.set_type_rule("", "Sin", infer_same_as_input);
  registry.set_type_rule("", "Cos", infer_same_as_input);
  registry.set_type_rule("", "Tan", infer_same_as_input);
  registry.set_type_rule("", "Asin", infer_same_as_input);
  registry.set_type_rule("", "Acos", infer_same_as_input);
  registry.set_type_rule("", "Atan", infer_same_as_input);
  registry.set_type_rule("", "Sinh", infer_same_as_input);
  registry.set_type_rule("", "Cosh", infer_same_as_input);
  registry.set_type_rule("", "Asinh", infer_same_as_input);
  registry.set_type_rule("", "Acosh", infer_same_as_input);
  registry.set_type_rule("", "Atanh", infer_same_as_input);
  registry.set_type_rule("", "Floor", infer_same_as_input);
  registry.set_type_rule("", "Ceil", infer_same_as_input);
  registry.set_type_rule("", "Round", infer_same_as_input);
  registry.set_type_rule("", "Not", infer_same_as_input);
  registry.set_type_rule("", "IsNaN", infer_same_shape_bool);
  registry.set_type_rule("", "IsInf", infer_same_shape_bool);
}

}  // namespace onnxkit
