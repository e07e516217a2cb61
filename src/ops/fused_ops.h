// onnxkit's own fused operators (domain "com.onnxkit", version 1): the contract between
// the extended-level fusion passes (src/passes/fuse_*.cc) that create them, their
// reference kernels (src/ops/fused_linear.cc, src/ops/fused_transformer.cc,
// src/ops/quantization.cc for the integer ones) and their
// optimized kernels (src/kernels/). The layout level's blocked-layout ops have their own
// contract in src/ops/blocked_ops.h.
//
// Models holding these ops only ever exist inside a Session (level extended and up); they
// are never written by `simplify`. Every attribute below is optional unless marked.
//
// FusedConv(X, W, B?, Z?) -> Y
//   Y = act(Conv(X, W, B) + Z). Conv's attributes (auto_pad, dilations, group,
//   kernel_shape, pads, strides) with Conv's meaning; Z (the residual) has Y's shape.
//   activation: string, one of kActivations below ("" or absent: none);
//   activation_params: floats, as listed there.
//
// FusedMatMul(A, B, Bias?) -> Y
//   Y = act(alpha * op(A) @ op(B) + Bias). MatMul's broadcasting and 1-D promotion rules;
//   op(X) swaps the last two dims of X when trans_a / trans_b (ints, default 0) is set
//   (rank >= 2 only); alpha: float, default 1; Bias: shape [N] (the last dim of Y);
//   activation, activation_params: as FusedConv.
//
// LayerNormalization(X, Scale, B?) -> Y   (com.onnxkit)
//   ONNX opset 17's LayerNormalization for models at an older opset: axis (default -1),
//   epsilon (default 1e-5); only the Y output.
//
// SkipLayerNormalization(X, Skip, Gamma, Beta?, Bias?) -> Y, Sum?
//   Sum = X + Skip + Bias (Skip has X's shape, Bias [C]); Y = LayerNorm over the last axis
//   of Sum with Gamma/Beta ([C]) and epsilon (default 1e-5). Sum is an optional output for
//   the residual that follows.
//
// Gelu(X) -> Y   (com.onnxkit; ONNX opset 20's Gelu for older models)
//   approximate: "none" (default: x * 0.5 * (1 + erf(x / sqrt(2)))) or "tanh"
//   (x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))).
//
// BiasSoftmax(X, Bias) -> Y
//   Y = Softmax(X + Bias) over `axis` (default -1, opset 13 semantics: one axis);
//   Bias broadcasts to X (numpy rules).
//
// Attention(Q, K, V, Mask?, Keep?) -> Y
//   Scaled dot-product attention over heads, per batch and head:
//     S = scale * Q @ K^T + Mask;  S = where(Keep, S, masked_value);  Y = Softmax(S) @ V
//   Q: [B, H, Sq, D]; K: [B, H, Sk, D], or [B, H, D, Sk] when k_transposed = 1; V: [B, H,
//   Sk, Dv]; Y: [B, H, Sq, Dv] (Q, K, V agree on B and H: no broadcasting). Mask (float,
//   additive) and Keep (bool) broadcast to [B, H, Sq, Sk]. scale: float, default 1/sqrt(D);
//   masked_value: float, default -inf. A row whose every entry is masked to -inf gives NaN, as the
//   unfused graph does.
//   q_perm, k_perm, v_perm (ints, default [0, 1, 2, 3]): the input given is X and the operand
//   above is Transpose(X, perm) (so [0, 2, 1, 3] reads heads from [B, S, H, D]); y_perm: the
//   output is Transpose(Y, y_perm). Transposes folded by fuse_transpose_into_attention.
//
// MatMulIntegerToFloat(A, B, a_zero_point?, b_zero_point?, Scale, Bias?) -> Y
//   Y = float(MatMulInteger(A, B, a_zero_point, b_zero_point)) * Scale + Bias: ONNX Runtime's
//   dynamic quantization pattern MatMulInteger -> Cast -> Mul (-> Add) in one op, in that
//   order of float operations (so it equals the unfused graph bit for bit). Inputs 0-3 as
//   MatMulInteger; Scale (float) one value or one per column [N]; Bias (float) [N].
//
// ConvIntegerToFloat(X, W, x_zero_point?, w_zero_point?, Scale, Bias?) -> Y
//   Y = float(ConvInteger(X, W, x_zero_point, w_zero_point)) * Scale + Bias, the same for
//   ConvInteger (its attributes); Scale one value or one per output channel, Bias one per
//   output channel (given flat, [M]).
#pragma once

#include <array>
#include <string_view>

#include "ir/domain.h"  // kOnnxkitDomain, kOnnxkitDomainVersion

namespace onnxkit {

// The activations FusedConv / FusedMatMul accept, and their activation_params (absent
// params take the standalone op's defaults: LeakyRelu 0.01, HardSigmoid 0.2 / 0.5, Clip
// unbounded):
//   Relu; LeakyRelu [alpha]; Clip [min, max]; Sigmoid; Tanh; HardSigmoid [alpha, beta];
//   HardSwish; Silu (x * sigmoid(x)); Gelu (erf form); GeluTanh (tanh form).
inline constexpr std::array<std::string_view, 10> kActivations = {
    "Relu",        "LeakyRelu", "Clip", "Sigmoid", "Tanh",
    "HardSigmoid", "HardSwish", "Silu", "Gelu",    "GeluTanh"};

}  // namespace onnxkit
