// Factories of every pass; pipeline.cc puts them in order. One pass per file in src/passes.
#pragma once

#include <memory>

#include "passes/pass.h"

namespace onnxkit {

// Constant nodes become initializers, so every constant looks alike to the other passes.
std::unique_ptr<GraphPass> make_constant_to_initializer_pass();
// Identity and inference-mode Dropout are removed.
std::unique_ptr<GraphPass> make_eliminate_identity_pass();
// Cast to the same type, Reshape/Flatten to the same shape, identity Transpose, zero Pad, full
// Slice, Expand to the same shape, single-input Concat, single-output Split are removed.
std::unique_ptr<GraphPass> make_eliminate_noop_pass();
// Nodes whose inputs are all constant are computed with the executor and become initializers.
std::unique_ptr<GraphPass> make_constant_folding_pass();
// Shape computations (Shape, Size, Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, arithmetic)
// fold to constants where the dims they read are known, even when other dims stay symbolic.
std::unique_ptr<GraphPass> make_shape_folding_pass();
// BatchNormalization after Conv is folded into the Conv's weights and bias.
std::unique_ptr<GraphPass> make_fuse_conv_bn_pass();
// Add of a per-channel constant after Conv becomes the Conv's bias.
std::unique_ptr<GraphPass> make_fuse_conv_add_pass();
// Mul by a per-channel constant after Conv is folded into the Conv's weights and bias.
std::unique_ptr<GraphPass> make_fuse_conv_mul_pass();
// BatchNormalization after ConvTranspose is folded into its weights and bias.
std::unique_ptr<GraphPass> make_fuse_convtranspose_bn_pass();
// MatMul of a 2-D input by a constant matrix followed by Add of a bias becomes Gemm.
std::unique_ptr<GraphPass> make_fuse_matmul_add_into_gemm_pass();
std::unique_ptr<GraphPass> make_fuse_reshape_gemm_into_matmul_pass();
// Transpose of a Gemm input becomes the Gemm's transA/transB.
std::unique_ptr<GraphPass> make_fuse_transpose_into_gemm_pass();
// A constant-zero Pad before Conv / AveragePool / MaxPool becomes the op's pads.
std::unique_ptr<GraphPass> make_fuse_pad_into_conv_pass();
// Max / Min of a tensor and a one-element constant becomes Clip with that bound.
std::unique_ptr<GraphPass> make_max_min_into_clip_pass();
// Consecutive Transposes become one (or none).
std::unique_ptr<GraphPass> make_merge_transposes_pass();
// A Transpose moves down through elementwise ops, reductions, Softmax and Concat until it meets
// the Transpose that undoes it; both go (channels-last LayerNorm stages in channels-first nets).
std::unique_ptr<GraphPass> make_cancel_transposes_pass();
// Consecutive Reshape/Flatten become one Reshape.
std::unique_ptr<GraphPass> make_merge_reshapes_pass();
// Consecutive Squeeze/Unsqueeze pairs that cancel are removed; consecutive ones of the same kind
// merge.
std::unique_ptr<GraphPass> make_merge_squeeze_unsqueeze_pass();
// Consecutive Slices over different axes merge into one.
std::unique_ptr<GraphPass> make_merge_slices_pass();
// A Concat feeding only another Concat along the same axis is flattened into it.
std::unique_ptr<GraphPass> make_merge_concats_pass();
// If with a constant condition is replaced by the chosen branch.
std::unique_ptr<GraphPass> make_inline_constant_if_pass();
// Nodes computing the same op with the same inputs and attributes are merged.
std::unique_ptr<GraphPass> make_common_subexpression_elimination_pass();
// Initializers with identical contents are merged.
std::unique_ptr<GraphPass> make_dedup_initializers_pass();
// Extended level (com.onnxkit ops, see ops/fused_ops.h):
// float16 / bfloat16 nodes compute in float32, with casts at the region's edges (sessions).
std::unique_ptr<GraphPass> make_compute_fp16_in_fp32_pass();
// MatMulInteger / ConvInteger -> Cast -> Mul(scale) [-> Add(bias)] (ONNX Runtime's dynamic
// quantization) -> MatMulIntegerToFloat / ConvIntegerToFloat.
std::unique_ptr<GraphPass> make_fuse_integer_to_float_pass();
// DQ -> Conv / MatMul (int8 weights, int32 bias) -> Q (QDQ models) -> QLinearConv /
// QLinearMatMul.
std::unique_ptr<GraphPass> make_fuse_qdq_into_qlinear_pass();
// DQ -> Add / Mul / GlobalAveragePool / Sigmoid / LeakyRelu / Concat -> Q into com.microsoft's
// QLinear ops.
std::unique_ptr<GraphPass> make_fuse_qdq_into_qlinear_elementwise_pass();
// DQ -> MaxPool -> Q of one scale and zero point -> MaxPool on the int8 values.
std::unique_ptr<GraphPass> make_fuse_qdq_into_int8_maxpool_pass();
// Conv (or FusedConv) + Add of a same-shaped residual and/or an activation -> FusedConv.
std::unique_ptr<GraphPass> make_fuse_conv_activation_pass();
// MatMul + Add of a constant bias row and/or an activation, and Gemm -> FusedMatMul.
std::unique_ptr<GraphPass> make_fuse_matmul_bias_activation_pass();
// A last-two-dims Transpose of a MatMul operand -> trans_a/trans_b; scalar Mul/Div -> alpha.
std::unique_ptr<GraphPass> make_fuse_transpose_into_matmul_pass();
// Nodes whose outputs nothing reads are removed.
std::unique_ptr<GraphPass> make_dead_code_elimination_pass();
// Initializers nothing reads are removed.
std::unique_ptr<GraphPass> make_remove_unused_initializers_pass();
// Extended level: ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add over the last axes becomes
// LayerNormalization (ONNX from opset 17, com.onnxkit before).
std::unique_ptr<GraphPass> make_fuse_layer_norm_pass();
// Extended level: GELU written with Erf or Tanh becomes com.onnxkit Gelu.
std::unique_ptr<GraphPass> make_fuse_gelu_pass();
// Extended level: a residual Add (+ bias) feeding a last-axis LayerNormalization becomes
// com.onnxkit SkipLayerNormalization (the sum as a second output when something else reads it).
std::unique_ptr<GraphPass> make_fuse_skip_layer_norm_pass();
// Extended level: Softmax over the last axis of Add(X, Bias) becomes com.onnxkit BiasSoftmax.
std::unique_ptr<GraphPass> make_fuse_bias_softmax_pass();
// Extended level: scaled dot-product attention (MatMul, scale, masks, Softmax, MatMul) becomes
// com.onnxkit Attention.
std::unique_ptr<GraphPass> make_fuse_attention_pass();
// Extended level: Transposes of Attention's Q, K, V and Y become its perm attributes.
std::unique_ptr<GraphPass> make_fuse_transpose_into_attention_pass();
// Layout level: conv chains keep their activations in the blocked layout (ops/blocked_ops.h).
std::unique_ptr<GraphPass> make_convert_layout_pass();
// Layout level: int8 convolution chains stay channels-last (ChannelsLastQLinearConv).
std::unique_ptr<GraphPass> make_int8_channels_last_pass();

}  // namespace onnxkit
