// The low-precision types (dtype.h: float8, float4, float6, e8m0, int4/uint4, int2/uint2):
// scalar conversions that kernels share, and the packing of the sub-byte types.
//
// In memory every element is one byte: a small float's code, a small integer's value
// (sign-extended for int4/int2). Conversions follow ONNX (Cast's table) and the ml_dtypes
// package ONNX's reference computes with: round to nearest even; with `saturate`, values
// beyond the largest finite one (infinities included) become it; without, they become
// infinity where the format has one (e5m2) and NaN elsewhere. Formats with neither
// (float4, float6) always saturate, and NaN becomes a zero there as ml_dtypes does.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "onnxkit/dtype.h"

namespace onnxkit {

// How a small float format spends its codes.
enum class SmallFloatSpecials {
  kIeee,          // infinity = all-ones exponent and zero mantissa, NaN = the rest (e5m2)
  kFiniteNan,     // no infinity; NaN = all ones (e4m3fn)
  kUnsignedZero,  // no infinity, no -0; NaN = the sign bit alone (the fnuz formats)
  kFinite,        // neither (float4e2m1, float6)
};

struct SmallFloatFormat {
  int exponent_bits = 0;
  int mantissa_bits = 0;
  int bias = 0;
  SmallFloatSpecials specials = SmallFloatSpecials::kIeee;
};

// The format of a signed small float type (not e8m0, which has neither sign nor mantissa).
constexpr SmallFloatFormat small_float_format(DType type) {
  switch (type) {
    case DType::kFloat8E4M3FN:
      return {4, 3, 7, SmallFloatSpecials::kFiniteNan};
    case DType::kFloat8E4M3FNUZ:
      return {4, 3, 8, SmallFloatSpecials::kUnsignedZero};
    case DType::kFloat8E5M2:
      return {5, 2, 15, SmallFloatSpecials::kIeee};
    case DType::kFloat8E5M2FNUZ:
      return {5, 2, 16, SmallFloatSpecials::kUnsignedZero};
    case DType::kFloat4E2M1:
      return {2, 1, 1, SmallFloatSpecials::kFinite};
    case DType::kFloat6E2M3:
      return {2, 3, 1, SmallFloatSpecials::kFinite};
    case DType::kFloat6E3M2:
      return {3, 2, 3, SmallFloatSpecials::kFinite};
    default:
      return {};
  }
}

// Cast to float8e8m0 (a power of two 2^(code - 127); 0xff is NaN) from a float32's exponent:
// "up" (the default, as CUDA does) takes the next power of two for a value that is none,
// "down" truncates, "nearest" rounds on the first dropped mantissa bit.
enum class E8M0Rounding { kUp, kDown, kNearest };

// "up", "down", "nearest"; false for any other text.
inline bool parse_e8m0_rounding(std::string_view text, E8M0Rounding& rounding) {
  if (text == "up") {
    rounding = E8M0Rounding::kUp;
  } else if (text == "down") {
    rounding = E8M0Rounding::kDown;
  } else if (text == "nearest") {
    rounding = E8M0Rounding::kNearest;
  } else {
    return false;
  }
  return true;
}

namespace low_precision_detail {

constexpr uint8_t max_finite_code(const SmallFloatFormat& f) {
  const int all_exponent = (1 << f.exponent_bits) - 1;
  const int all_mantissa = (1 << f.mantissa_bits) - 1;
  switch (f.specials) {
    case SmallFloatSpecials::kIeee:
      return static_cast<uint8_t>(((all_exponent - 1) << f.mantissa_bits) | all_mantissa);
    case SmallFloatSpecials::kFiniteNan:
      return static_cast<uint8_t>((all_exponent << f.mantissa_bits) | (all_mantissa - 1));
    default:
      return static_cast<uint8_t>((all_exponent << f.mantissa_bits) | all_mantissa);
  }
}

}  // namespace low_precision_detail

// The value of a small float code (every one is exact in float).
inline float small_float_to_float(DType type, uint8_t code) {
  if (type == DType::kFloat8E8M0) {
    if (code == 0xff) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(code) - 127);
  }
  const SmallFloatFormat f = small_float_format(type);
  const int width = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = (code >> (width - 1)) & 1;
  const int exponent = (code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const int all_exponent = (1 << f.exponent_bits) - 1;
  const int all_mantissa = (1 << f.mantissa_bits) - 1;
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  switch (f.specials) {
    case SmallFloatSpecials::kIeee:
      if (exponent == all_exponent) {
        if (mantissa != 0) return negative ? -kNaN : kNaN;
        return negative ? -std::numeric_limits<float>::infinity()
                        : std::numeric_limits<float>::infinity();
      }
      break;
    case SmallFloatSpecials::kFiniteNan:
      if (exponent == all_exponent && mantissa == all_mantissa) return negative ? -kNaN : kNaN;
      break;
    case SmallFloatSpecials::kUnsignedZero:
      if (negative && exponent == 0 && mantissa == 0) return -kNaN;
      break;
    case SmallFloatSpecials::kFinite:
      break;
  }
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa + (1 << f.mantissa_bits)),
                           exponent - f.bias - f.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

// float32 -> float8e8m0, as ONNX's reference (numpy_helper.to_float8e8m0) does: the sign is
// ignored, NaN and infinity give 0xff, zero and subnormals have exponent code 0; with
// `saturate` the rounding never goes past 2^127 (code 0xfe), without it gives 0xff there.
inline uint8_t float_to_e8m0(float value, bool saturate, E8M0Rounding rounding) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t exponent = (bits >> 23) & 0xffu;
  if (exponent == 0xffu) return 0xff;
  bool round_up = false;
  if (rounding == E8M0Rounding::kUp) {
    round_up = (bits & 0x7fffffu) != 0;
  } else if (rounding == E8M0Rounding::kNearest) {
    const bool guard = bits & 0x400000u;
    const bool round = bits & 0x200000u;
    const bool sticky = (bits & 0x1fffffu) != 0;
    round_up = guard && (round || sticky || exponent > 0);
  }
  if (round_up && saturate && exponent == 0xfeu) round_up = false;
  if (round_up) ++exponent;
  return static_cast<uint8_t>(exponent);
}

