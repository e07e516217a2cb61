// An 8 x 8 transpose of 4-byte elements in AVX registers, shared by the AVX2 and AVX-512
// files of vector_math (included only by them, after their standard headers; unnamed
// namespace for the reason vector_math_simd.h gives).
#pragma once

namespace onnxkit {
namespace {

// dst[j * dst_stride + i] = src[i * src_stride + j] for i, j < 8.
[[maybe_unused]] inline void transpose8x8_avx(const uint32_t* src, int64_t src_stride,
                                              uint32_t* dst, int64_t dst_stride) {
  __m256 r[8];
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + k * src_stride));
  }
  // Pairs of rows interleaved, then quads, then the 128-bit halves swapped into place.
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 columns[8] = {
      _mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
      _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
      _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
      _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
  for (int k = 0; k < 8; ++k) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + k * dst_stride), columns[k]);
  }
}

}  // namespace
}  // namespace onnxkit
