// Op family: elementwise binary ops (arithmetic, Pow, Mod, BitShift, logic, comparisons),
// Where and the variadic Min/Max/Sum/Mean, with multidirectional broadcasting.
//
// Opsets 1-6 used a different rule for the binary ops: B broadcasts onto A only when
// `broadcast=1`, aligned at `axis` (suffix matching by default). Those forms are kept so
// that old exporters' models (pytorch-converted imports opset 6) run.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/shape_vector.h"

namespace onnxkit {
namespace {

// Integer arithmetic that wraps instead of overflowing (signed overflow is UB in C++, and
// small types promote to int, where uint16 * uint16 could overflow).
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T wrap_add(T x, T y) {
  return static_cast<T>(static_cast<WrapType<T>>(x) + static_cast<WrapType<T>>(y));
}
template <typename T>
T wrap_sub(T x, T y) {
  return static_cast<T>(static_cast<WrapType<T>>(x) - static_cast<WrapType<T>>(y));
}
template <typename T>
T wrap_mul(T x, T y) {
  return static_cast<T>(static_cast<WrapType<T>>(x) * static_cast<WrapType<T>>(y));
}

// A tensor's elements read with another shape of the same element count.
Tensor reshaped(const Tensor& tensor, Shape shape) {
  if (tensor.dtype() == DType::kString)
    return Tensor::from_strings(std::move(shape), tensor.strings());
  if (tensor.numel() == 0) return Tensor(tensor.dtype(), std::move(shape));
  return Tensor::from_buffer(tensor.dtype(), std::move(shape), tensor.buffer());
}

// The broadcasting rule of a binary node: numpy-style from opset 7, the limited
// `broadcast`/`axis` form before.
class BinaryBroadcast {
 public:
  explicit BinaryBroadcast(const KernelCreateContext& context) {
    if (context.opset() >= 7) return;
    legacy_ = true;
    enabled_ = context.attr_int("broadcast", 0) != 0;
    if (context.has_attribute("axis")) axis_ = context.attr_int("axis");
  }

  // The output shape; `b` is replaced by a view aligned to A's rank in the legacy form.
  Shape resolve(const KernelContext& context, const Tensor& a, Tensor& b) const {
    if (!legacy_) return broadcast_shapes(a.shape(), b.shape());
    if (!enabled_) {
      if (a.shape() != b.shape()) {
        context.fail("shapes {} and {} differ and broadcast is not set (opset {} semantics)",
                     shape_to_string(a.shape()), shape_to_string(b.shape()), 6);
      }
      return a.shape();
    }
    const int64_t rank_a = static_cast<int64_t>(a.rank());
    const int64_t rank_b = static_cast<int64_t>(b.rank());
    if (b.numel() == 1) {
      b = reshaped(b, Shape(a.rank(), 1));
      return a.shape();
    }
    if (rank_b > rank_a) {
      context.fail("B of shape {} has a higher rank than A of shape {}", shape_to_string(b.shape()),
                   shape_to_string(a.shape()));
    }
    int64_t start = rank_a - rank_b;
    if (axis_) {
      start = *axis_ < 0 ? *axis_ + rank_a : *axis_;
      if (start < 0 || start + rank_b > rank_a) {
        context.fail("axis {} does not fit B of shape {} into A of shape {}", *axis_,
                     shape_to_string(b.shape()), shape_to_string(a.shape()));
      }
    }
    Shape aligned(a.rank(), 1);
    for (int64_t d = 0; d < rank_b; ++d) {
      const int64_t dim = b.shape()[d];
      if (dim != 1 && dim != a.shape()[start + d]) {
        context.fail("B of shape {} does not match A of shape {} at axis {}",
                     shape_to_string(b.shape()), shape_to_string(a.shape()), start);
      }
      aligned[start + d] = dim;
    }
    b = reshaped(b, std::move(aligned));
    return a.shape();
  }

