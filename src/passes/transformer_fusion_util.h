// Helpers of the transformer fusion passes (fuse_layer_norm, fuse_gelu, fuse_skip_layer_norm,
// fuse_bias_softmax, fuse_attention): matching chains of single-use values, reading scalar
// constants and static shapes, and replacing a matched subgraph by one fused node.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace onnxkit {

// What a fusion may remove: values read by nothing but the matched nodes.
class FusionScope {
 public:
  FusionScope(Graph& graph, const PassContext& context) : graph_(graph), context_(context) {}

  Graph& graph() const { return graph_; }
  const PassContext& context() const { return context_; }

  // The producer of `value` when it is the standard op `op_type` of this graph.
  Node* producer(const Value* value, std::string_view op_type) const;
  // True when `value` is read exactly once (one input of one node of this graph), is no
  // graph output, no value the user keeps and no output of a nested subgraph: it may vanish.
  bool single_use(const Value* value) const;
  // The node reading `value` when single_use(value).
  Node* only_reader(const Value* value) const;
  // True when a fusion may move the readers of `value` to another value: not when a nested
  // subgraph returns it directly (such a value stays with its producer).
  bool replaceable(const Value* value) const { return !value->returned_by_subgraph(); }

 private:
  Graph& graph_;
  const PassContext& context_;
};

// Calls `fuse(node)` on the graph's nodes until one returns true, then starts over (a fusion
// removes nodes, so the node list is taken afresh); returns how many fusions happened. The
// graph is left in topological order.
size_t fuse_everywhere(Graph& graph, const std::function<bool(Node*)>& fuse);

// A transformer fusion: tries to fuse the subgraph around `node`; true when it did.
using FusionRule = std::function<bool(const FusionScope& scope, Node* node)>;
// A pass named `name` (a literal) that is one fusion rule, run by fuse_everywhere.
std::unique_ptr<GraphPass> make_fusion_pass(std::string_view name, FusionRule fuse);

// The value of a one-element float constant, or nullopt.
std::optional<double> scalar_constant(const Value* value, const PassContext& context);
// True when `value` is within a relative `tolerance` of `expected` (exporters round their
// constants: 1.4142135 for sqrt(2), 0.044715 as 0.044714998).
bool near(double value, double expected, double tolerance = 1e-4);

// For a binary node with a scalar constant operand: the other operand and the constant.
struct ScalarOperand {
  Value* other = nullptr;
  double constant = 0;
  size_t other_index = 0;
};
std::optional<ScalarOperand> scalar_operand(const Node* node, const PassContext& context);

// The element type / dims of a tensor value, when its type (or its initializer) says.
DType dtype_of(const Value* value);
std::optional<std::vector<Dim>> dims_of(const Value* value);
std::optional<int64_t> rank_of(const Value* value);
// True when two dims are certainly equal: the same number or the same symbol.
bool same_dim(const Dim& a, const Dim& b);
// True when both shapes are known and every dim is same_dim.
bool same_shape(const Value* a, const Value* b);
// True unless the dims are certainly different (different numbers) or one is a known 1 and
// the other is not known (the usual broadcast), so that equality can be left to the fused
// kernel's run-time check.
bool may_equal(const Dim& a, const Dim& b);

// Imports com.onnxkit (kOnnxkitDomainVersion) into the model when it does not yet.
void import_onnxkit_domain(Model& model);

// A new int64 initializer [n] holding `values`.
Value* int64_constant(Graph& graph, const std::string& prefix, const std::vector<int64_t>& values);

// Finishes a fusion: each `fused` value takes over the readers, the type and (once `old` is
// gone) the name of its `old` value; then the `matched` nodes whose outputs nothing reads
// any more are removed.
void replace_subgraph(Graph& graph, const std::vector<std::pair<Value*, Value*>>& old_and_fused,
                      const std::vector<Node*>& matched);

}  // namespace onnxkit
