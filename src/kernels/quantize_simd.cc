// See quantize_simd.h. The vector versions round with VCVTPS2DQ under the default MXCSR
// (round to nearest even), after clamping the float to the range the zero point leaves, so
// they agree with the scalar versions (std::nearbyint, then the zero point, then the clamp)
// on every input, NaN included (mapped to the zero point as the reference kernels do).
#include "kernels/quantize_simd.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kernels/vector_math.h"

namespace onnxkit::quantize_simd {
namespace {

// GCC 12 warns inside its own AVX-512 headers (GCC bug 105593) where the intrinsics inline.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

template <typename Q>
Q saturate_scalar(float scaled, int32_t zero_point) {
  constexpr float lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  const float zp = static_cast<float>(zero_point);
  const float rounded = std::nearbyint(scaled) + zp;
  if (std::isnan(rounded)) return static_cast<Q>(std::clamp(zp, lo, hi));
  return static_cast<Q>(static_cast<int32_t>(std::clamp(rounded, lo, hi)));
}

// ---------------------------------------------------------------------------------------
// AVX-512

// round(v) + zp saturated, as int32 lanes (NaN -> zp).
__attribute__((target("avx512f"))) inline __m512i round_saturate_avx512(__m512 v, __m512 lo,
                                                                        __m512 hi, __m512i zp) {
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), zp);
}

template <typename Q>
__attribute__((target("avx512f"))) inline void store16_avx512(Q* y, __m512i q) {
  // Lanes are already in Q's range: a truncating narrow keeps them.
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm512_cvtepi32_epi8(q));
}

template <typename Q>
__attribute__((target("avx512f"))) void quantize_avx512(const float* x, int64_t n, float scale,
                                                        int32_t zero_point, Q* y) {
  const float zp = static_cast<float>(zero_point);
  const __m512 lo = _mm512_set1_ps(std::numeric_limits<Q>::min() - zp);
  const __m512 hi = _mm512_set1_ps(std::numeric_limits<Q>::max() - zp);
  const __m512 s = _mm512_set1_ps(scale);
  const __m512i z = _mm512_set1_epi32(zero_point);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
    store16_avx512(y + i, round_saturate_avx512(v, lo, hi, z));
  }
  for (; i < n; ++i) y[i] = saturate_scalar<Q>(x[i] / scale, zero_point);
}

template <typename Q>
__attribute__((target("avx512f"))) void requantize_avx512(const int32_t* acc, int64_t n,
                                                          int32_t bias, const int32_t* biases,
                                                          float multiplier,
                                                          const float* multipliers,
                                                          int32_t zero_point, Q* y) {
  const float zp = static_cast<float>(zero_point);
  const __m512 lo = _mm512_set1_ps(std::numeric_limits<Q>::min() - zp);
  const __m512 hi = _mm512_set1_ps(std::numeric_limits<Q>::max() - zp);
  const __m512i z = _mm512_set1_epi32(zero_point);
  const __m512i b = _mm512_set1_epi32(bias);
  const __m512 m = _mm512_set1_ps(multiplier);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i a = _mm512_loadu_si512(acc + i);
    a = _mm512_add_epi32(a, biases ? _mm512_loadu_si512(biases + i) : b);
    const __m512 scale = multipliers ? _mm512_loadu_ps(multipliers + i) : m;
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), scale);
    store16_avx512(y + i, round_saturate_avx512(v, lo, hi, z));
  }
  for (; i < n; ++i) {
    const uint32_t sum =
        static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(biases ? biases[i] : bias);
    const float scale = multipliers ? multipliers[i] : multiplier;
    y[i] = saturate_scalar<Q>(static_cast<float>(static_cast<int32_t>(sum)) * scale, zero_point);
  }
}

template <typename Q>
__attribute__((target("avx512f"))) void dequantize_avx512(const Q* q, int64_t n, float scale,
                                                          int32_t zero_point, float* y) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 z = _mm512_set1_ps(static_cast<float>(zero_point));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i));
    const __m512i ints =
        std::is_signed_v<Q> ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(ints), z), s));
  }
  for (; i < n; ++i) y[i] = (static_cast<float>(q[i]) - static_cast<float>(zero_point)) * scale;
}

__attribute__((target("avx512f"))) void min_max_avx512(const float* x, int64_t n, float& lo,
                                                       float& hi) {
  __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    vlo = _mm512_min_ps(v, vlo);  // a NaN v keeps the second operand
    vhi = _mm512_max_ps(v, vhi);
  }
  lo = _mm512_reduce_min_ps(vlo);
  hi = _mm512_reduce_max_ps(vhi);
  for (; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
}

// ---------------------------------------------------------------------------------------
// AVX2

__attribute__((target("avx2,fma"))) inline __m256i round_saturate_avx2(__m256 v, __m256 lo,
                                                                       __m256 hi, __m256i zp) {
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
}