 private:
  bool legacy_ = false;
  bool enabled_ = false;
  std::optional<int64_t> axis_;
};

void require_same_types(const KernelContext& context, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    context.fail("input types differ: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  }
}

// ---- Add, Sub, Mul, Div ----

enum class Arithmetic { kAdd, kSub, kMul, kDiv };

template <Arithmetic kOp>
class ArithmeticKernel : public OpKernel {
 public:
  explicit ArithmeticKernel(const KernelCreateContext& context) : broadcast_(context) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    Tensor b = context.input(1);
    require_same_types(context, a, b);
    Tensor& out = context.allocate_output(0, a.dtype(), broadcast_.resolve(context, a, b));
    dispatch_numeric(a.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, T>(a, b, out, [&](T x, T y) -> T {
        if constexpr (std::is_integral_v<T>) {
          return apply_integer(context, x, y);
        } else {
          return T(apply_float(to_compute(x), to_compute(y)));
        }
      });
    });
  }

 private:
  template <typename F>
  static F apply_float(F x, F y) {
    if constexpr (kOp == Arithmetic::kAdd) {
      return x + y;
    } else if constexpr (kOp == Arithmetic::kSub) {
      return x - y;
    } else if constexpr (kOp == Arithmetic::kMul) {
      return x * y;
    } else {
      return x / y;
    }
  }
  template <typename T>
  static T apply_integer(const KernelContext& context, T x, T y) {
    if constexpr (kOp == Arithmetic::kAdd) {
      return wrap_add(x, y);
    } else if constexpr (kOp == Arithmetic::kSub) {
      return wrap_sub(x, y);
    } else if constexpr (kOp == Arithmetic::kMul) {
      return wrap_mul(x, y);
    } else {
      if (y == 0) context.fail("integer division by zero");
      // min / -1 overflows; it wraps to min like the other integer ops.
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return wrap_sub(T(0), x);
      }
      return static_cast<T>(x / y);  // truncates toward zero, as C does
    }
  }

  BinaryBroadcast broadcast_;
};

// ---- Pow: the exponent may have another type than the base ----

// An exponent tensor's values as double (exact for every integer up to 2^53).
std::vector<double> exponent_values(const Tensor& tensor, std::string_view what) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  dispatch_numeric(tensor.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(to_compute(data[i]));
  });
  return values;
}

// A double as integer type T: truncates; NaN gives 0 and out-of-range values saturate
// (a plain cast would be undefined behaviour).
template <typename T>
T double_to_integer(double value) {
  if (std::isnan(value)) return 0;
  if (value <= static_cast<double>(std::numeric_limits<T>::min())) {
    return std::numeric_limits<T>::min();
  }
  if (value >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(value);
}

template <typename T>
T integer_power(T base, double exponent) {
  if (exponent < 0 || exponent != std::floor(exponent) || exponent > 1e18) {
    return double_to_integer<T>(std::pow(static_cast<double>(base), exponent));
  }
  // Exact integer power by squaring, wrapping like numpy's integer power.
  auto e = static_cast<uint64_t>(exponent);
  T result = 1;
  while (e) {
    if (e & 1u) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

class PowKernel : public OpKernel {
 public:
  // Before opset 12 base and exponent share one type.
  explicit PowKernel(const KernelCreateContext& context)
      : broadcast_(context), same_types_(context.opset() < 12) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    Tensor b = context.input(1);
    if (same_types_) require_same_types(context, a, b);
    Shape out_shape = broadcast_.resolve(context, a, b);
    Tensor exponent =
        Tensor::from_vector<double>(DType::kDouble, b.shape(), exponent_values(b, "Pow exponent"));
    Tensor& out = context.allocate_output(0, a.dtype(), std::move(out_shape));
    dispatch_numeric(a.dtype(), "Pow base", [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, double, T>(a, exponent, out, [](T x, double y) -> T {
        if constexpr (std::is_integral_v<T>) {
          return integer_power(x, y);
        } else if constexpr (std::is_same_v<T, float>) {
          return std::pow(x, static_cast<float>(y));  // as numpy's float32 power
        } else {
          return T(static_cast<ComputeType<T>>(std::pow(static_cast<double>(to_compute(x)), y)));
        }
      });
    });
  }

 private:
  BinaryBroadcast broadcast_;
  bool same_types_;
};

// ---- Mod ----

class ModKernel : public OpKernel {
 public:
  explicit ModKernel(const KernelCreateContext& context)
      : fmod_(context.attr_int("fmod", 0) != 0) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    require_same_types(context, a, b);
    Tensor& out = context.allocate_output(0, a.dtype(), broadcast_shapes(a.shape(), b.shape()));
    dispatch_numeric(a.dtype(), "Mod", [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, T>(a, b, out, [&](T x, T y) -> T {
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) context.fail("integer modulo by zero");
          if constexpr (std::is_signed_v<T>) {
            if (y == -1) return 0;  // avoids min % -1, which overflows
            T r = static_cast<T>(x % y);
            // fmod=0: the result takes the divisor's sign, as Python's %.
            if (!fmod_ && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
            return r;
          } else {
            return static_cast<T>(x % y);
          }
        } else {
          using F = ComputeType<T>;
          F fx = to_compute(x), fy = to_compute(y);
          F r = std::fmod(fx, fy);
          if (!fmod_) {
            if (r != 0 && ((r < 0) != (fy < 0))) {
              r += fy;
            } else if (r == 0) {
              r = std::copysign(F(0), fy);
            }
          }
          return T(r);
        }
      });
    });
  }

 private:
  bool fmod_;
};

