// vector_math's portable loops: one float per "vector", baseline compiler flags. Runs on
// any CPU; the reference for what the AVX versions compute (same algorithms, no FMA).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/vector_math.h"
// After every standard header: see vector_math_simd.h.
#include "kernels/vector_math_simd.h"

namespace onnxkit {
namespace {

struct Scalar {
  using V = float;
  using M = bool;
  static constexpr int kWidth = 1;
  static constexpr bool kTranspose8x8 = false;

  static M first_n(int64_t n) { return n > 0; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V load_partial(const float* p, int64_t n, float fill) { return n > 0 ? *p : fill; }
  static void store_partial(float* p, V v, int64_t n) {
    if (n > 0) *p = v;
  }
  static V set1(float v) { return v; }
  static V zero() { return 0.0f; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fmadd(V a, V b, V c) { return a * b + c; }
  static V sqrt(V a) { return std::sqrt(a); }
  static V abs(V a) { return std::fabs(a); }
  static V neg(V a) { return -a; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static M lt(V a, V b) { return a < b; }
  static M gt(V a, V b) { return a > b; }
  static M is_nan(V a) { return std::isnan(a); }
  static V select(M m, V a, V b) { return m ? a : b; }
  // Adding and removing 1.5 * 2^23 rounds to nearest for |a| < 2^22 (exp's range) without
  // a library call (baseline x86-64 has no ROUNDSS).
  static V round(V a) { return (a + 12582912.0f) - 12582912.0f; }
  // v * 2^n in two exponent-field steps, as the AVX2 version (no ldexp library call).
  static V ldexp(V v, V n) {
    if (std::isnan(n)) return n;
    const auto whole = static_cast<int32_t>(n);
    const int32_t low = whole >> 1;
    return v * pow2(low) * pow2(whole - low);
  }
  static float pow2(int32_t e) {
    const auto bits = static_cast<uint32_t>(e + 127) << 23;
    float result;
    std::memcpy(&result, &bits, sizeof result);
    return result;
  }
  static float reduce_add(V v) { return v; }
  static float reduce_max(V v) { return v; }
  static M load_cond(const uint8_t* p) { return *p != 0; }
  static void transpose8x8(const uint32_t*, int64_t, uint32_t*, int64_t) {}
};

}  // namespace

const VectorKernels& scalar_vector_kernels() {
  static const VectorKernels kernels = make_vector_kernels<Scalar>(SimdLevel::kScalar);
  return kernels;
}

}  // namespace onnxkit
