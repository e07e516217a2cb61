// Op family: Cast and CastLike between every numeric type, bool and string.
//
// Numbers convert as C++ (and numpy) do, made well defined: floats truncate toward zero
// into integers (NaN and out-of-range values follow x86's "integer indefinite" value and
// wrap), integers wrap into narrower integers, and the 16-bit floats round to nearest
// even from any source without double rounding. Numbers print as numpy's str() does
// (shortest round-trip digits, positional between 1e-4 and 1e16); strings parse the
// plain and scientific forms and "INF"/"+INF"/"-INF"/"NaN" in any case.
//
// The low-precision types (core/low_precision.h) convert through double: floats and
// integers into the small floats round once to nearest even (with Cast-19's `saturate` for
// float8, Cast-24's `round_mode` for e8m0), floats into int4/int2 truncate (0 when out of
// range, as ml_dtypes), integers into them wrap; out of them, every value is exact.
#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "core/low_precision.h"
#include "ops/float_to_integer.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/shape_vector.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

template <typename T>
constexpr bool kIsFloat = kIsHalf<T> || std::is_floating_point_v<T>;

// ---- number -> number ----

// A double rounded to float "to odd": truncated, with the lowest bit set when inexact.
// Rounding that float to a 16-bit float then gives the correctly rounded result, as if
// rounded once from the double (float keeps more than two extra bits).
float round_to_odd_float(double value) {
  float f = static_cast<float>(value);
  if (!std::isfinite(value) || static_cast<double>(f) == value) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) {
    f = std::nextafter(f, 0.0f);
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

template <typename To, typename From>
To cast_number(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (kIsHalf<From>) {
      return static_cast<float>(value) != 0.0f;
    } else {
      return value != From(0);
    }
  } else if constexpr (std::is_same_v<From, bool>) {
    if constexpr (kIsHalf<To>) {
      return To(value ? 1.0f : 0.0f);
    } else {
      return static_cast<To>(value ? 1 : 0);
    }
  } else if constexpr (kIsHalf<To>) {
    if constexpr (kIsHalf<From> || std::is_same_v<From, float>) {
      return To(static_cast<float>(value));  // exact to float, then one rounding
    } else {
      // Integers go through double (exact up to 2^53, beyond any 16-bit float's need).
      return To(round_to_odd_float(static_cast<double>(value)));
    }
  } else if constexpr (kIsHalf<From>) {
    return cast_number<To>(static_cast<float>(value));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_integer<To>(static_cast<double>(value));
  } else {
    return static_cast<To>(value);  // int -> int wraps (C++20), int/float -> float rounds
  }
}

// ---- number -> string ----

// The shortest decimal digits that read back as `value`; value = 0.d1d2... * 10^(exp+1),
// i.e. d1.d2... * 10^exp.
struct Decimal {
  std::string digits;
  int exponent = 0;
};

Decimal parse_scientific(const char* begin, const char* end) {
  Decimal decimal;
  const char* e = std::find(begin, end, 'e');
  for (const char* p = begin; p < e; ++p) {
    if (std::isdigit(static_cast<unsigned char>(*p))) decimal.digits += *p;
  }
  if (e < end) {
    const char* p = e + 1;
    if (*p == '+') ++p;
    std::from_chars(p, end, decimal.exponent);
  }
  // Drop trailing zeros ("1.50e+00" -> "15").
  while (decimal.digits.size() > 1 && decimal.digits.back() == '0') decimal.digits.pop_back();
  return decimal;
}

template <typename T>
Decimal shortest_decimal(T value) {
  char buffer[64];
  if constexpr (std::is_floating_point_v<T>) {
    auto result =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    return parse_scientific(buffer, result.ptr);
  } else {
    // 16-bit floats: the fewest significant digits that round back to the same bits.
    const float f = static_cast<float>(value);
    int length = 0;
    for (int precision = 0; precision < 9; ++precision) {
      length = std::snprintf(buffer, sizeof buffer, "%.*e", precision, static_cast<double>(f));
      if (T(std::strtof(buffer, nullptr)).bits == value.bits) break;
    }
    return parse_scientific(buffer, buffer + length);
  }
}