// ---- BitShift ----

class BitShiftKernel : public OpKernel {
 public:
  explicit BitShiftKernel(const KernelCreateContext& context) {
    std::string direction = context.attr_string("direction");
    if (direction == "LEFT") {
      left_ = true;
    } else if (direction != "RIGHT") {
      context.fail("direction must be \"LEFT\" or \"RIGHT\", got \"{}\"", direction);
    }
  }
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    require_same_types(context, a, b);
    Tensor& out = context.allocate_output(0, a.dtype(), broadcast_shapes(a.shape(), b.shape()));
    dispatch_integer(a.dtype(), "BitShift", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using U = std::make_unsigned_t<T>;
      constexpr auto kBits = static_cast<int64_t>(sizeof(T) * 8);
      broadcast_binary<T, T, T>(a, b, out, [&](T x, T y) -> T {
        // A negative amount, or the width or more, leaves only what the sign fill gives
        // (C leaves those shifts undefined): -1 for a right shift of a negative value.
        bool negative = false;
        if constexpr (std::is_signed_v<T>) negative = x < 0;
        const auto amount = static_cast<int64_t>(y);  // a uint64 past int64's range: < 0
        if (amount < 0 || amount >= kBits) return (!left_ && negative) ? T(-1) : T(0);
        if (left_) return static_cast<T>(static_cast<U>(static_cast<U>(x) << amount));
        // Signed types shift arithmetically (opset 28 defines them; C++20 does too).
        return static_cast<T>(x >> amount);
      });
    });
  }

 private:
  bool left_ = false;
};

// ---- BitwiseAnd, BitwiseOr, BitwiseXor ----

enum class Bitwise { kAnd, kOr, kXor };

template <Bitwise kOp>
class BitwiseKernel : public OpKernel {
 public:
  explicit BitwiseKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    require_same_types(context, a, b);
    Tensor& out = context.allocate_output(0, a.dtype(), broadcast_shapes(a.shape(), b.shape()));
    dispatch_integer(a.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, T>(a, b, out, [](T x, T y) -> T {
        if constexpr (kOp == Bitwise::kAnd) {
          return static_cast<T>(x & y);
        } else if constexpr (kOp == Bitwise::kOr) {
          return static_cast<T>(x | y);
        } else {
          return static_cast<T>(x ^ y);
        }
      });
    });
  }
};

// ---- And, Or, Xor ----