// A number -> a signed small float code (not e8m0; see float_to_e8m0), rounding once to
// nearest even from `value` (exact from float, float16, bfloat16 and double alike).
inline uint8_t double_to_small_float(DType type, double value, bool saturate) {
  const SmallFloatFormat f = small_float_format(type);
  const int width = 1 + f.exponent_bits + f.mantissa_bits;
  const uint8_t sign = static_cast<uint8_t>(std::signbit(value) ? 1u << (width - 1) : 0u);
  const uint8_t max_code = low_precision_detail::max_finite_code(f);
  const int all_exponent = (1 << f.exponent_bits) - 1;
  const uint8_t ieee_inf = static_cast<uint8_t>(all_exponent << f.mantissa_bits);
  // What a value beyond the largest finite one becomes.
  auto overflow = [&]() -> uint8_t {
    if (saturate) return sign | max_code;
    switch (f.specials) {
      case SmallFloatSpecials::kIeee:
        return sign | ieee_inf;
      case SmallFloatSpecials::kFiniteNan:
        return sign | static_cast<uint8_t>((1 << (width - 1)) - 1);
      case SmallFloatSpecials::kUnsignedZero:
        return static_cast<uint8_t>(1u << (width - 1));
      case SmallFloatSpecials::kFinite:
        return sign | max_code;
    }
    return sign | max_code;
  };
  if (std::isnan(value)) {
    switch (f.specials) {
      case SmallFloatSpecials::kIeee:
        return sign | ieee_inf | static_cast<uint8_t>(1u << (f.mantissa_bits - 1));
      case SmallFloatSpecials::kFiniteNan:
        return sign | static_cast<uint8_t>((1 << (width - 1)) - 1);
      case SmallFloatSpecials::kUnsignedZero:
        return static_cast<uint8_t>(1u << (width - 1));
      case SmallFloatSpecials::kFinite:  // no NaN: ml_dtypes gives a zero of the other sign
        return sign ? 0 : static_cast<uint8_t>(1u << (width - 1));
    }
  }
  if (std::isinf(value)) return overflow();
  const double magnitude = std::fabs(value);
  const int min_exponent = 1 - f.bias;   // of the normal numbers
  int exponent = std::ilogb(magnitude);  // meaningless for 0, which rounds to 0 below
  if (magnitude == 0 || exponent < min_exponent) exponent = min_exponent;
  // Steps of the target's last mantissa bit at this exponent; the quotient is exact.
  const double steps = std::nearbyint(std::ldexp(magnitude, f.mantissa_bits - exponent));
  const double rounded = std::ldexp(steps, exponent - f.mantissa_bits);
  const float max_value = small_float_to_float(type, max_code);
  if (rounded > static_cast<double>(max_value)) return overflow();
  if (rounded == 0) return f.specials == SmallFloatSpecials::kUnsignedZero ? 0 : sign;
  int code_exponent;
  int mantissa;
  if (std::ilogb(rounded) < min_exponent) {  // subnormal
    code_exponent = 0;
    mantissa = static_cast<int>(steps);
  } else {
    const int e = std::ilogb(rounded);
    code_exponent = e + f.bias;
    mantissa = static_cast<int>(std::ldexp(rounded, f.mantissa_bits - e)) - (1 << f.mantissa_bits);
  }
  return sign | static_cast<uint8_t>((code_exponent << f.mantissa_bits) | mantissa);
}