template <typename Q>
__attribute__((target("avx2,fma"))) inline void store8_avx2(Q* y, __m256i q) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), q);
  for (int j = 0; j < 8; ++j) y[j] = static_cast<Q>(lanes[j]);
}

template <typename Q>
__attribute__((target("avx2,fma"))) void quantize_avx2(const float* x, int64_t n, float scale,
                                                       int32_t zero_point, Q* y) {
  const float zp = static_cast<float>(zero_point);
  const __m256 lo = _mm256_set1_ps(std::numeric_limits<Q>::min() - zp);
  const __m256 hi = _mm256_set1_ps(std::numeric_limits<Q>::max() - zp);
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i z = _mm256_set1_epi32(zero_point);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
    store8_avx2(y + i, round_saturate_avx2(v, lo, hi, z));
  }
  for (; i < n; ++i) y[i] = saturate_scalar<Q>(x[i] / scale, zero_point);
}

template <typename Q>
__attribute__((target("avx2,fma"))) void requantize_avx2(const int32_t* acc, int64_t n,
                                                         int32_t bias, const int32_t* biases,
                                                         float multiplier, const float* multipliers,
                                                         int32_t zero_point, Q* y) {
  const float zp = static_cast<float>(zero_point);
  const __m256 lo = _mm256_set1_ps(std::numeric_limits<Q>::min() - zp);
  const __m256 hi = _mm256_set1_ps(std::numeric_limits<Q>::max() - zp);
  const __m256i z = _mm256_set1_epi32(zero_point);
  const __m256i b = _mm256_set1_epi32(bias);
  const __m256 m = _mm256_set1_ps(multiplier);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + i));
    a = _mm256_add_epi32(
        a, biases ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(biases + i)) : b);
    const __m256 scale = multipliers ? _mm256_loadu_ps(multipliers + i) : m;
    const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), scale);
    store8_avx2(y + i, round_saturate_avx2(v, lo, hi, z));
  }
  for (; i < n; ++i) {
    const uint32_t sum =
        static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(biases ? biases[i] : bias);
    const float scale = multipliers ? multipliers[i] : multiplier;
    y[i] = saturate_scalar<Q>(static_cast<float>(static_cast<int32_t>(sum)) * scale, zero_point);
  }
}

__attribute__((target("avx2,fma"))) void min_max_avx2(const float* x, int64_t n, float& lo,
                                                      float& hi) {
  __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vlo = _mm256_min_ps(v, vlo);
    vhi = _mm256_max_ps(v, vhi);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  for (int j = 0; j < 8; ++j) {
    lo = std::fmin(lo, l[j]);
    hi = std::fmax(hi, h[j]);
  }
  for (; i < n; ++i) {
    lo = std::fmin(lo, x[i]);
    hi = std::fmax(hi, x[i]);
  }
}

#pragma GCC diagnostic pop

// ---------------------------------------------------------------------------------------
// Scalar

template <typename Q>
void quantize_scalar(const float* x, int64_t n, float scale, int32_t zero_point, Q* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = saturate_scalar<Q>(x[i] / scale, zero_point);
}

template <typename Q>
void requantize_scalar(const int32_t* acc, int64_t n, int32_t bias, const int32_t* biases,
                       float multiplier, const float* multipliers, int32_t zero_point, Q* y) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t sum =
        static_cast<uint32_t>(acc[i]) + static_cast<uint32_t>(biases ? biases[i] : bias);
    const float scale = multipliers ? multipliers[i] : multiplier;
    y[i] = saturate_scalar<Q>(static_cast<float>(static_cast<int32_t>(sum)) * scale, zero_point);
  }
}

template <typename Q>
void dequantize(const Q* q, int64_t n, float scale, int32_t zero_point, float* y) {
  if (active_simd_level() == SimdLevel::kAvx512) {
    dequantize_avx512(q, n, scale, zero_point, y);
    return;
  }
  const float zp = static_cast<float>(zero_point);
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(q[i]) - zp) * scale;
}

template <typename Q>
void quantize(const float* x, int64_t n, float scale, int32_t zero_point, Q* y) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return quantize_avx512(x, n, scale, zero_point, y);
    case SimdLevel::kAvx2:
      return quantize_avx2(x, n, scale, zero_point, y);
    default:
      return quantize_scalar(x, n, scale, zero_point, y);
  }
}

template <typename Q>
void requantize(const int32_t* acc, int64_t n, int32_t bias, const int32_t* biases,
                float multiplier, const float* multipliers, int32_t zero_point, Q* y) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return requantize_avx512(acc, n, bias, biases, multiplier, multipliers, zero_point, y);
    case SimdLevel::kAvx2:
      return requantize_avx2(acc, n, bias, biases, multiplier, multipliers, zero_point, y);
    default:
      return requantize_scalar(acc, n, bias, biases, multiplier, multipliers, zero_point, y);
  }
}

