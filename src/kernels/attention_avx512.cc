// The AVX-512 body of com.onnxkit Attention (attention.h): one (batch, head) at a time, query
// rows in register tiles, their scores never leaving L1. This file alone is compiled with
// AVX-512 flags (CMakeLists.txt); attention.cc calls it only at SimdLevel::kAvx512.
//
// Per tile of up to kAttentionTileRows query rows:
//   S[r, :] = scale * Q[r, :] @ K^T   (K^T packed by attention.cc: [D, Sk rounded up to 16])
//   S[r, :] = exp(S[r, :] + mask, keep applied, - its max); sum[r] = the row's sum
//   Y[r, :] = (S[r, :] @ V) / sum[r]
// Both products run 6 x 64 register tiles (24 accumulators, the B row loaded once per step
// and the A element broadcast): enough independent FMA chains for two pipes, loads within
// budget. The softmax goes over the tile's rows together, so their max and sum reductions
// overlap instead of each row waiting on its own (one row at a time it cost a fifth of the
// head), and the division by the sum waits until Y (Dv values a row, not Sk). Q, K, V and
// Y rows may have any stride (a folded Transpose leaves them [B, S, H, D], rows 3 KB apart,
// which the hardware prefetchers do not follow: the next head's rows are prefetched into L2
// a slice per tile); only their last dim must be contiguous.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention.h"
#include "kernels/vector_math.h"

namespace onnxkit {
namespace {

constexpr int kTileCols = 64;  // 4 vectors of 16
constexpr int kMaxRows = static_cast<int>(kAttentionTileRows);

// GCC keeps the accumulator arrays below in registers only when their loops are unrolled
// before it splits the arrays up; otherwise it stores all 24 to the stack every step (2x
// slower). Hence the pragmas.
#define ONNXKIT_UNROLL _Pragma("GCC unroll 8")

// ---------------------------------------------------------------------------------------
// Softmax.

using exp_coefficients::kLn2Hi;
using exp_coefficients::kLn2Lo;
using exp_coefficients::kLog2e;
using exp_coefficients::kMinimax5;

// exp(x) for x <= 0 (a score minus its row's maximum), or NaN: 2^n * p(r), x = n ln2 + r,
// |r| <= ln2/2, p the minimax polynomial of vector_math.h (two FMA-pipe operations fewer
// than Cephes'; the softmax bound is 1e-6). Inputs below -104 give 0 (also -inf); NaN stays
// NaN (MAXPS returns its second operand when one is NaN).
inline __m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kMinimax5[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kMinimax5[i]));
  return _mm512_scalef_ps(p, n);  // 2^n without overflow tricks; n = -150 gives 0
}

inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}

// row[j .. j + 16) where `valid` (-inf elsewhere) with the row's mask added and its keep
// flags applied.
inline __m512 scores_with_terms(const float* row, int64_t j, __mmask16 valid,
                                const SoftmaxRowTerms& terms) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 v = _mm512_mask_loadu_ps(neg_inf, valid, row + j);
  if (terms.mask) {
    const __m512 mask = terms.mask_stride == 1 ? _mm512_maskz_loadu_ps(valid, terms.mask + j)
                                               : _mm512_set1_ps(terms.mask[0]);
    v = _mm512_mask_add_ps(v, valid, v, mask);
  }
  if (terms.keep) {
    __mmask16 kept;
    if (terms.keep_stride == 1) {
      const __m128i flags = _mm_maskz_loadu_epi8(valid, terms.keep + j);
      kept = _mm_test_epi8_mask(flags, flags);
    } else {
      kept = terms.keep[0] ? 0xFFFF : 0;
    }
    v = _mm512_mask_mov_ps(v, valid & static_cast<__mmask16>(~kept),
                           _mm512_set1_ps(terms.masked_value));
  }
  return v;
}

