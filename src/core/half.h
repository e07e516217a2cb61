// IEEE half (float16) and bfloat16 storage types with float conversion.
// Conversion rounds to nearest even, keeps NaN/Inf and handles subnormals.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace onnxkit {

struct Float16 {
  uint16_t bits = 0;

  Float16() = default;
  explicit Float16(float value) : bits(from_float(value)) {}
  static Float16 from_bits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
  operator float() const { return to_float(bits); }  // NOLINT: behaves like a number

  static uint16_t from_float(float value) {
    uint32_t x = std::bit_cast<uint32_t>(value);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> Inf
    if (abs < 0x38800000u) {                                      // subnormal or zero in half
      if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // rounds to zero
      uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
      int shift = 126 - static_cast<int>(abs >> 23);  // 14..24
      uint32_t half = mantissa >> (shift);
      uint32_t rest = mantissa & ((1u << shift) - 1);
      uint32_t halfway = 1u << (shift - 1);
      if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1f) {
      bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent == 0) {
      if (mantissa == 0) {
        bits = sign;
      } else {  // subnormal: value = mantissa * 2^-24
        float value = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
        return sign ? -value : value;
      }
    } else {
      bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
    return std::bit_cast<float>(bits);
  }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float value) : bits(from_float(value)) {}
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  operator float() const { return to_float(bits); }  // NOLINT: behaves like a number

  static uint16_t from_float(float value) {
    uint32_t x = std::bit_cast<uint32_t>(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(rounded >> 16);
  }
  static float to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace onnxkit
