// The row softmax behind com.onnxkit Attention (attention.cc), exposed so tests can run
// every instruction-set variant this CPU supports, not only the one the kernel picks.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace onnxkit {

// What a row of scaled scores gets before its softmax: Mask (additive) and Keep (where),
// each a pointer to this row's first element and the distance between elements (0 when
// broadcast along the row).
struct SoftmaxRowTerms {
  const float* mask = nullptr;
  int64_t mask_stride = 0;
  const uint8_t* keep = nullptr;  // bool tensors hold one byte per element
  int64_t keep_stride = 0;
  float masked_value = 0;
};

// row = softmax(where(keep, row + mask, masked_value)) in place; a row whose maximum is
// infinite (all masked to -inf) becomes NaN, as the unfused graph's Softmax gives.
using SoftmaxRowFn = void (*)(float* row, int64_t n, const SoftmaxRowTerms& terms);

// The variants this CPU runs, by name ("scalar", "avx2", "avx512"); the kernel uses the last.
std::vector<std::pair<const char*, SoftmaxRowFn>> softmax_row_variants();

}  // namespace onnxkit