enum class Logic { kAnd, kOr, kXor };

template <Logic kOp>
class LogicKernel : public OpKernel {
 public:
  explicit LogicKernel(const KernelCreateContext& context) : broadcast_(context) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    Tensor b = context.input(1);
    if (a.dtype() != DType::kBool || b.dtype() != DType::kBool) {
      context.fail("inputs must be bool, got {} and {}", dtype_name(a.dtype()),
                   dtype_name(b.dtype()));
    }
    Tensor& out = context.allocate_output(0, DType::kBool, broadcast_.resolve(context, a, b));
    broadcast_binary<bool, bool, bool>(a, b, out, [](bool x, bool y) -> bool {
      if constexpr (kOp == Logic::kAnd) {
        return x && y;
      } else if constexpr (kOp == Logic::kOr) {
        return x || y;
      } else {
        return x != y;
      }
    });
  }

 private:
  BinaryBroadcast broadcast_;
};

// ---- Equal, Less, Greater, LessOrEqual, GreaterOrEqual ----

enum class Compare { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };

template <Compare kOp>
class CompareKernel : public OpKernel {
 public:
  explicit CompareKernel(const KernelCreateContext& context) : broadcast_(context) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    Tensor b = context.input(1);
    require_same_types(context, a, b);
    Tensor& out = context.allocate_output(0, DType::kBool, broadcast_.resolve(context, a, b));
    dispatch_all(a.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, bool>(a, b, out, [](const T& x, const T& y) { return compare(x, y); });
    });
  }

 private:
  // Strings compare as they are; numbers in their computing type.
  template <typename T>
  static bool compare(const T& x, const T& y) {
    if constexpr (std::is_same_v<T, std::string>) {
      return apply(x, y);
    } else {
      return apply(to_compute(x), to_compute(y));
    }
  }
  template <typename V>
  static bool apply(const V& x, const V& y) {
    if constexpr (kOp == Compare::kEqual) {
      return x == y;
    } else if constexpr (kOp == Compare::kLess) {
      return x < y;
    } else if constexpr (kOp == Compare::kGreater) {
      return x > y;
    } else if constexpr (kOp == Compare::kLessOrEqual) {
      return x <= y;
    } else {
      return x >= y;
    }
  }

  BinaryBroadcast broadcast_;
};

// ---- Where ----

// Elements are copied as opaque values of their byte size (dispatch_storage).

class WhereKernel : public OpKernel {
 public:
  explicit WhereKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const Tensor& condition = context.input(0);
    const Tensor& x = context.input(1);
    const Tensor& y = context.input(2);
    if (condition.dtype() != DType::kBool) {
      context.fail("condition must be bool, got {}", dtype_name(condition.dtype()));
    }
    require_same_types(context, x, y);
    const Shape shapes[] = {condition.shape(), x.shape(), y.shape()};
    Tensor& out = context.allocate_output(0, x.dtype(), broadcast_shapes(shapes));
    const std::vector<std::vector<int64_t>> strides{
        broadcast_strides(condition.shape(), out.shape()),
        broadcast_strides(x.shape(), out.shape()), broadcast_strides(y.shape(), out.shape())};
    const bool* pc = condition.data<bool>();
    dispatch_storage(x.dtype(), "Where", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = tensor_elements<T>(x);
      const T* py = tensor_elements<T>(y);
      T* po = mutable_tensor_elements<T>(out);
      for_each_broadcast(out.shape(), strides, [&](int64_t i, const int64_t* offsets) {
        po[i] = pc[offsets[0]] ? px[offsets[1]] : py[offsets[2]];
      });
    });
  }
};

// ---- Min, Max, Sum, Mean: 1..N inputs ----

enum class Variadic { kMin, kMax, kSum, kMean };

