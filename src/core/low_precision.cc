#include "core/low_precision.h"

#include <cstring>

namespace onnxkit {

size_t serialized_size(DType type, int64_t n) {
  return (static_cast<size_t>(n) * dtype_bits(type) + 7) / 8;
}

void pack_elements(DType type, const uint8_t* elements, int64_t n, uint8_t* packed) {
  const size_t bits = dtype_bits(type);
  const uint32_t mask = (1u << bits) - 1;
  std::memset(packed, 0, serialized_size(type, n));
  size_t bit = 0;
  for (int64_t i = 0; i < n; ++i, bit += bits) {
    const uint32_t value = (elements[i] & mask) << (bit % 8);
    packed[bit / 8] |= static_cast<uint8_t>(value);
    if (value > 0xffu) packed[bit / 8 + 1] |= static_cast<uint8_t>(value >> 8);
  }
}

void unpack_elements(DType type, const uint8_t* packed, int64_t n, uint8_t* elements) {
  const size_t bits = dtype_bits(type);
  const uint32_t mask = (1u << bits) - 1;
  const size_t total = serialized_size(type, n);
  const bool sign_extend = small_int_min(type) < 0 && dtype_is_small_integer(type);
  size_t bit = 0;
  for (int64_t i = 0; i < n; ++i, bit += bits) {
    const size_t byte = bit / 8;
    uint32_t word = packed[byte];
    if (byte + 1 < total) word |= static_cast<uint32_t>(packed[byte + 1]) << 8;
    const uint32_t value = (word >> (bit % 8)) & mask;
    elements[i] = sign_extend ? wrap_to_small_int(type, value) : static_cast<uint8_t>(value);
  }
}

}  // namespace onnxkit