// numpy's str() of a float: "nan", "inf", "0.001", "100.0", "1e-05", "1.5e+16".
template <typename T>
std::string format_float(T value) {
  double v;
  T magnitude;
  if constexpr (kIsHalf<T>) {
    v = static_cast<float>(value);
    magnitude = T::from_bits(static_cast<uint16_t>(value.bits & 0x7fffu));
  } else {
    v = static_cast<double>(value);
    magnitude = std::fabs(value);
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::string text = std::signbit(v) ? "-" : "";
  if (v == 0) return text + "0.0";
  Decimal d = shortest_decimal(magnitude);
  const auto n = static_cast<int>(d.digits.size());
  const double abs = std::fabs(v);
  if (abs >= 1e16 || abs < 1e-4) {
    text += d.digits[0];
    if (n > 1) {
      text += '.';
      text += d.digits.substr(1);
    }
    char exponent[16];
    std::snprintf(exponent, sizeof exponent, "e%c%02d", d.exponent < 0 ? '-' : '+',
                  std::abs(d.exponent));
    return text + exponent;
  }
  if (d.exponent >= 0) {
    const auto integer_digits = static_cast<size_t>(d.exponent + 1);
    if (d.digits.size() <= integer_digits) {
      text += d.digits;
      text.append(integer_digits - d.digits.size(), '0');
      text += ".0";
    } else {
      text.append(d.digits, 0, integer_digits);
      text += '.';
      text.append(d.digits, integer_digits);
    }
    return text;
  }
  text += "0.";
  text.append(static_cast<size_t>(-d.exponent - 1), '0');
  text += d.digits;
  return text;
}

template <typename T>
std::string number_to_string(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "True" : "False";  // as numpy
  } else if constexpr (kIsFloat<T>) {
    return format_float(value);
  } else {
    char buffer[32];
    auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
  }
}

// ---- string -> number ----

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// A floating-point literal; F is float or double (parsing straight to the target type
// rounds once). nullopt when the text is not a number.
template <typename F>
std::optional<F> parse_float(std::string_view text) {
  text = trimmed(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '+' || text.front() == '-')) return std::nullopt;
  }
  // from_chars would also accept "infinity" and "nan(...)"; ONNX names these three.
  F value;
  if (equals_ignoring_case(text, "inf")) {
    value = std::numeric_limits<F>::infinity();
  } else if (equals_ignoring_case(text, "nan")) {
    value = std::numeric_limits<F>::quiet_NaN();
  } else {
    auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec == std::errc::result_out_of_range) {
      // Overflow reads as infinity, underflow as zero, as strtod does.
      value = static_cast<F>(std::strtod(std::string(text).c_str(), nullptr));
    } else if (result.ec != std::errc() || result.ptr != text.data() + text.size() ||
               text.empty()) {
      return std::nullopt;
    }
  }
  return negative ? -value : value;
}

template <typename To>
To parse_number(const KernelContext& context, const std::string& text, DType to) {
  if constexpr (std::is_same_v<To, bool>) {
    std::string_view t = trimmed(text);
    if (equals_ignoring_case(t, "true")) return true;
    if (equals_ignoring_case(t, "false")) return false;
    if (auto value = parse_float<double>(t)) return *value != 0;
  } else if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
    if (auto value = parse_float<To>(text)) return *value;
  } else if constexpr (kIsHalf<To>) {
    if (auto value = parse_float<double>(text)) return cast_number<To>(*value);
  } else {
    // Integers: exact when the text is an integer literal, else through double
    // ("100.5" -> 100).
    std::string_view t = trimmed(text);
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    To value{};
    auto result = std::from_chars(t.data(), t.data() + t.size(), value);
    if (result.ec == std::errc() && result.ptr == t.data() + t.size()) return value;
    if (auto parsed = parse_float<double>(text)) return cast_number<To>(*parsed);
  }
  context.fail("cannot parse \"{}\" as {}", text, dtype_name(to));
}

// ---- the low-precision types ----

// Cast-19's saturate and Cast-24's round_mode.
struct CastOptions {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::kUp;
};

bool is_small(DType type) {
  return dtype_is_small_float(type) || dtype_is_small_integer(type);
}

void cast_tensor(const KernelContext& context, const Tensor& input, Tensor& output,
                 const CastOptions& options);