template <Variadic kOp>
class VariadicKernel : public OpKernel {
 public:
  // Before opset 8 the inputs had to share one shape.
  explicit VariadicKernel(const KernelCreateContext& context) : broadcast_(context.opset() >= 8) {}
  void compute(KernelContext& context) const override {
    std::vector<const Tensor*> inputs;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < context.num_inputs(); ++i) {
      if (!context.has_input(i)) continue;
      inputs.push_back(&context.input(i));
      shapes.push_back(inputs.back()->shape());
      if (inputs.back()->dtype() != inputs.front()->dtype()) {
        context.fail("input {} is {}, input 0 is {}", i, dtype_name(inputs.back()->dtype()),
                     dtype_name(inputs.front()->dtype()));
      }
      if (!broadcast_ && shapes.back() != shapes.front()) {
        context.fail("input {} has shape {}, input 0 has {} (no broadcasting before opset 8)", i,
                     shape_to_string(shapes.back()), shape_to_string(shapes.front()));
      }
    }
    if (inputs.empty()) context.fail("needs at least one input");
    const DType dtype = inputs.front()->dtype();
    Tensor& out = context.allocate_output(0, dtype, broadcast_shapes(shapes));
    dispatch_numeric(dtype, context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Floats sum in double; integers wrap in their own type.
      using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
      std::vector<Acc> acc(static_cast<size_t>(out.numel()));
      for (size_t k = 0; k < inputs.size(); ++k) {
        const T* p = inputs[k]->data<T>();
        const std::vector<std::vector<int64_t>> strides{
            broadcast_strides(inputs[k]->shape(), out.shape())};
        for_each_broadcast(out.shape(), strides, [&](int64_t i, const int64_t* offsets) {
          const Acc v = static_cast<Acc>(to_compute(p[offsets[0]]));
          acc[i] = k == 0 ? v : combine(acc[i], v);
        });
      }
      T* po = out.mutable_data<T>();
      const auto n = static_cast<Acc>(inputs.size());
      for (size_t i = 0; i < acc.size(); ++i) {
        Acc v = kOp == Variadic::kMean ? static_cast<Acc>(acc[i] / n) : acc[i];
        po[i] = static_cast<T>(static_cast<ComputeType<T>>(v));
      }
    });
  }

 private:
  template <typename Acc>
  static Acc combine(Acc x, Acc y) {
    if constexpr (kOp == Variadic::kSum || kOp == Variadic::kMean) {
      if constexpr (std::is_integral_v<Acc>) {
        return wrap_add(x, y);
      } else {
        return x + y;
      }
    } else {
      if constexpr (std::is_floating_point_v<Acc>) {
        if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<Acc>::quiet_NaN();
      }
      if constexpr (kOp == Variadic::kMin) {
        return y < x ? y : x;
      } else {
        return y > x ? y : x;
      }
    }
  }

  bool broadcast_;
};

// ---- shape vectors: scalars and 1-D vectors broadcast against each other ----

// Every input's shape vector, or nullopt when one is not a shape vector.
std::optional<std::vector<const ShapeVector*>> shape_vector_inputs(
    const ShapeVectorContext& context) {
  std::vector<const ShapeVector*> inputs;
  for (size_t i = 0; i < context.node().inputs().size(); ++i) {
    const ShapeVector* in = context.input(i);
    if (!in) return std::nullopt;
    inputs.push_back(in);
  }
  if (inputs.empty()) return std::nullopt;
  return inputs;
}

// Inputs `first`.. are integer vectors of one dtype.
bool same_int_dtype(const std::vector<const ShapeVector*>& inputs, size_t first) {
  for (size_t k = first; k < inputs.size(); ++k) {
    if (!ShapeVector::is_int(inputs[k]->dtype) || inputs[k]->dtype != inputs[first]->dtype) {
      return false;
    }
  }
  return true;
}

