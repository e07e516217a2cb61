// Helpers of the fusion passes that fold parameters into Conv / ConvTranspose weights, and
// of the passes that read an activation's constants.
#pragma once

#include <optional>
#include <vector>

#include "onnxkit/tensor.h"
#include "passes/pass.h"

namespace onnxkit {

// Float tensor values (float, double, float16, bfloat16) as doubles: fused weights are
// computed in double and stored back in the weight's own type.
std::vector<double> to_doubles(const Tensor& tensor);
Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& values);

// `t` split into runs.size() equal runs of consecutive values, run r multiplied by runs[r]
// (each product in double, stored in t's type), without a double copy of the whole tensor:
// folding into the weights of a model's convs would otherwise write twice its size.
Tensor scale_runs(const Tensor& t, const std::vector<double>& runs);

// A constant float vector of exactly `n` values (a per-channel BatchNorm parameter), or nullopt.
std::optional<std::vector<double>> channel_param(const Value* value, int64_t n,
                                                 const PassContext& context);

// One value per channel when `c`, broadcast against a Conv output of rank `rank` with
// `channels` channels, leaves the output's shape alone and varies only along axis 1.
std::optional<std::vector<double>> per_channel(const Tensor& c, size_t rank, int64_t channels);

// A binary node (Add, Mul) of a Conv output and a constant that a fold into the Conv may
// replace: the Conv is of this graph, and its output has no other reader, is no graph output
// and is not kept (it changes meaning).
struct ConvWithConstant {
  Node* conv = nullptr;
  Value* conv_output = nullptr;
  const Tensor* constant = nullptr;
};
std::optional<ConvWithConstant> match_conv_with_constant(Graph& graph, Node* binary,
                                                         const PassContext& context);
// Ends such a fold: the binary node's readers read the Conv's output, and the node goes.
void remove_folded_binary(Graph& graph, Node* binary, Value* conv_output);

// Clip's bounds (attributes before opset 11, constant inputs after) as [min, max], a missing
// bound as the float range's end; nullopt when a bound is not a constant scalar.
std::optional<std::vector<float>> clip_bounds(const Node* clip, const PassContext& context);

// True when BatchNormalization `bn` certainly runs in inference mode at `opset`.
bool inference_mode(const Node* bn, int64_t opset);

}  // namespace onnxkit