// Any small float code from a number; e8m0 goes through float32 as its definition does.
inline uint8_t to_small_float(DType type, double value, bool saturate,
                              E8M0Rounding rounding = E8M0Rounding::kUp) {
  if (type == DType::kFloat8E8M0) {
    return float_to_e8m0(static_cast<float>(value), saturate, rounding);
  }
  return double_to_small_float(type, value, saturate);
}

// Range of a small integer type.
constexpr int64_t small_int_min(DType type) {
  return type == DType::kInt4 ? -8 : type == DType::kInt2 ? -2 : 0;
}
constexpr int64_t small_int_max(DType type) {
  switch (type) {
    case DType::kInt4:
      return 7;
    case DType::kUInt4:
      return 15;
    case DType::kInt2:
      return 1;
    default:
      return 3;
  }
}

// The storage byte of a small integer value (sign-extended for the signed types).
inline uint8_t small_int_byte(int64_t value) {
  return static_cast<uint8_t>(static_cast<int8_t>(value));
}

// An integer wrapped into a small integer type (its low bits, as any narrowing does).
inline uint8_t wrap_to_small_int(DType type, int64_t value) {
  const int bits = static_cast<int>(dtype_bits(type));
  const uint64_t low = static_cast<uint64_t>(value) & ((uint64_t{1} << bits) - 1);
  if (small_int_min(type) < 0 && (low >> (bits - 1))) {
    return small_int_byte(static_cast<int64_t>(low) - (int64_t{1} << bits));
  }
  return static_cast<uint8_t>(low);
}

// A float truncated into a small integer type; NaN and values out of its range give 0, as
// ml_dtypes does (ONNX leaves them undefined).
inline uint8_t float_to_small_int(DType type, double value) {
  if (!(value > static_cast<double>(small_int_min(type)) - 1 &&
        value < static_cast<double>(small_int_max(type)) + 1)) {
    return 0;
  }
  return small_int_byte(static_cast<int64_t>(value));
}

// The value held in a small integer's storage byte.
inline int64_t small_int_value(DType type, uint8_t byte) {
  return small_int_min(type) < 0 ? static_cast<int8_t>(byte) : byte;
}

// Bytes that n elements of `type` take in ONNX's serialized form (packed for the sub-byte
// types: ceil(n * bits / 8)).
size_t serialized_size(DType type, int64_t n);
// Packs n one-byte elements of a sub-byte type into ONNX's bit stream: element i takes bits
// [i * bits, (i + 1) * bits), low bits first; the last byte's unused bits are zero.
void pack_elements(DType type, const uint8_t* elements, int64_t n, uint8_t* packed);
// The inverse: n elements from the bit stream, sign-extended for int4 and int2.
void unpack_elements(DType type, const uint8_t* packed, int64_t n, uint8_t* elements);

}  // namespace onnxkit