// f(elements at j, j) for each j of the broadcast inputs.
template <typename F>
std::optional<ShapeVector> broadcast_shape_vectors(const std::vector<const ShapeVector*>& inputs,
                                                   DType dtype, F&& f) {
  ShapeVector result;
  result.dtype = dtype;
  result.scalar = true;
  size_t n = 1;
  for (const ShapeVector* in : inputs) {
    result.from_shape |= in->from_shape;
    if (in->scalar) continue;
    result.scalar = false;
    const size_t len = in->elems.size();
    if (len == 1) continue;
    if (n != 1 && n != len) return std::nullopt;
    n = len;
  }
  std::vector<const SymbolicInt*> args(inputs.size());
  for (size_t j = 0; j < n; ++j) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      args[k] = &inputs[k]->elems[inputs[k]->elems.size() == 1 ? 0 : j];
    }
    std::optional<SymbolicInt> e = f(args, j);
    if (!e) return std::nullopt;
    result.elems.push_back(std::move(*e));
  }
  return result;
}

// Add, Sub, Mul, Div ('+', '-', '*', '/') of two integer vectors.
template <char kOp>
std::optional<ShapeVector> arithmetic_shape_vector(const ShapeVectorContext& context) {
  auto inputs = shape_vector_inputs(context);
  if (!inputs || inputs->size() != 2 || !same_int_dtype(*inputs, 0)) return std::nullopt;
  const DType dtype = (*inputs)[0]->dtype;
  return broadcast_shape_vectors(*inputs, dtype,
                                 [&](const std::vector<const SymbolicInt*>& a, size_t) {
                                   return SymbolicInt::arithmetic(kOp, *a[0], *a[1], dtype);
                                 });
}

std::optional<ShapeVector> equal_shape_vector(const ShapeVectorContext& context) {
  auto inputs = shape_vector_inputs(context);
  if (!inputs || inputs->size() != 2 || !same_int_dtype(*inputs, 0)) return std::nullopt;
  const Value* output = context.node().output(0);
  return broadcast_shape_vectors(
      *inputs, DType::kBool, [&](const std::vector<const SymbolicInt*>& a, size_t j) {
        const SymbolicInt &x = *a[0], &y = *a[1];
        if (x.known && y.known) return SymbolicInt::number(*x.known == *y.known);
        if (x.same_as(y)) return SymbolicInt::number(1);
        // A dim (>= 0) never equals a negative number (the -1 of Reshape/Expand targets).
        if ((x.known && *x.known < 0 && y.nonneg) || (y.known && *y.known < 0 && x.nonneg)) {
          return SymbolicInt::number(0);
        }
        return SymbolicInt::opaque(output, j, a, true);
      });
}

std::optional<ShapeVector> where_shape_vector(const ShapeVectorContext& context) {
  auto inputs = shape_vector_inputs(context);
  if (!inputs || inputs->size() != 3 || (*inputs)[0]->dtype != DType::kBool ||
      !same_int_dtype(*inputs, 1)) {
    return std::nullopt;
  }
  const Value* output = context.node().output(0);
  return broadcast_shape_vectors(
      *inputs, (*inputs)[1]->dtype, [&](const std::vector<const SymbolicInt*>& a, size_t j) {
        if (a[0]->known) return *a[0]->known ? *a[1] : *a[2];
        if (a[1]->same_as(*a[2])) return *a[1];
        return SymbolicInt::opaque(output, j, a, a[1]->nonneg && a[2]->nonneg);
      });
}

