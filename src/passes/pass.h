// Graph passes: small named rewrites run by the pipeline (pipeline.h) to a fixed point.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/model.h"
#include "ops/registry.h"

namespace onnxkit {

// What every pass may read: the model (opsets), thresholds, and which nodes it must leave.
struct PassContext {
  Model* model = nullptr;
  // Where constant folding takes kernels from and passes read op traits; nullptr: the
  // built-in registry.
  const OpRegistry* registry = nullptr;
  // Which kernels constant folding evaluates with (a session folds with its own tier).
  KernelTier kernel_tier = KernelTier::kReference;
  // Constant folding: outputs larger than this are not folded, nor folds that grow the
  // model by more than this (Tile, Expand, ConstantOfShape included).
  uint64_t tensor_size_threshold = uint64_t{1536} << 20;  // 1.5 GB, as onnxsim
  // Initializers whose values may change after export (--mutable-initializer): not folded.
  bool mutable_initializers = false;
  // Sessions: a Transpose of a weight (1 MiB or more) read only by MatMul / Gemm is left for
  // the fusions to turn into trans_b rather than folded into a transposed copy, which the
  // kernels would hold beside their own packed one.
  bool keep_weight_transposes = false;
  // Names of graph outputs the user wants removed (--unused-output) are already gone; these
  // are values that must survive any rewrite (graph outputs are always kept).
  std::set<std::string> keep_values;
  // Why foldable-looking nodes were not folded, keyed by the node's first output name
  // ("over the size threshold", "non-deterministic", "no kernel", ...): for --explain.
  std::map<std::string, std::string> not_folded;
  // Set by the pipeline when it runs ONNX shape inference: re-infers every value's type now
  // (a pass that renamed dims can see the new names propagate without waiting a round).
  std::function<void()> refresh_shapes;

  int64_t opset(std::string_view domain) const { return model->opset_version(domain); }
  const OpRegistry& ops() const;
  // What the registry knows of `node`'s op at the model's opset (defaults for unknown ops).
  const OpTraits& traits(const Node* node) const;
};

class GraphPass {
 public:
  virtual ~GraphPass() = default;
  // Stable name: the CLI's --skip-optimization and reports use it.
  virtual std::string_view name() const = 0;
  // Rewrites `graph` (not its subgraphs: the pipeline visits those) and returns how many
  // changes it made (0 = nothing to do).
  virtual size_t run(Graph& graph, PassContext& context) = 0;
};

// In which order a rule pass visits the nodes (a snapshot taken before its first rewrite).
enum class NodeOrder { kListed, kTopological };

// A rule's rewrite: applies the rule at `node` when it matches and returns how many changes
// that made (0: it did not apply). It may remove `node` and nodes visited before it, not
// nodes still ahead.
using NodeRewrite = std::function<size_t(Graph& graph, Node* node, PassContext& context)>;

// A pass that is one rule: `rewrite` tried at each node of the standard (ai.onnx) op types
// `op_types` (empty: at every node), counting the changes. Most passes are one rule; they
// state their name (a literal: the pass keeps a view of it), their targets and their
// rewrite, and leave the visit to this.
std::unique_ptr<GraphPass> make_rule_pass(std::string_view name,
                                          std::vector<std::string_view> op_types,
                                          NodeRewrite rewrite,
                                          NodeOrder order = NodeOrder::kListed);

// ---- helpers passes share ----

// The constant tensor `value` holds: an initializer that is not also a graph input (graph
// inputs with initializers are defaults a caller may override). nullptr otherwise.
const Tensor* constant_value(const Value* value, const PassContext& context);
// True when nothing reads `value`: no use (Value::uses()) and not a graph output of its graph.
bool is_unused(const Value* value);
// True when `value` is an output of its own graph.
bool is_graph_output(const Value* value);
// True when replace_value(from, to) keeps the graph's interface: not when `from` is a graph
// output and `to` is a graph input, another output, or a value of an enclosing graph (the
// output would change its name; such a node has to stay, e.g. as an Identity).
bool can_replace(const Value* from, const Value* to);
// An INT attribute's value, or `fallback` when it is absent or of another type.
int64_t int_attr(const Node* node, std::string_view name, int64_t fallback);
// True when the user asked to keep `value` (PassContext::keep_values).
bool kept(const PassContext& context, const Value* value);
inline bool kept(const Value* value, const PassContext& context) {
  return kept(context, value);
}

// Attributes built by name and value.
Attribute float_attribute(std::string name, float value);
Attribute int_attribute(std::string name, int64_t value);
Attribute ints_attribute(std::string name, std::vector<int64_t> values);
Attribute string_attribute(std::string name, std::string value);
Attribute tensor_attribute(std::string name, Tensor value);
Attribute graph_attribute(std::string name, std::unique_ptr<Graph> graph);

// The permutation Transpose `node` applies: its perm, or (absent) the reversed axes of
// `rank`. nullopt when perm is malformed, of another rank than a given `rank`, or absent
// with no rank known.
std::optional<std::vector<int64_t>> transpose_permutation(const Node* node,
                                                          std::optional<int64_t> rank);
bool is_identity_permutation(const std::vector<int64_t>& perm);
// The permutation of Transpose(second) applied after Transpose(first): c[i] = first[second[i]].
std::vector<int64_t> compose_permutations(const std::vector<int64_t>& first,
                                          const std::vector<int64_t>& second);
// The rank of `value`'s tensor type when its shape is known (nullptr: nullopt).
std::optional<int64_t> known_rank(const Value* value);

// Replaces every use of `from` with `to`. When `from` is a graph output, `to` takes over its
// name, so the model's inputs and outputs keep their names. Requires can_replace.
void replace_value(Graph& graph, Value* from, Value* to);
// Removes `node`, whose output `y` computes the value `x` again: y's readers read x. Where
// can_replace(y, x) says no (y is a graph output), an Identity of x placed at `node` and
// named graph.unique_name(identity_stem) keeps the interface.
void bypass_node(Graph& graph, Node* node, Value* y, Value* x, const std::string& identity_stem);

// The nodes of `order` that `roles` names and whose chain (the named nodes connected through
// the values they pass each other) holds at least `min_anchors` nodes whose role
// is_anchor(role) says anchors the chain: what the layout passes convert, in `order`.
template <typename Role, typename IsAnchor>
std::vector<Node*> nodes_of_anchored_chains(const std::vector<Node*>& order,
                                            const std::map<const Node*, Role>& roles,
                                            IsAnchor is_anchor, int min_anchors) {
  std::map<const Node*, const Node*> parent;
  for (const auto& [node, role] : roles) parent[node] = node;
  auto find = [&](const Node* node) {
    while (parent[node] != node) node = parent[node] = parent[parent[node]];
    return node;
  };
  for (const auto& [node, role] : roles) {
    for (const Value* input : node->inputs()) {
      const Node* producer = input ? input->producer() : nullptr;
      if (producer && roles.count(producer)) parent[find(node)] = find(producer);
    }
  }
  std::map<const Node*, int> anchors;
  for (const auto& [node, role] : roles) anchors[find(node)] += is_anchor(role) ? 1 : 0;
  std::vector<Node*> chosen;
  for (Node* node : order) {
    if (roles.count(node) && anchors[find(node)] >= min_anchors) chosen.push_back(node);
  }
  return chosen;
}

}  // namespace onnxkit
