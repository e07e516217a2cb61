// ONNX Runtime's com.microsoft transformer ops (ops/transformer_microsoft.cc), what both their
// reference kernels and the optimized ones (kernels/transformer_microsoft.cc) read: Attention's
// and QAttention's attributes, shapes and additive mask exactly as ORT's CPU kernels
// prepare it, and EmbedLayerNormalization's checked operands.
//
// These ops come from files that went through ORT's transformer optimizer
// (onnxruntime.transformers.optimizer, HF Optimum's O2-O4) and its dynamic quantization.
// Semantics follow ORT's docs/ContribOperators.md and its CPU kernels:
//
// Attention(input, weights, bias?, mask_index?, past?, attention_bias?) -> output, present?
//   QKV = input [B, S, Din] @ weights [Din, Dq + Dk + Dv] + bias; Q, K, V split along the
//   last axis (qkv_hidden_sizes, default three equal parts), each [B, S, N, H] read as
//   [B, N, S, H]; K and V follow past [2, B, N, P, H] (present = [2, B, N, P + S, H]);
//   output [B, S, Dv] = per head Softmax(scale * Q K^T + mask + attention_bias) V.
//   mask_index (int32): [B] key lengths (right padding), [2B] ends then starts (left
//   padding), [B, T] or [B, S, T] raw masks (0 masked); masked scores get
//   mask_filter_value (default -10000) added; unidirectional masks keys after the query's
//   position (P + i) with the float minimum. 4-D masks and [3B + 2] are refused, as ORT's CPU
//   kernel refuses them.
// QAttention(input, weight, bias, input_scale, weight_scale, mask_index?, input_zero_point?,
//            weight_zero_point?, past?) -> output, present?
//   QKV = float((input - input_zp) x (weight - weight_zp)) * (input_scale * weight_scale) +
//   bias (int32 products; weight scale and zero point per tensor or per column), then as
//   Attention.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/kernel.h"

namespace onnxkit {

struct MsAttentionAttributes {
  // Fails naming the node on attributes onnxkit does not run (do_rotary,
  // past_present_share_buffer) or num_heads < 1.
  explicit MsAttentionAttributes(const KernelCreateContext& context);

  int64_t num_heads = 1;
  bool unidirectional = false;
  float mask_filter_value = -10000.0f;
  std::optional<float> scale;
  std::vector<int64_t> qkv_hidden_sizes;  // empty: three equal parts
};

// The sizes of one Attention / QAttention run.
struct MsAttentionShape {
  int64_t batch = 0, sequence = 0, input_hidden = 0;
  int64_t q_hidden = 0, k_hidden = 0, v_hidden = 0;  // Dq = Dk, Dv
  int64_t head_size = 0, v_head_size = 0;
  int64_t past_sequence = 0, total_sequence = 0;
  float scale = 1;  // the attribute, or 1 / sqrt(head_size)
  int64_t qkv_width() const { return q_hidden + k_hidden + v_hidden; }
};

// Checks input [B, S, Din], weights [Din, D] (its shape), bias [D] (when given) and past, and
// computes the sizes; fails naming the node (num_heads not dividing a hidden size, ...).
MsAttentionShape ms_attention_shape(const KernelContext& context,
                                    const MsAttentionAttributes& attributes, const Shape& input,
                                    const Shape& weights, const Tensor* bias, const Tensor* past);

// The additive float mask of the scores as ORT's CPU kernel builds it (PrepareMask), plus
// attention_bias: values over `dims`, [B, 1, S, T] or, with an attention_bias that varies by
// head, [B, N, S, T]. Empty (dims all 0) when there is neither a mask, nor unidirectional,
// nor an attention_bias.
struct MsAttentionMask {
  std::vector<float> values;
  std::array<int64_t, 4> dims{};
  bool empty() const { return values.empty(); }
  // Strides over the scores [B, N, S, T] (0 along a broadcast head axis).
  std::array<int64_t, 4> strides() const {
    return {dims[1] * dims[2] * dims[3], dims[1] == 1 ? 0 : dims[2] * dims[3], dims[3], 1};
  }
};
MsAttentionMask ms_attention_mask(const KernelContext& context,
                                  const MsAttentionAttributes& attributes,
                                  const MsAttentionShape& shape, const Tensor* mask_index,
                                  const Tensor* attention_bias);

// EmbedLayerNormalization's checks: input_ids [B, S] int32 (segment_ids, mask, position_ids
// likewise, position_ids also [1, S]); tables 2-D with Hidden columns; gamma and beta
// [Hidden]. Fails naming the node and the input. Returns Hidden.
struct EmbedLayerNormInputs {
  const Tensor* input_ids = nullptr;
  const Tensor* segment_ids = nullptr;
  const Tensor* word = nullptr;
  const Tensor* position = nullptr;
  const Tensor* segment = nullptr;
  const Tensor* gamma = nullptr;
  const Tensor* beta = nullptr;
  const Tensor* mask = nullptr;
  const Tensor* position_ids = nullptr;
};
int64_t check_embed_layer_norm(const KernelContext& context, const EmbedLayerNormInputs& in);

// Row indices of token (b, s) in the word, position and segment tables, checked against each
// table's rows (an id out of range fails naming the input and the token).
struct EmbeddingRows {
  int64_t word = 0, position = 0, segment = -1;
};
EmbeddingRows embedding_rows(const KernelContext& context, const EmbedLayerNormInputs& in,
                             int64_t b, int64_t s);

// mask_index output of (Q)EmbedLayerNormalization: per batch row, how many mask entries are
// 1 (0 for every row without a mask), as ORT's CPU kernel counts.
std::vector<int32_t> embed_mask_index(const EmbedLayerNormInputs& in, int64_t batch,
                                      int64_t sequence);

// (Skip)(Simplified)LayerNormalization's checks: input [B, S, Hidden] or [tokens, Hidden];
// skip the input's shape, or [1, S, Hidden] / [S, Hidden] for every batch; gamma, beta and
// bias (inputs 2 to `bias_index`, optional from 3) [Hidden] of the input's type. Fails
// naming the node. Returns Hidden.
int64_t check_skip_layer_norm(const KernelContext& context, const Tensor& x, const Tensor& skip,
                              size_t bias_index);

}  // namespace onnxkit