// Max (kMax) or Min of any number of integer vectors.
template <bool kMax>
std::optional<ShapeVector> extremum_shape_vector(const ShapeVectorContext& context) {
  auto inputs = shape_vector_inputs(context);
  if (!inputs || !same_int_dtype(*inputs, 0)) return std::nullopt;
  const Value* output = context.node().output(0);
  auto element = [&](const std::vector<const SymbolicInt*>& a, size_t j) {
    std::optional<SymbolicInt> acc = *a[0];
    bool nonneg = !kMax;
    for (const SymbolicInt* e : a) nonneg = kMax ? (nonneg || e->nonneg) : (nonneg && e->nonneg);
    for (size_t k = 1; k < a.size() && acc; ++k) acc = SymbolicInt::extremum(kMax, *acc, *a[k]);
    return acc ? *acc : SymbolicInt::opaque(output, j, a, nonneg);
  };
  return broadcast_shape_vectors(*inputs, (*inputs)[0]->dtype, element);
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// Before opset 7 the binary ops broadcast only B to A (with the `broadcast` attribute) or
// took equal shapes: the output has A's shape.
void infer_arithmetic(TypeInferenceContext& context) {
  if (context.opset() < 7) {
    infer_same_as_input(context);
  } else {
    infer_broadcast(context);
  }
}

void infer_logic(TypeInferenceContext& context) {
  if (context.opset() >= 7) {
    infer_broadcast_bool(context);
    return;
  }
  const ValueType* type = context.input_type(0);
  if (type && type->is_tensor()) context.set_output(0, tensor_type(DType::kBool, type->shape));
}

// Where(condition, X, Y): the three broadcast; the values' dtype.
void infer_where(TypeInferenceContext& context) {
  DType dtype = input_dtype(context, 1);
  if (dtype == DType::kUndefined) dtype = input_dtype(context, 2);
  if (dtype == DType::kUndefined) return;
  std::vector<SymbolicShape> shapes;
  for (size_t i = 0; i < 3; ++i) {
    const ValueType* type = context.input_type(i);
    shapes.push_back(type && type->is_tensor() ? type->shape : std::nullopt);
  }
  context.set_output(0, tensor_type(dtype, broadcast_shapes(shapes)));
}

// Min, Max, Sum, Mean broadcast from opset 8; before, every input has one shape.
void infer_variadic(TypeInferenceContext& context) {
  if (context.opset() >= 8) {
    infer_broadcast(context);
    return;
  }
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const ValueType* type = context.input_type(i);
    if (type && type->is_tensor() && type->shape) {
      context.set_output(0, *type);
      return;
    }
  }
  infer_same_as_input(context);
}

}  // namespace

