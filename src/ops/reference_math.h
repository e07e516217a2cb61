// Double-precision building blocks of the transformer families' reference kernels
// (ops/fused_transformer.cc, where they are defined, and ops/transformer_microsoft.cc).
#pragma once

#include <cstdint>
#include <functional>

#include "ops/attention_layout.h"

namespace onnxkit {

// Normalizes `row` (n values) in place: (x - mean) / sqrt(var + epsilon), biased variance.
void reference_normalize_row(double* row, int64_t n, double epsilon);

// Softmax of `row` (n values) in place. A row of -inf only gives NaN, as Softmax does.
void reference_softmax_row(double* row, int64_t n);

// Attention per (b, h) on operands seen through their logical views: Q [B, H, Sq, D],
// K [B, H, Sk, D], V [B, H, Sk, Dv], Y [B, H, Sq, Dv] (Y zeroed by the caller, then summed
// into). Score j of query row i is terms(scale * Q_i . K_j, ((b * H + h) * Sq + i) * Sk + j):
// the caller's mask, keep or bias terms; then each row's softmax weighs V's rows.
void reference_attention(const double* q, const AttentionView& qv, const double* k,
                         const AttentionView& kv, const double* v, const AttentionView& vv,
                         double* y, const AttentionView& yv, double scale,
                         const std::function<double(double score, int64_t index)>& terms);

}  // namespace onnxkit
