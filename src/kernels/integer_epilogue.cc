#include "kernels/integer_epilogue.h"

#include <immintrin.h>

#include "kernels/vector_math.h"

namespace onnxkit::integer_epilogue {
namespace {

// GCC 12 warns inside its own AVX-512 headers (GCC bug 105593) where the intrinsics inline.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

void correct_scalar(const int32_t* high, const int32_t* low, int64_t from, int64_t n, int32_t a_zp,
                    const int32_t* column_sums, const int32_t* b_zero_points, int32_t a_sum,
                    int32_t* acc) {
  const auto azp = static_cast<uint32_t>(a_zp), rest = static_cast<uint32_t>(a_sum);
  for (int64_t j = from; j < n; ++j) {
    uint32_t v = low ? 16u * static_cast<uint32_t>(high[j]) + static_cast<uint32_t>(low[j])
                     : static_cast<uint32_t>(high[j]);
    v -= azp * static_cast<uint32_t>(column_sums[j]);
    if (b_zero_points) v -= static_cast<uint32_t>(b_zero_points[j]) * rest;
    acc[j] = static_cast<int32_t>(v);
  }
}

void scale_scalar(const int32_t* acc, int64_t from, int64_t n, float scale, const float* scales,
                  const float* bias, float* y) {
  if (scales) {
    for (int64_t j = from; j < n; ++j) y[j] = static_cast<float>(acc[j]) * scales[j];
  } else {
    for (int64_t j = from; j < n; ++j) y[j] = static_cast<float>(acc[j]) * scale;
  }
  if (bias) {
    for (int64_t j = from; j < n; ++j) y[j] += bias[j];
  }
}

__attribute__((target("avx512f"))) void correct_avx512(const int32_t* high, const int32_t* low,
                                                       int64_t n, int32_t a_zp,
                                                       const int32_t* column_sums,
                                                       const int32_t* b_zero_points, int32_t a_sum,
                                                       int32_t* acc) {
  const __m512i azp = _mm512_set1_epi32(a_zp), rest = _mm512_set1_epi32(a_sum);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512i v = _mm512_loadu_si512(high + j);
    if (low) v = _mm512_add_epi32(_mm512_slli_epi32(v, 4), _mm512_loadu_si512(low + j));
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(azp, _mm512_loadu_si512(column_sums + j)));
    if (b_zero_points) {
      v = _mm512_sub_epi32(v, _mm512_mullo_epi32(rest, _mm512_loadu_si512(b_zero_points + j)));
    }
    _mm512_storeu_si512(acc + j, v);
  }
  correct_scalar(high, low, j, n, a_zp, column_sums, b_zero_points, a_sum, acc);
}

// Multiply and add are separate instructions (no contraction: the intrinsics, not
// expressions), so the bits are those of the scalar loop.
__attribute__((target("avx512f"))) void scale_avx512(const int32_t* acc, int64_t n, float scale,
                                                     const float* scales, const float* bias,
                                                     float* y) {
  const __m512 s = _mm512_set1_ps(scale);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 v = _mm512_cvtepi32_ps(_mm512_loadu_si512(acc + j));
    v = _mm512_mul_round_ps(v, scales ? _mm512_loadu_ps(scales + j) : s,
                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (bias) {
      v = _mm512_add_round_ps(v, _mm512_loadu_ps(bias + j),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    _mm512_storeu_ps(y + j, v);
  }
  scale_scalar(acc, j, n, scale, scales, bias, y);
}

__attribute__((target("avx2"))) void correct_avx2(const int32_t* high, const int32_t* low,
                                                  int64_t n, int32_t a_zp,
                                                  const int32_t* column_sums,
                                                  const int32_t* b_zero_points, int32_t a_sum,
                                                  int32_t* acc) {
  const __m256i azp = _mm256_set1_epi32(a_zp), rest = _mm256_set1_epi32(a_sum);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(high + j));
    if (low)
      v = _mm256_add_epi32(_mm256_slli_epi32(v, 4),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(low + j)));
    v = _mm256_sub_epi32(
        v, _mm256_mullo_epi32(
               azp, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(column_sums + j))));
    if (b_zero_points)
      v = _mm256_sub_epi32(
          v, _mm256_mullo_epi32(
                 rest, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_zero_points + j))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + j), v);
  }
  correct_scalar(high, low, j, n, a_zp, column_sums, b_zero_points, a_sum, acc);
}

// Without "fma" in the target, GCC cannot contract the multiply and the add.
__attribute__((target("avx2"))) void scale_avx2(const int32_t* acc, int64_t n, float scale,
                                                const float* scales, const float* bias, float* y) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j)));
    v = _mm256_mul_ps(v, scales ? _mm256_loadu_ps(scales + j) : s);
    if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
    _mm256_storeu_ps(y + j, v);
  }
  scale_scalar(acc, j, n, scale, scales, bias, y);
}

void scale_floats_scalar(float* y, int64_t from, int64_t n, float scale, const float* scales,
                         const float* bias) {
  if (scales) {
    for (int64_t j = from; j < n; ++j) y[j] *= scales[j];
  } else {
    for (int64_t j = from; j < n; ++j) y[j] *= scale;
  }
  if (bias) {
    for (int64_t j = from; j < n; ++j) y[j] += bias[j];
  }
}

__attribute__((target("avx512f"))) void scale_floats_avx512(float* y, int64_t n, float scale,
                                                            const float* scales,
                                                            const float* bias) {
  const __m512 s = _mm512_set1_ps(scale);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 v = _mm512_mul_round_ps(_mm512_loadu_ps(y + j), scales ? _mm512_loadu_ps(scales + j) : s,
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (bias) {
      v = _mm512_add_round_ps(v, _mm512_loadu_ps(bias + j),
                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    _mm512_storeu_ps(y + j, v);
  }
  scale_floats_scalar(y, j, n, scale, scales, bias);
}

__attribute__((target("avx2"))) void scale_floats_avx2(float* y, int64_t n, float scale,
                                                       const float* scales, const float* bias) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(y + j), scales ? _mm256_loadu_ps(scales + j) : s);
    if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + j));
    _mm256_storeu_ps(y + j, v);
  }
  scale_floats_scalar(y, j, n, scale, scales, bias);
}

#pragma GCC diagnostic pop

}  // namespace

void correct_products(const int32_t* high, const int32_t* low, int64_t n, int32_t a_zp,
                      const int32_t* column_sums, const int32_t* b_zero_points, int32_t a_sum,
                      int32_t* acc) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return correct_avx512(high, low, n, a_zp, column_sums, b_zero_points, a_sum, acc);
    case SimdLevel::kAvx2:
      return correct_avx2(high, low, n, a_zp, column_sums, b_zero_points, a_sum, acc);
    default:
      return correct_scalar(high, low, 0, n, a_zp, column_sums, b_zero_points, a_sum, acc);
  }
}

void scale_to_float(const int32_t* acc, int64_t n, float scale, const float* scales,
                    const float* bias, float* y) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return scale_avx512(acc, n, scale, scales, bias, y);
    case SimdLevel::kAvx2:
      return scale_avx2(acc, n, scale, scales, bias, y);
    default:
      return scale_scalar(acc, 0, n, scale, scales, bias, y);
  }
}

void scale_floats(float* y, int64_t n, float scale, const float* scales, const float* bias) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return scale_floats_avx512(y, n, scale, scales, bias);
    case SimdLevel::kAvx2:
      return scale_floats_avx2(y, n, scale, scales, bias);
    default:
      return scale_floats_scalar(y, 0, n, scale, scales, bias);
  }
}

}  // namespace onnxkit::integer_epilogue