// Calls f(read) where read(i) is element i of a non-string tensor: as int64 for integers
// and bools (exact beyond 2^53; uint64 reinterpreted), as double for the rest. Read in
// place: casts of large weights make no intermediate copy.
template <typename F>
void with_reader(const Tensor& input, F&& f) {
  const DType from = input.dtype();
  if (dtype_is_small_integer(from) || dtype_is_small_float(from)) {
    const uint8_t* in = input.data<uint8_t>();
    if (dtype_is_small_integer(from)) {
      f([in, from](size_t i) { return small_int_value(from, in[i]); });
    } else {
      f([in, from](size_t i) { return static_cast<double>(small_float_to_float(from, in[i])); });
    }
    return;
  }
  dispatch_numeric_bool(from, "Cast", [&](auto tag) {
    using From = typename decltype(tag)::type;
    const From* in = input.data<From>();
    if constexpr (std::is_integral_v<From>) {
      f([in](size_t i) { return static_cast<int64_t>(in[i]); });
    } else {
      f([in](size_t i) { return cast_number<double>(in[i]); });
    }
  });
}

// Casts where either side is a low-precision type.
void cast_small(const KernelContext& context, const Tensor& input, Tensor& output,
                const CastOptions& options) {
  const DType from = input.dtype();
  const DType to = output.dtype();
  const auto n = static_cast<size_t>(input.numel());
  if (from == DType::kString || to == DType::kString) {  // through double (or float)
    const DType between = from == DType::kString ? DType::kDouble : DType::kFloat;
    Tensor numbers(between, input.shape());
    cast_tensor(context, input, numbers, options);
    cast_tensor(context, numbers, output, options);
    return;
  }
  with_reader(input, [&](auto read) {
    using Value = decltype(read(size_t{0}));
    if (!is_small(to)) {  // every small value is exact in float and in int64
      dispatch_numeric_bool(to, "Cast", [&](auto tag) {
        using To = typename decltype(tag)::type;
        To* out = output.mutable_data<To>();
        if constexpr (std::is_same_v<Value, double>) {
          for (size_t i = 0; i < n; ++i) out[i] = cast_number<To>(static_cast<float>(read(i)));
        } else {
          for (size_t i = 0; i < n; ++i) out[i] = cast_number<To>(read(i));
        }
      });
      return;
    }
    uint8_t* out = output.mutable_data<uint8_t>();
    if (dtype_is_small_float(to)) {
      auto number = [&](size_t i) {
        if constexpr (std::is_same_v<Value, int64_t>) {
          if (from == DType::kUInt64) return static_cast<double>(static_cast<uint64_t>(read(i)));
        }
        return static_cast<double>(read(i));
      };
      for (size_t i = 0; i < n; ++i) {
        out[i] = to_small_float(to, number(i), options.saturate, options.rounding);
      }
    } else if constexpr (std::is_same_v<Value, double>) {
      for (size_t i = 0; i < n; ++i) out[i] = float_to_small_int(to, read(i));  // truncates
    } else {
      for (size_t i = 0; i < n; ++i) out[i] = wrap_to_small_int(to, read(i));  // wraps
    }
  });
}

// ---- the kernels ----

void cast_tensor(const KernelContext& context, const Tensor& input, Tensor& output,
                 const CastOptions& options) {
  const DType from = input.dtype();
  const DType to = output.dtype();
  const auto n = static_cast<size_t>(input.numel());
  if (is_small(from) || is_small(to)) {
    cast_small(context, input, output, options);
    return;
  }
  if (from == DType::kString) {
    const std::vector<std::string>& in = input.strings();
    dispatch_numeric_bool(to, "Cast", [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      To* out = output.mutable_data<To>();
      for (size_t i = 0; i < n; ++i) out[i] = parse_number<To>(context, in[i], to);
    });
    return;
  }
  if (to == DType::kString) {
    std::vector<std::string>& out = output.mutable_strings();
    dispatch_numeric_bool(from, "Cast", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      const From* in = input.data<From>();
      for (size_t i = 0; i < n; ++i) out[i] = number_to_string(in[i]);
    });
    return;
  }
  dispatch_numeric_bool(from, "Cast", [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    const From* in = input.data<From>();
    dispatch_numeric_bool(to, "Cast", [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      To* out = output.mutable_data<To>();
      for (size_t i = 0; i < n; ++i) out[i] = cast_number<To>(in[i]);
    });
  });
}