// The R rows at s (row stride `stride`, n scores each) become exp(x - max) in place, x the
// score with its terms; inv[r] = 1 / the row's sum, or NaN where the row's maximum is
// infinite (every entry masked to -inf, or a +inf: the unfused graph's Softmax gives NaN).
// With `normalize` the rows are multiplied by inv too (and NaN rows filled with NaN).
template <int R>
void softmax_tile(float* s, int64_t stride, int64_t n, const SoftmaxRowTerms* terms, float* inv,
                  bool normalize) {
  bool has_terms = false;
  for (int r = 0; r < R; ++r) has_terms |= terms[r].mask || terms[r].keep;
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 max[R];
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) max[r] = neg_inf;
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 valid = first_lanes(n - j);
    ONNXKIT_UNROLL
    for (int r = 0; r < R; ++r) {
      float* row = s + r * stride;
      __m512 v;
      if (has_terms) {
        v = scores_with_terms(row, j, valid, terms[r]);
        _mm512_mask_storeu_ps(row + j, valid, v);
      } else {
        v = _mm512_mask_loadu_ps(neg_inf, valid, row + j);
      }
      max[r] = _mm512_max_ps(max[r], v);
    }
  }
  __m512 row_max[R], sum[R];
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) {
    row_max[r] = _mm512_set1_ps(_mm512_reduce_max_ps(max[r]));
    sum[r] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 valid = first_lanes(n - j);
    ONNXKIT_UNROLL
    for (int r = 0; r < R; ++r) {
      float* row = s + r * stride;
      const __m512 x = _mm512_maskz_loadu_ps(valid, row + j);
      const __m512 e = exp_nonpositive(_mm512_sub_ps(x, row_max[r]));
      _mm512_mask_storeu_ps(row + j, valid, e);
      sum[r] = _mm512_mask_add_ps(sum[r], valid, sum[r], e);
    }
  }
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) {
    const float max_value = _mm512_cvtss_f32(row_max[r]);
    inv[r] = std::isfinite(max_value) ? 1.0f / _mm512_reduce_add_ps(sum[r])
                                      : std::numeric_limits<float>::quiet_NaN();
  }
  if (!normalize) return;
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 valid = first_lanes(n - j);
    ONNXKIT_UNROLL
    for (int r = 0; r < R; ++r) {
      float* row = s + r * stride;
      // NaN * anything is NaN: a degenerate row comes out all NaN.
      _mm512_mask_storeu_ps(
          row + j, valid,
          _mm512_mul_ps(_mm512_maskz_loadu_ps(valid, row + j), _mm512_set1_ps(inv[r])));
    }
  }
}

// ---------------------------------------------------------------------------------------
// The two products.

// s[r, 0 .. 16 * NV) = scale * q[r, :] @ kt[:, 0 .. 16 * NV) for r < R. kt rows are padded to
// 16, so whole vectors are loaded and stored (s rows are padded too).
template <int R, int NV>
void scores_tile(const float* q, int64_t q_stride, const float* kt, int64_t kt_stride, int64_t d,
                 float scale, float* s, int64_t s_stride) {
  __m512 acc[R][NV];
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) {
    ONNXKIT_UNROLL
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < d; ++k) {
    __m512 b[NV];
    ONNXKIT_UNROLL
    for (int j = 0; j < NV; ++j) b[j] = _mm512_loadu_ps(kt + k * kt_stride + 16 * j);
    ONNXKIT_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(q[r * q_stride + k]);
      ONNXKIT_UNROLL
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
  const __m512 vscale = _mm512_set1_ps(scale);
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) {
    ONNXKIT_UNROLL
    for (int j = 0; j < NV; ++j) {
      _mm512_storeu_ps(s + r * s_stride + 16 * j, _mm512_mul_ps(acc[r][j], vscale));
    }
  }
}

// y[r, 0 .. 16 * NV) = inv[r] * p[r, 0 .. sk) @ v[0 .. sk, 0 .. 16 * NV) for r < R; the last
// vector of each V and Y row only where `last` is set (Dv need not be a multiple of 16).
template <int R, int NV>
void context_tile(const float* p, int64_t p_stride, const float* inv, const float* v,
                  int64_t v_stride, int64_t sk, float* y, int64_t y_stride, __mmask16 last) {
  __m512 acc[R][NV];
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) {
    ONNXKIT_UNROLL
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < sk; ++k) {
    const float* v_row = v + k * v_stride;
    __m512 b[NV];
    ONNXKIT_UNROLL
    for (int j = 0; j + 1 < NV; ++j) b[j] = _mm512_loadu_ps(v_row + 16 * j);
    b[NV - 1] = _mm512_maskz_loadu_ps(last, v_row + 16 * (NV - 1));
    ONNXKIT_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(p[r * p_stride + k]);
      ONNXKIT_UNROLL
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
  ONNXKIT_UNROLL
  for (int r = 0; r < R; ++r) {
    const __m512 scale = _mm512_set1_ps(inv[r]);
    float* y_row = y + r * y_stride;
    ONNXKIT_UNROLL
    for (int j = 0; j + 1 < NV; ++j)
      _mm512_storeu_ps(y_row + 16 * j, _mm512_mul_ps(acc[r][j], scale));
    _mm512_mask_storeu_ps(y_row + 16 * (NV - 1), last, _mm512_mul_ps(acc[r][NV - 1], scale));
  }
}

// ---------------------------------------------------------------------------------------
// Dispatch on the tile's rows (1..6) and vectors (1..4).

using ScoresTileFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float, float*,
                              int64_t);
using ContextTileFn = void (*)(const float*, int64_t, const float*, const float*, int64_t, int64_t,
                               float*, int64_t, __mmask16);
