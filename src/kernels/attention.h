// The parts of com.onnxkit Attention (attention.cc) that tests reach directly: the row
// softmax in every instruction-set variant this CPU supports, and the AVX-512 head kernel
// (attention_avx512.cc); and FloatAttention, its float32 computation for the kernels of other
// attention ops (com.microsoft Attention and QAttention, kernels/transformer_microsoft.cc).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ops/attention_layout.h"

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

// One float32 attention computation on operands already in memory, each seen through its
// logical view (ops/attention_layout.h): Q [B, H, Sq, D], K [B, H, Sk, D], V [B, H, Sk, Dv]
// and Y [B, H, Sq, Dv], rows of Q, K, V and Y anywhere their strides say. Per (b, h):
//   S = scale * Q @ K^T + Mask;  S = where(Keep, S, masked_value);  Y = Softmax(S) @ V
// Mask (float) and Keep (one byte per element) are optional, read through four strides
// over [B, H, Sq, Sk] (0 where broadcast).
struct AttentionOperands {
  const float* q = nullptr;
  AttentionView qv;
  const float* k = nullptr;
  AttentionView kv;
  const float* v = nullptr;
  AttentionView vv;
  float* y = nullptr;
  AttentionView yv;
  float scale = 1;
  const float* mask = nullptr;
  std::array<int64_t, 4> mask_strides{};
  const uint8_t* keep = nullptr;
  std::array<int64_t, 4> keep_strides{};
  float masked_value = 0;
};

// The engine of com.onnxkit Attention's optimized kernel: AVX-512 register tiles where the
// CPU has them and rows are contiguous, blocks of oneDNN matmuls otherwise. Its oneDNN plans
// are cached per shape, so a kernel keeps one FloatAttention for its lifetime.
class FloatAttention {
 public:
  FloatAttention();
  ~FloatAttention();
  FloatAttention(const FloatAttention&) = delete;
  FloatAttention& operator=(const FloatAttention&) = delete;

  // Computes Y. The caller has checked that the views agree (B, H, Sq, Sk, D, Dv) and that
  // Sk and D are not 0; errors (oneDNN's) fail naming the context's node.
  void run(KernelContext& context, const AttentionOperands& operands) const;

 private:
  struct Plans;
  std::unique_ptr<Plans> plans_;
  SoftmaxRowFn softmax_row_;
};

}  // namespace onnxkit
