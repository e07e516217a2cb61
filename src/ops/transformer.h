// ONNX's Attention (ai.onnx 23, 24, 25; ops/transformer.cc) as the reference kernel and the
// optimized one (kernels/attention.cc) both read it: its attributes, parsed once.
#pragma once

#include <cstdint>
#include <optional>

#include "ops/kernel.h"

namespace onnxkit {

struct OnnxAttentionAttributes {
  // `version` is the registration's since-version (23, 24 or 25): the window attributes
  // exist from 25 on.
  OnnxAttentionAttributes(const KernelCreateContext& context, int64_t version);

  int64_t version = 23;
  bool is_causal = false;
  // Heads of Q and of K/V for 3-D inputs ([B, S, heads * head_size]); 0 when not given.
  int64_t q_num_heads = 0;
  int64_t kv_num_heads = 0;
  // The scores' scale; 1 / sqrt(head_size) when absent.
  std::optional<float> scale;
  // softcap * tanh(scores / softcap) before the mask when > 0.
  float softcap = 0;
  // The DType the softmax runs in (0: the input's).
  int64_t softmax_precision = 0;
  // What output 3 holds: 0 the scaled Q @ K^T (softcapped when softcap is set), 1 the
  // same, 2 that plus the mask, 3 the softmax.
  int64_t qk_matmul_output_mode = 0;
  // Sliding window (25 on): a query at absolute position p sees keys in [p - left, p +
  // right]; -1 leaves that side open.
  int64_t left_window_size = -1;
  int64_t right_window_size = -1;
};

}  // namespace onnxkit