using SoftmaxTileFn = void (*)(float*, int64_t, int64_t, const SoftmaxRowTerms*, float*, bool);

template <int R>
constexpr ScoresTileFn kScoresTiles[4] = {scores_tile<R, 1>, scores_tile<R, 2>, scores_tile<R, 3>,
                                          scores_tile<R, 4>};
template <int R>
constexpr ContextTileFn kContextTiles[4] = {context_tile<R, 1>, context_tile<R, 2>,
                                            context_tile<R, 3>, context_tile<R, 4>};

static_assert(kMaxRows == 6, "the tables below have 6 row counts");

ScoresTileFn scores_tile_for(int64_t rows, int64_t vectors) {
  static constexpr const ScoresTileFn* kByRows[kMaxRows] = {kScoresTiles<1>, kScoresTiles<2>,
                                                            kScoresTiles<3>, kScoresTiles<4>,
                                                            kScoresTiles<5>, kScoresTiles<6>};
  return kByRows[rows - 1][vectors - 1];
}

ContextTileFn context_tile_for(int64_t rows, int64_t vectors) {
  static constexpr const ContextTileFn* kByRows[kMaxRows] = {kContextTiles<1>, kContextTiles<2>,
                                                             kContextTiles<3>, kContextTiles<4>,
                                                             kContextTiles<5>, kContextTiles<6>};
  return kByRows[rows - 1][vectors - 1];
}

SoftmaxTileFn softmax_tile_for(int64_t rows) {
  static constexpr SoftmaxTileFn kByRows[kMaxRows] = {softmax_tile<1>, softmax_tile<2>,
                                                      softmax_tile<3>, softmax_tile<4>,
                                                      softmax_tile<5>, softmax_tile<6>};
  return kByRows[rows - 1];
}

// Rows [begin, end) of a matrix with `cols` floats a row into L2.
void prefetch_rows(const float* data, int64_t stride, int64_t cols, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
    const char* row = reinterpret_cast<const char*>(data + r * stride);
    for (int64_t byte = 0; byte < cols * 4; byte += 64) _mm_prefetch(row + byte, _MM_HINT_T1);
  }
}

}  // namespace

void softmax_row_avx512(float* row, int64_t n, const SoftmaxRowTerms& terms) {
  float inv;
  softmax_tile<1>(row, 0, n, &terms, &inv, /*normalize=*/true);
}

void attention_rows_avx512(const AttentionHead& head, const float* kt, int64_t row0, int64_t rows,
                           float* scores, AttentionRowTerms row_terms) {
  const int64_t padded = attention_padded_keys(head.sk);
  const int64_t dv_vectors = (head.dv + 15) / 16;
  SoftmaxRowTerms terms[kMaxRows];
  float inv[kMaxRows];
  const int64_t tiles = (rows + kMaxRows - 1) / kMaxRows;
  for (int64_t r0 = row0; r0 < row0 + rows; r0 += kMaxRows) {
    const int64_t tile = std::min<int64_t>(kMaxRows, row0 + rows - r0);
    if (head.next_k) {
      const int64_t t = (r0 - row0) / kMaxRows;
      const int64_t k0 = head.sk * t / tiles, k1 = head.sk * (t + 1) / tiles;
      prefetch_rows(head.next_k, head.k_stride, head.d, k0, k1);
      prefetch_rows(head.next_v, head.v_stride, head.dv, k0, k1);
      const int64_t q0 = head.next_q_rows * t / tiles, q1 = head.next_q_rows * (t + 1) / tiles;
      prefetch_rows(head.next_q, head.q_stride, head.d, q0, q1);
    }
    const float* q = head.q + r0 * head.q_stride;
    for (int64_t c = 0; c < padded; c += kTileCols) {
      const int64_t vectors = std::min<int64_t>(kTileCols, padded - c) / 16;
      scores_tile_for(tile, vectors)(q, head.q_stride, kt + c, padded, head.d, head.scale,
                                     scores + c, padded);
    }
    for (int64_t r = 0; r < tile; ++r) terms[r] = row_terms.row(row_terms.context, r0 + r);
    softmax_tile_for(tile)(scores, padded, head.sk, terms, inv, /*normalize=*/false);
    float* y = head.y + r0 * head.y_stride;
    for (int64_t c = 0; c < dv_vectors; c += kTileCols / 16) {
      const int64_t vectors = std::min<int64_t>(kTileCols / 16, dv_vectors - c);
      const __mmask16 last = first_lanes(head.dv - 16 * (c + vectors - 1));
      context_tile_for(tile, vectors)(scores, padded, inv, head.v + 16 * c, head.v_stride, head.sk,
                                      y + 16 * c, head.y_stride, last);
    }
  }
}

}  // namespace onnxkit
