// Helpers of the extended-level passes that build com.onnxkit FusedConv / FusedMatMul
// (fuse_conv_activation, fuse_matmul_bias_activation, fuse_transpose_into_matmul).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace onnxkit::linear_fusion {

// Adds the com.onnxkit opset import to the model when it is missing.
void import_onnxkit_domain(const PassContext& context);

// True when `value` can vanish into a fusion: exactly `readers` node inputs read it, it is
// not a graph output and the user did not ask to keep it.
bool fusable_intermediate(const Value* value, const PassContext& context, size_t readers = 1);

// An activation reading `x` that FusedConv / FusedMatMul can take (a kActivations entry).
struct ActivationMatch {
  std::string name;
  std::vector<float> params;
  std::vector<Node*> nodes;  // the nodes it replaces, in order; the last one gives the result
};
// The activation that is the only reader of `x` (for Silu: Sigmoid(x) and the Mul of x by
// it; HardSwish also as Paddle writes it, x * Clip(x + 3, 0, 6) / 6), or nullopt. `x` must be a
// fusable intermediate; constant Clip bounds only.
std::optional<ActivationMatch> match_activation(const Value* x, const PassContext& context);

// Replaces `node` by a com.onnxkit `op_type` node with the same inputs and outputs (the
// output values stay, so their names and types do), in the same place; copies the
// attributes when `copy_attributes`. Imports the domain. Returns the new node.
Node* promote_to_onnxkit(Graph& graph, Node* node, const std::string& op_type, bool copy_attributes,
                         const PassContext& context);

// `fused` takes over the output of the last node of `chain` (nodes that read `fused`'s
// output, in order): it moves to that node's place, its old output and the chain go (with
// constants only they read), and its name records what it swallowed.
void absorb_chain(Graph& graph, Node* fused, const std::vector<Node*>& chain);

// Removes `value` when it is an initializer of `graph` nothing reads any more (a bias or
// bound a fusion replaced), so the session does not hold it.
void drop_if_unused_initializer(Graph& graph, Value* value);

// Sets `activation` / `activation_params` on a FusedConv / FusedMatMul.
void set_activation(Node* node, const ActivationMatch& activation);
// True when the node already applies an activation.
bool has_activation(const Node* node);

void set_int_attribute(Node* node, const std::string& name, int64_t value);
void set_float_attribute(Node* node, const std::string& name, float value);
float float_attribute(const Node* node, std::string_view name, float fallback);

// True when both types are tensors of the same element type and provably the same shape
// (every dim known and equal, or the same named symbol).
bool same_tensor_type(const ValueType& a, const ValueType& b);

// A float scalar constant (one element, rank <= max_rank) as double, or nullopt.
std::optional<double> scalar_constant(const Value* value, const PassContext& context,
                                      size_t max_rank);

}  // namespace onnxkit::linear_fusion
