// vector_math's loops for AVX-512 (F, BW, DQ, VL). This file alone is compiled with
// -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma (CMakeLists.txt); it runs only
// when the CPU reports those features (vector_math.cc checks).
#include <immintrin.h>

#include <cstdint>
#include <utility>

#include "kernels/vector_math.h"
// After every standard header: see vector_math_simd.h.
#include "kernels/vector_math_simd.h"
#include "kernels/vector_math_transpose_avx.h"

namespace onnxkit {
namespace {

struct Avx512 {
  using V = __m512;
  using M = __mmask16;
  static constexpr int kWidth = 16;
  static constexpr bool kTranspose8x8 = true;

  static M first_n(int64_t n) {
    return n >= 16 ? static_cast<M>(0xFFFF) : static_cast<M>((1u << n) - 1u);
  }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V load_partial(const float* p, int64_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), first_n(n), p);
  }
  static void store_partial(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, first_n(n), v); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V abs(V a) { return _mm512_abs_ps(a); }
  static V neg(V a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.0f)); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static M is_nan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static V select(M m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }
  static V round(V a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // scalef handles overflow to inf and denormal results itself.
  static V ldexp(V v, V n) { return _mm512_scalef_ps(v, n); }
  static float reduce_add(V v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
  static M load_cond(const uint8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm_test_epi8_mask(bytes, bytes);
  }

  static void transpose8x8(const uint32_t* src, int64_t src_stride, uint32_t* dst,
                           int64_t dst_stride) {
    transpose8x8_avx(src, src_stride, dst, dst_stride);
  }
};

}  // namespace

const VectorKernels& avx512_vector_kernels() {
  static const VectorKernels kernels = make_vector_kernels<Avx512>(SimdLevel::kAvx512);
  return kernels;
}

}  // namespace onnxkit