void register_elementwise_binary_ops(OpRegistry& registry) {
  registry.add("Add", {1, 6, 7, 13, 14}, kernel_factory<ArithmeticKernel<Arithmetic::kAdd>>(),
               kCommutativeZeroKeepingBroadcastingOp, arithmetic_shape_vector<'+'>);
  registry.add("Sub", {1, 6, 7, 13, 14}, kernel_factory<ArithmeticKernel<Arithmetic::kSub>>(),
               kZeroKeepingBroadcastingOp, arithmetic_shape_vector<'-'>);
  registry.add("Mul", {1, 6, 7, 13, 14}, kernel_factory<ArithmeticKernel<Arithmetic::kMul>>(),
               kCommutativeZeroKeepingBroadcastingOp, arithmetic_shape_vector<'*'>);
  registry.add("Div", {1, 6, 7, 13, 14}, kernel_factory<ArithmeticKernel<Arithmetic::kDiv>>(),
               kBroadcastingOp, arithmetic_shape_vector<'/'>);
  registry.add("Pow", {1, 7, 12, 13, 15}, kernel_factory<PowKernel>(), kBroadcastingOp);
  // Mod 28 and Equal 19 only widened the types (bfloat16; string).
  registry.add("Mod", {10, 13, 28}, kernel_factory<ModKernel>(), kBroadcastingOp);
  // 28 added the signed types, shifted right arithmetically; the kernel reads them so at
  // every version.
  registry.add("BitShift", {11, 28}, kernel_factory<BitShiftKernel>(), kZeroKeepingBroadcastingOp);
  registry.add("BitwiseAnd", {18},
               OpDefinition(kernel_factory<BitwiseKernel<Bitwise::kAnd>>(),
                            kCommutativeZeroKeepingBroadcastingOp)
                   .with_types(infer_broadcast));
  registry.add("BitwiseOr", {18},
               OpDefinition(kernel_factory<BitwiseKernel<Bitwise::kOr>>(),
                            kCommutativeZeroKeepingBroadcastingOp)
                   .with_types(infer_broadcast));
  registry.add("BitwiseXor", {18},
               OpDefinition(kernel_factory<BitwiseKernel<Bitwise::kXor>>(),
                            kCommutativeZeroKeepingBroadcastingOp)
                   .with_types(infer_broadcast));
  registry.add("And", {1, 7}, kernel_factory<LogicKernel<Logic::kAnd>>(),
               kCommutativeZeroKeepingBroadcastingOp);
  registry.add("Or", {1, 7}, kernel_factory<LogicKernel<Logic::kOr>>(),
               kCommutativeZeroKeepingBroadcastingOp);
  registry.add("Xor", {1, 7}, kernel_factory<LogicKernel<Logic::kXor>>(),
               kCommutativeZeroKeepingBroadcastingOp);
  registry.add("Equal", {1, 7, 11, 13, 19}, kernel_factory<CompareKernel<Compare::kEqual>>(),
               kCommutativeBroadcastingOp, equal_shape_vector);
  registry.add("Less", {1, 7, 9, 13}, kernel_factory<CompareKernel<Compare::kLess>>(),
               kBroadcastingOp);
  registry.add("Greater", {1, 7, 9, 13}, kernel_factory<CompareKernel<Compare::kGreater>>(),
               kBroadcastingOp);
  registry.add("LessOrEqual", {12, 16}, kernel_factory<CompareKernel<Compare::kLessOrEqual>>(),
               kBroadcastingOp);
  registry.add("GreaterOrEqual", {12, 16},
               kernel_factory<CompareKernel<Compare::kGreaterOrEqual>>(), kBroadcastingOp);
  registry.add("Where", {9, 16}, kernel_factory<WhereKernel>(), kBroadcastingOp,
               where_shape_vector);
  registry.add("Min", {1, 6, 8, 12, 13}, kernel_factory<VariadicKernel<Variadic::kMin>>(),
               kCommutativeZeroKeepingBroadcastingOp, extremum_shape_vector<false>);
  registry.add("Max", {1, 6, 8, 12, 13}, kernel_factory<VariadicKernel<Variadic::kMax>>(),
               kCommutativeZeroKeepingBroadcastingOp, extremum_shape_vector<true>);
  registry.add("Sum", {1, 6, 8, 13}, kernel_factory<VariadicKernel<Variadic::kSum>>(),
               kCommutativeZeroKeepingBroadcastingOp);
  registry.add("Mean", {1, 6, 8, 13}, kernel_factory<VariadicKernel<Variadic::kMean>>(),
               kCommutativeZeroKeepingBroadcastingOp);

  // Type inference, every version.
  registry.set_type_rule("", "Add", infer_arithmetic);
  registry.set_type_rule("", "Sub", infer_arithmetic);
  registry.set_type_rule("", "Mul", infer_arithmetic);
  registry.set_type_rule("", "Div", infer_arithmetic);
  registry.set_type_rule("", "Pow", infer_arithmetic);
  registry.set_type_rule("", "Mod", infer_broadcast);
  registry.set_type_rule("", "BitShift", infer_broadcast);
  registry.set_type_rule("", "And", infer_logic);
  registry.set_type_rule("", "Or", infer_logic);
  registry.set_type_rule("", "Xor", infer_logic);
  registry.set_type_rule("", "Equal", infer_logic);
  registry.set_type_rule("", "Less", infer_logic);
  registry.set_type_rule("", "Greater", infer_logic);
  registry.set_type_rule("", "LessOrEqual", infer_broadcast_bool);
  registry.set_type_rule("", "GreaterOrEqual", infer_broadcast_bool);
  registry.set_type_rule("", "Where", infer_where);
  registry.set_type_rule("", "Min", infer_variadic);
  registry.set_type_rule("", "Max", infer_variadic);
  registry.set_type_rule("", "Sum", infer_variadic);
  registry.set_type_rule("", "Mean", infer_variadic);
}

}  // namespace onnxkit