void run_cast(KernelContext& context, DType to, const CastOptions& options) {
  const Tensor& input = context.input(0);
  if (input.dtype() == to) {
    context.set_output(0, input);  // shares the bytes
    return;
  }
  if (input.dtype() == DType::kComplex64 || input.dtype() == DType::kComplex128 ||
      to == DType::kComplex64 || to == DType::kComplex128) {
    context.fail("cannot cast {} to {}", dtype_name(input.dtype()), dtype_name(to));
  }
  Tensor& output = context.allocate_output(0, to, input.shape());
  cast_tensor(context, input, output, options);
}

// The attributes Cast and CastLike share from version 19 on.
CastOptions cast_options(const KernelCreateContext& context) {
  CastOptions options;
  if (context.opset() >= 19) options.saturate = context.attr_int("saturate", 1) != 0;
  if (context.opset() >= 24) {
    const std::string mode = context.attr_string("round_mode", "up");
    if (!parse_e8m0_rounding(mode, options.rounding)) {
      context.fail("round_mode is \"{}\" (needs \"up\", \"down\" or \"nearest\")", mode);
    }
  }
  return options;
}

bool castable(DType type) {
  return type != DType::kUndefined && type != DType::kComplex64 && type != DType::kComplex128;
}

class CastKernel : public OpKernel {
 public:
  explicit CastKernel(const KernelCreateContext& context) : options_(cast_options(context)) {
    const Attribute* attribute = context.node().find_attribute("to");
    if (!attribute) context.fail("attribute 'to' is required");
    if (attribute->type == AttrType::kString) {
      // Cast-1 named the type ("FLOAT", "INT64", ...).
      for (int32_t code = 1; dtype_is_known(code); ++code) {
        if (dtype_is_known(code) &&
            equals_ignoring_case(dtype_name(static_cast<DType>(code)), attribute->s)) {
          to_ = static_cast<DType>(code);
        }
      }
      if (to_ == DType::kUndefined) context.fail("'to' names an unknown type \"{}\"", attribute->s);
    } else {
      const int64_t code = context.attr_int("to");
      if (code < 0 || code > INT32_MAX || !dtype_is_known(static_cast<int32_t>(code))) {
        context.fail("'to' is {}, not a known data type", code);
      }
      to_ = static_cast<DType>(code);
    }
    if (!castable(to_)) context.fail("cannot cast to {}", dtype_name(to_));
  }
  void compute(KernelContext& context) const override { run_cast(context, to_, options_); }

 private:
  DType to_ = DType::kUndefined;
  CastOptions options_;
};

// Integer (or bool) vectors cast to int64 or int32.
std::optional<ShapeVector> cast_shape_vector(const ShapeVectorContext& context) {
  const ShapeVector* data = context.input(0);
  const auto to = static_cast<DType>(context.attr_int("to", 0));
  if (!data || !ShapeVector::is_int(to)) return std::nullopt;
  if (!ShapeVector::is_int(data->dtype) && data->dtype != DType::kBool) return std::nullopt;
  ShapeVector out = *data;
  out.dtype = to;
  for (SymbolicInt& e : out.elems) {
    // Symbolic elements keep their text: dims (and 0/1 bools) fit in int32.
    if (e.known && to == DType::kInt32) e = SymbolicInt::number(static_cast<int32_t>(*e.known));
    if (data->dtype == DType::kBool) e.nonneg = true;
  }
  return out;
}

// CastLike: the target type is that of input 1.
class CastLikeKernel : public OpKernel {
 public:
  explicit CastLikeKernel(const KernelCreateContext& context) : options_(cast_options(context)) {}
  void compute(KernelContext& context) const override {
    run_cast(context, context.input(1).dtype(), options_);
  }

 private:
  CastOptions options_;
};

