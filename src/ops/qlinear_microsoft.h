// What the reference kernels of com.microsoft's QOperator ops (ops/quantization_microsoft.cc)
// share with their optimized kernels (kernels/fast_qlinear.cc): parameter reading with the
// errors that name the input at fault, the broadcast run rule of QLinearAdd, the tables of
// the lookup ops, and QGemm's problem and output stage.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "ops/kernel.h"
#include "ops/op_utils.h"
#include "ops/qlinear_arithmetic.h"

namespace onnxkit {

inline constexpr size_t kNoInput = std::numeric_limits<size_t>::max();

// A per-tensor scale and zero point.
struct QuantParam {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// The scale at `scale_index` (float, one element) and the zero point at `zp_index` (of
// `dtype`, one element; 0 when absent); fails naming `of` and the input.
QuantParam read_quant_param(const KernelContext& context, size_t scale_index, size_t zp_index,
                            DType dtype, std::string_view of);

// Input `index`'s dtype, which must be uint8 or int8.
DType int8_data_type(const KernelContext& context, size_t index, std::string_view what);

// QLinearAdd / QLinearMul's operands (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp),
// checked (one int8 type for A, B and C; one-value scales and zero points), and C
// allocated with the broadcast shape.
struct QLinearBinaryOperands {
  DType dtype;
  QuantParam a, b, c;
  Tensor* output;
};
QLinearBinaryOperands read_qlinear_binary(KernelContext& context);

// B [K, N] of com.microsoft MatMulIntegerToFloat / DynamicQuantizeMatMul with its scale
// (float, one value or N), zero point (B's type, one value or N; {0} when absent) and bias
// (float [N] or null), checked against A (its last dimension is K).
struct MsIntegerMatMulB {
  int64_t k = 0, n = 0;
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  const float* bias = nullptr;
};
MsIntegerMatMulB read_ms_integer_matmul_b(const KernelContext& context, const Tensor& a,
                                          size_t b_index, size_t scale_index, size_t zp_index,
                                          size_t bias_index);

// Which side of a broadcast binary op is one value along each innermost run (ORT's kernels
// round differently in each case).
enum class BinaryRunKind { kBoth, kScalarA, kScalarB };
BinaryRunKind binary_run_kind(const Shape& a, const Shape& b, const Shape& out);

// Calls f(out_offset, a_offset, b_offset, count, a_step, b_step) for each innermost run of
// the broadcast, a_step / b_step 0 where that side is one value along the run.
template <typename F>
void for_each_binary_run(const Shape& a, const Shape& b, const Shape& out, F&& f) {
  const int64_t total = shape_numel(out);
  if (total == 0) return;
  const std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  const size_t rank = out.size();
  if (rank == 0) {
    f(0, 0, 0, 1, 0, 0);
    return;
  }
  const int64_t inner = out[rank - 1];
  const int64_t a_step = sa[rank - 1], b_step = sb[rank - 1];
  std::vector<int64_t> counter(rank, 0);
  int64_t a_off = 0, b_off = 0;
  for (int64_t row = 0; row * inner < total; ++row) {
    f(row * inner, a_off, b_off, inner, a_step, b_step);
    for (size_t d = rank - 1; d-- > 0;) {
      a_off += sa[d];
      b_off += sb[d];
      if (++counter[d] < out[d]) break;
      a_off -= sa[d] * out[d];
      b_off -= sb[d] * out[d];
      counter[d] = 0;
    }
  }
}

// One run of QLinearAdd: n outputs, x and y read with steps sx and sy (0: one value).
template <typename Q>
void qlinear_add_run(const qlinear::AddParams& p, BinaryRunKind kind, const Q* x, int64_t sx,
                     const Q* y, int64_t sy, Q* z, int64_t n) {
  switch (kind) {
    case BinaryRunKind::kBoth:
      for (int64_t i = 0; i < n; ++i)
        z[i] = qlinear::saturate_round<Q>(p.both(x[i * sx], y[i * sy]));
      return;
    case BinaryRunKind::kScalarB: {
      const float fixed = p.fixed_with_b(y[0]);
      for (int64_t i = 0; i < n; ++i) {
        z[i] =
            qlinear::saturate_round<Q>(std::fma(static_cast<float>(x[i * sx]), p.ratio_a, fixed));
      }
      return;
    }
    case BinaryRunKind::kScalarA: {
      const float fixed = p.fixed_with_a(x[0]);
      for (int64_t i = 0; i < n; ++i) {
        z[i] =
            qlinear::saturate_round<Q>(std::fma(static_cast<float>(y[i * sy]), p.ratio_b, fixed));
      }
      return;
    }
  }
}

// ORT's table for a lookup op: the 256 values of x's type (indexed by their bit pattern),
// dequantized with x's parameters in float, transformed, quantized with y's.
std::vector<uint8_t> lookup_table(DType dtype, QuantParam x, QuantParam y,
                                  const std::function<void(float*, int)>& transform);
// MLAS's logistic (the rational approximation of its FMA3 kernel), in place.
void mlas_logistic(float* values, int n);
// y[i] = table[x[i]].
void apply_lookup_table(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n);

// QLinearGlobalAveragePool's view of X: batch, channels, image size and the output shape.
struct GlobalPoolGeometry {
  int64_t batch = 1, channels = 1, image = 1;
  Shape out_shape;
};
GlobalPoolGeometry global_pool_geometry(const Shape& x, bool channels_last);

// QGemm's inputs, checked.
struct QGemmProblem {
  const Tensor* a = nullptr;
  const Tensor* b = nullptr;
  const Tensor* c = nullptr;  // int32 bias, or nullptr
  int64_t m = 0, n = 0, k = 0;
  bool a_signed = false, b_signed = false;
  int32_t a_zp = 0;
  std::vector<int32_t> b_zero_points;  // 1 or n values
  std::vector<float> multipliers;      // alpha * a_scale * b_scale[j] (/ y_scale): 1 or n
  bool has_y_scale = false;
  DType y_type = DType::kFloat;
  float y_scale = 1.0f;
  int32_t y_zp = 0;
};
QGemmProblem qgemm_problem(const KernelContext& context, float alpha, bool trans_a, bool trans_b);
// Adds C to the int32 product `acc` ([m, n]) and writes output 0 (requantized, or float).
void qgemm_output(KernelContext& context, const QGemmProblem& p, std::vector<int32_t>& acc);

}  // namespace onnxkit
