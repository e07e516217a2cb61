// The float <-> int8 loops of the quantized kernels (quantize_simd.cc), each in scalar,
// AVX2 and AVX-512 versions picked at run time by active_simd_level() (so
// SimdLevelOverride and ONNXKIT_SIMD_LEVEL force the lower ones, as for vector_math).
//
// Every version computes what the reference kernels (ops/quantization.cc) and ONNX Runtime's
// MLAS compute, bit for bit: x / scale in float, rounded half to even, plus the zero point,
// saturated to the integer type.
#pragma once

#include <cstdint>

namespace onnxkit::quantize_simd {

// Smallest and largest of x[0, n), NaNs skipped; {0, 0} when n == 0 or every x is NaN
// folded with the caller's start values lo = hi = 0 (DynamicQuantizeLinear's range holds 0).
void min_max_with_zero(const float* x, int64_t n, float& lo, float& hi);

// y[i] = saturate(round_half_even(x[i] / scale) + zero_point) as uint8 or int8.
void quantize_u8(const float* x, int64_t n, float scale, int32_t zero_point, uint8_t* y);
void quantize_s8(const float* x, int64_t n, float scale, int32_t zero_point, int8_t* y);

// y[i] = (float(q[i]) - zero_point) * scale.
void dequantize_u8(const uint8_t* q, int64_t n, float scale, int32_t zero_point, float* y);
void dequantize_s8(const int8_t* q, int64_t n, float scale, int32_t zero_point, float* y);

// y[i] = saturate(round_half_even(float(acc[i] + bias) * multiplier) + zero_point): the
// requantization of QLinearConv / QLinearMatMul (multiplier = x_scale * w_scale / y_scale).
// With `multipliers` (not null) element i uses multipliers[i] and biases[i] (biases may be
// null): a row of output columns; otherwise `multiplier` and `bias` for all.
void requantize_u8(const int32_t* acc, int64_t n, int32_t bias, const int32_t* biases,
                   float multiplier, const float* multipliers, int32_t zero_point, uint8_t* y);
void requantize_s8(const int32_t* acc, int64_t n, int32_t bias, const int32_t* biases,
                   float multiplier, const float* multipliers, int32_t zero_point, int8_t* y);

// dst[c * rows + r] = src[r * cols + c]: a byte matrix [rows, cols] transposed (NCHW <->
// NHWC of int8 activations, one image at a time), in 16 x 16 SSE2 tiles.
void transpose_bytes(const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst);

}  // namespace onnxkit::quantize_simd