// Output 0: input 0's shape, of the type `to` names (Cast-1 spells it as a string).
void infer_cast(TypeInferenceContext& context) {
  const Attribute* to = context.node().find_attribute("to");
  DType dtype = DType::kUndefined;
  // An unknown type is refused here, as the kernel refuses it: libonnx's Cast inference
  // dereferences a null type for it (fuzz run).
  if (to && to->type == AttrType::kString) {
    for (int32_t code = 1; dtype_is_known(code); ++code) {
      if (equals_ignoring_case(dtype_name(static_cast<DType>(code)), to->s)) {
        dtype = static_cast<DType>(code);
      }
    }
    if (dtype == DType::kUndefined) fail("'to' names an unknown type \"{}\"", to->s);
  } else if (to && to->type == AttrType::kInt) {
    if (to->i < 0 || to->i > INT32_MAX || !dtype_is_known(static_cast<int32_t>(to->i))) {
      fail("'to' is {}, not a known data type", to->i);
    }
    dtype = static_cast<DType>(to->i);
  }
  const ValueType* input = context.input_type(0);
  if (dtype == DType::kUndefined || !input) return;
  context.set_output(0, tensor_type(dtype, input->shape));
}

// Output 0: input 0's shape, input 1's dtype.
void infer_cast_like(TypeInferenceContext& context) {
  const ValueType* input = context.input_type(0);
  const DType dtype = input_dtype(context, 1);
  if (!input || dtype == DType::kUndefined) return;
  context.set_output(0, tensor_type(dtype, input->shape));
}

// BitCast-26: the same bytes read as another type of the same bit width (the sub-byte
// types reinterpret their bit patterns).
class BitCastKernel : public OpKernel {
 public:
  explicit BitCastKernel(const KernelCreateContext& context) {
    const int64_t code = context.attr_int("to");
    if (code < 0 || code > INT32_MAX || !dtype_is_known(static_cast<int32_t>(code))) {
      context.fail("'to' is {}, not a known data type", code);
    }
    to_ = static_cast<DType>(code);
    if (to_ == DType::kString) context.fail("cannot bit-cast to string");
  }
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const DType from = input.dtype();
    if (from == DType::kString) context.fail("cannot bit-cast a string tensor");
    if (dtype_bits(from) != dtype_bits(to_)) {
      context.fail("cannot bit-cast {} ({} bits) to {} ({} bits): the widths differ",
                   dtype_name(from), dtype_bits(from), dtype_name(to_), dtype_bits(to_));
    }
    if (from == to_ || !dtype_is_packed(from)) {
      context.set_output(0, Tensor::from_buffer(to_, input.shape(), input.buffer()));
      return;
    }
    // Sub-byte types: the low bits are the pattern; int4/int2 hold it sign-extended.
    const uint8_t mask = static_cast<uint8_t>((1u << dtype_bits(from)) - 1);
    Tensor& output = context.allocate_output(0, to_, input.shape());
    const uint8_t* in = input.data<uint8_t>();
    uint8_t* out = output.mutable_data<uint8_t>();
    for (int64_t i = 0; i < input.numel(); ++i) {
      const uint8_t bits = in[i] & mask;
      out[i] = dtype_is_small_integer(to_) ? wrap_to_small_int(to_, bits) : bits;
    }
  }

 private:
  DType to_ = DType::kUndefined;
};

void infer_bit_cast(TypeInferenceContext& context) {
  const Attribute* to = context.node().find_attribute("to");
  const ValueType* input = context.input_type(0);
  if (!to || to->type != AttrType::kInt || !dtype_is_known(static_cast<int32_t>(to->i)) || !input) {
    return;
  }
  context.set_output(0, tensor_type(static_cast<DType>(to->i), input->shape));
}

}  // namespace

void register_cast_ops(OpRegistry& registry) {
  registry.add("Cast", {1, 6, 9, 13, 19, 21, 23, 24, 25, 28},
               OpDefinition(kernel_factory<CastKernel>(), kElementwiseOp, cast_shape_vector)
                   .with_types(infer_cast));
  registry.add("CastLike", {15, 19, 21, 23, 24, 25},
               OpDefinition(kernel_factory<CastLikeKernel>()).with_types(infer_cast_like));
  registry.add("BitCast", {26},
               OpDefinition(kernel_factory<BitCastKernel>()).with_types(infer_bit_cast));
}

}  // namespace onnxkit
