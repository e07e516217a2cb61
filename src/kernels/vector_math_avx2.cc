// vector_math's loops for AVX2 + FMA. This file alone is compiled with -mavx2 -mfma
// (CMakeLists.txt); it runs only when the CPU reports both (vector_math.cc checks).
#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "kernels/vector_math.h"
// After every standard header: see vector_math_simd.h.
#include "kernels/vector_math_simd.h"
#include "kernels/vector_math_transpose_avx.h"

namespace onnxkit {
namespace {

struct Avx2 {
  using V = __m256;
  using M = __m256;  // all-ones lanes are true
  static constexpr int kWidth = 8;
  static constexpr bool kTranspose8x8 = true;

  static __m256i lanes_below(int64_t n) {
    const int count = n >= 8 ? 8 : static_cast<int>(n);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static M first_n(int64_t n) { return _mm256_castsi256_ps(lanes_below(n)); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // maskload never touches the masked-off lanes' memory.
  static V load_partial(const float* p, int64_t n, float fill) {
    const __m256i mask = lanes_below(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, mask),
                            _mm256_castsi256_ps(mask));
  }
  static void store_partial(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, lanes_below(n), v); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static V neg(V a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static M is_nan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static V select(M m, V a, V b) { return _mm256_blendv_ps(b, a, m); }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // v * 2^n as v * 2^(n/2) * 2^(n - n/2): each factor is a normal float for n in
  // [-150, 128], and the last multiply rounds once into the denormal or infinite range.
  static V ldexp(V v, V n) {
    const __m256i whole = _mm256_cvtps_epi32(n);
    const __m256i low = _mm256_srai_epi32(whole, 1);
    const __m256i high = _mm256_sub_epi32(whole, low);
    const __m256i bias = _mm256_set1_epi32(127);
    const V low_scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(low, bias), 23));
    const V high_scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(high, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(v, low_scale), high_scale);
  }
  static float reduce_add(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(V v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static M load_cond(const uint8_t* p) {
    const __m256i wide = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(wide, _mm256_setzero_si256()));
  }
  static void transpose8x8(const uint32_t* src, int64_t src_stride, uint32_t* dst,
                           int64_t dst_stride) {
    transpose8x8_avx(src, src_stride, dst, dst_stride);
  }
};

}  // namespace

const VectorKernels& avx2_vector_kernels() {
  static const VectorKernels kernels = make_vector_kernels<Avx2>(SimdLevel::kAvx2);
  return kernels;
}

}  // namespace onnxkit
