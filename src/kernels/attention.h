// The parts of com.onnxkit Attention (attention.cc) that tests reach directly: the row
// softmax in every instruction-set variant this CPU supports, and the AVX-512 head kernel
// (attention_avx512.cc).
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

// One (batch, head) of Attention for the AVX-512 kernel: row-major matrices Q [Sq, D],
// K [Sk, D], V [Sk, Dv] and Y [Sq, Dv], each with its own row stride (in elements) and
// contiguous rows.
struct AttentionHead {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const float* k = nullptr;
  int64_t k_stride = 0;
  const float* v = nullptr;
  int64_t v_stride = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  int64_t d = 0, dv = 0, sk = 0;
  float scale = 1;
  // The next head this thread computes (same shapes and strides), or nullptr: its Q, K and V
  // rows are prefetched into L2 over this head's tiles.
  const float* next_q = nullptr;
  const float* next_k = nullptr;
  const float* next_v = nullptr;
  int64_t next_q_rows = 0;
};

// The mask and keep terms of query row `index`.
struct AttentionRowTerms {
  SoftmaxRowTerms (*row)(const void* context, int64_t index) = nullptr;
  const void* context = nullptr;
};

// Query rows per register tile, and the row length of packed K^T and of a tile's scores.
inline constexpr int64_t kAttentionTileRows = 6;
inline int64_t attention_padded_keys(int64_t sk) {
  return (sk + 15) / 16 * 16;
}

// The AVX-512 functions need SimdLevel::kAvx512 (F, BW, DQ, VL). This one is the "avx512"
// softmax_row_variants() entry.
void softmax_row_avx512(float* row, int64_t n, const SoftmaxRowTerms& terms);
// Y rows [row0, row0 + rows) from kt, K^T packed as D rows of attention_padded_keys(Sk)
// floats, zero-padded; scores: a buffer of kAttentionTileRows x attention_padded_keys(Sk).
void attention_rows_avx512(const AttentionHead& head, const float* kt, int64_t row0, int64_t rows,
                           float* scores, AttentionRowTerms terms);

}  // namespace onnxkit
