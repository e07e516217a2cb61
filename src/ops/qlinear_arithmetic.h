// The arithmetic of com.microsoft's QOperator ops (ops/quantization_microsoft.cc), written
// once for the reference kernels and the SIMD kernels (kernels/qlinear_simd.cc), which must
// agree bit for bit. Each formula is the one ONNX Runtime's CPU kernels (MLAS) compute on
// x86-64 with AVX2, including where their rounding steps sit, so int8 models that ORT's
// quantization tool writes in QOperator format give ORT's results here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace onnxkit::qlinear {

// round_half_even(v) saturated to Q, for a v that already holds the zero point. Clamping
// before the conversion makes huge values saturate (MLAS's VCVTPS2DQ would turn values past
// int32 into INT32_MIN); NaN (a NaN or infinite scale) gives Q's lowest value.
template <typename Q>
inline Q saturate_round(float v) {
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (std::isnan(v)) return static_cast<Q>(lo);  // as the vector versions' max(v, lo)
  v = std::min(std::max(v, lo), hi);
  return static_cast<Q>(static_cast<int32_t>(std::nearbyint(v)));
}

// v (relative to the zero point) clamped to the range the zero point leaves, rounded half
// to even, plus the zero point: MLAS's QuantizeLinear and requantization step.
template <typename Q>
inline Q round_with_zero_point(float v, int32_t zero_point) {
  const float zp = static_cast<float>(zero_point);
  const float lo = static_cast<float>(std::numeric_limits<Q>::min()) - zp;
  const float hi = static_cast<float>(std::numeric_limits<Q>::max()) - zp;
  if (std::isnan(v)) v = lo;  // as the vector versions' max(v, lo)
  v = std::min(std::max(v, lo), hi);
  return static_cast<Q>(static_cast<int32_t>(std::nearbyint(v)) + zero_point);
}
// QuantizeLinear: x / scale.
template <typename Q>
inline Q quantize(float x, float scale, int32_t zero_point) {
  return round_with_zero_point<Q>(x / scale, zero_point);
}
// Requantization of an int32 sum: float(acc) * multiplier.
template <typename Q>
inline Q requantize(int32_t acc, float multiplier, int32_t zero_point) {
  return round_with_zero_point<Q>(static_cast<float>(acc) * multiplier, zero_point);
}

// QLinearAdd. MLAS folds both input zero points and C's into one float constant and scales
// the raw integers by the scale ratios with two fused multiply-adds (B's first). When one
// side is one value for a whole run (a scalar, or a broadcast innermost axis), that side's
// term joins the constant by a separate multiply and add instead.
struct AddParams {
  float ratio_a = 1, ratio_b = 1;  // a_scale / c_scale, b_scale / c_scale
  float fixed = 0;                 // c_zp - (ratio_a * a_zp + ratio_b * b_zp)

  AddParams(float a_scale, int32_t a_zp, float b_scale, int32_t b_zp, float c_scale, int32_t c_zp)
      : ratio_a(a_scale / c_scale), ratio_b(b_scale / c_scale) {
    // MLAS writes `ratio_a * a_zp + ratio_b * b_zp`, which its compiler contracts into one
    // fused multiply-add; computed apart, the constant can differ by an ulp and flip a
    // near-tie (7 of 401,408 elements of a ResNet-50 residual Add, then 6 steps at the logits).
    fixed = static_cast<float>(c_zp) -
            std::fma(ratio_a, static_cast<float>(a_zp), ratio_b * static_cast<float>(b_zp));
  }
  // Both sides vary along the run.
  float both(int32_t a, int32_t b) const {
    return std::fma(static_cast<float>(a), ratio_a,
                    std::fma(static_cast<float>(b), ratio_b, fixed));
  }
  // The constant of a run where b (a) is one value; each element is then
  // std::fma(float(a), ratio_a, fixed_b) (std::fma(float(b), ratio_b, fixed_a)).
  float fixed_with_b(int32_t b) const { return fixed + static_cast<float>(b) * ratio_b; }
  float fixed_with_a(int32_t a) const { return fixed + static_cast<float>(a) * ratio_a; }
};

// QLinearMul: the exact integer product of the zero-point-shifted inputs, times
// a_scale * b_scale / c_scale in float, plus C's zero point in float (a separate multiply and
// add, as MLAS's SSE2 kernel), rounded and saturated.
inline float mul_ratio(float a_scale, float b_scale, float c_scale) {
  return a_scale * b_scale / c_scale;
}
template <typename Q>
inline Q mul_value(int32_t a_shifted, int32_t b_shifted, float ratio, int32_t c_zp) {
  const float product = static_cast<float>(a_shifted * b_shifted) * ratio;
  return saturate_round<Q>(product + static_cast<float>(c_zp));
}

}  // namespace onnxkit::qlinear
