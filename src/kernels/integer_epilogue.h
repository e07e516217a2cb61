// The per-row loops after an int8 matrix product (Int8MatMul in dnnl_int8.cc): the zero
// point terms taken off the raw int32 products, and MatMulIntegerToFloat's scaling to float.
// Scalar, AVX2 and AVX-512 versions picked at run time by active_simd_level(); all give the
// same bits (int32 arithmetic wraps alike; float(acc) * scale, then + bias, no fused
// multiply-add), which is what the reference kernels compute.
#pragma once

#include <cstdint>

namespace onnxkit::integer_epilogue {

// acc[j] = high[j] * (low ? 16 : 1) + (low ? low[j] : 0) - a_zp * column_sums[j]
//          - (b_zero_points ? b_zero_points[j] * a_sum : 0), in wrapping int32 arithmetic,
// for j in [0, n). `acc` may be `high` (in place). `low`: the products of the low 4-bit
// halves of split weights, or null.
void correct_products(const int32_t* high, const int32_t* low, int64_t n, int32_t a_zp,
                      const int32_t* column_sums, const int32_t* b_zero_points, int32_t a_sum,
                      int32_t* acc);

// y[j] = float(acc[j]) * (scales ? scales[j] : scale), then + bias[j] when bias is not null.
void scale_to_float(const int32_t* acc, int64_t n, float scale, const float* scales,
                    const float* bias, float* y);

// y[j] = y[j] * (scales ? scales[j] : scale), then + bias[j] when bias is not null: the
// same bits as scale_to_float when y[j] holds float(acc[j]).
void scale_floats(float* y, int64_t n, float scale, const float* scales, const float* bias);

}  // namespace onnxkit::integer_epilogue