// One 16 x 16 tile: dst row j = src column j (SSE2, the x86-64 baseline).
inline void transpose_tile16(const uint8_t* src, int64_t src_stride, uint8_t* dst,
                             int64_t dst_stride) {
  __m128i r[16];
  for (int i = 0; i < 16; ++i) {
    r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
  }
  __m128i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      b[4 * i + 2 * j] = _mm_unpacklo_epi16(a[4 * i + j], a[4 * i + j + 2]);
      b[4 * i + 2 * j + 1] = _mm_unpackhi_epi16(a[4 * i + j], a[4 * i + j + 2]);
    }
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      a[8 * i + 2 * j] = _mm_unpacklo_epi32(b[8 * i + j], b[8 * i + j + 4]);
      a[8 * i + 2 * j + 1] = _mm_unpackhi_epi32(b[8 * i + j], b[8 * i + j + 4]);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[2 * j] = _mm_unpacklo_epi64(a[j], a[j + 8]);
    r[2 * j + 1] = _mm_unpackhi_epi64(a[j], a[j + 8]);
  }
  for (int i = 0; i < 16; ++i) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * dst_stride), r[i]);
  }
}

}  // namespace

// Three rows of bytes interleaved (an RGB image to channels-last, the int8 chains' first
// input): 16 pixels per step, each of the 3 output vectors gathered from the 3 rows by
// PSHUFB (column by column it took ResNet-50's input ~40 us, this ~5).
__attribute__((target("ssse3"))) int64_t interleave3_ssse3(const uint8_t* src, int64_t cols,
                                                           uint8_t* dst) {
  // masks[k][row]: for output vector k, where each byte comes from in `row`'s 16 pixels.
  alignas(16) static const auto masks = [] {
    std::array<std::array<std::array<int8_t, 16>, 3>, 3> m{};
    for (int k = 0; k < 3; ++k) {
      for (int j = 0; j < 16; ++j) {
        const int i = 16 * k + j;
        for (int row = 0; row < 3; ++row) {
          m[k][row][j] = static_cast<int8_t>(i % 3 == row ? i / 3 : -128);
        }
      }
    }
    return m;
  }();
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m128i in[3];
    for (int row = 0; row < 3; ++row) {
      in[row] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + row * cols + c));
    }
    for (int k = 0; k < 3; ++k) {
      __m128i out = _mm_setzero_si128();
      for (int row = 0; row < 3; ++row) {
        const __m128i mask = _mm_load_si128(reinterpret_cast<const __m128i*>(masks[k][row].data()));
        out = _mm_or_si128(out, _mm_shuffle_epi8(in[row], mask));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * c + 16 * k), out);
    }
  }
  return c;
}

void transpose_bytes(const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst) {
  if (rows == 3) {
    int64_t c = active_simd_level() == SimdLevel::kScalar ? 0 : interleave3_ssse3(src, cols, dst);
    for (; c < cols; ++c) {
      for (int64_t r = 0; r < 3; ++r) dst[3 * c + r] = src[r * cols + c];
    }
    return;
  }
  const int64_t full_rows = rows / 16 * 16, full_cols = cols / 16 * 16;
  for (int64_t r = 0; r < full_rows; r += 16) {
    for (int64_t c = 0; c < full_cols; c += 16) {
      transpose_tile16(src + r * cols + c, cols, dst + c * rows + r, rows);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = r < full_rows ? full_cols : 0; c < cols; ++c)
      dst[c * rows + r] = src[r * cols + c];
  }
}

void min_max_with_zero(const float* x, int64_t n, float& lo, float& hi) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return min_max_avx512(x, n, lo, hi);
    case SimdLevel::kAvx2:
      return min_max_avx2(x, n, lo, hi);
    default:
      for (int64_t i = 0; i < n; ++i) {
        lo = std::fmin(lo, x[i]);
        hi = std::fmax(hi, x[i]);
      }
  }
}

void quantize_u8(const float* x, int64_t n, float scale, int32_t zero_point, uint8_t* y) {
  quantize(x, n, scale, zero_point, y);
}
void quantize_s8(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y) {
  quantize(x, n, scale, zero_point, y);
}
void dequantize_u8(const uint8_t* q, int64_t n, float scale, int32_t zero_point, float* y) {
  dequantize(q, n, scale, zero_point, y);
}
void dequantize_s8(const int8_t* q, int64_t n, float scale, int32_t zero_point, float* y) {
  dequantize(q, n, scale, zero_point, y);
}
void requantize_u8(const int32_t* acc, int64_t n, int32_t bias, const int32_t* biases,
                   float multiplier, const float* multipliers, int32_t zero_point, uint8_t* y) {
  requantize(acc, n, bias, biases, multiplier, multipliers, zero_point, y);
}
void requantize_s8(const int32_t* acc, int64_t n, int32_t bias, const int32_t* biases,
                   float multiplier, const float* multipliers, int32_t zero_point, int8_t* y) {
  requantize(acc, n, bias, biases, multiplier, multipliers, zero_point, y);
}

}  // namespace onnxkit::quantize_simd
