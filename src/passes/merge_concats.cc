// Pass merge_concats: A Concat feeding only another Concat along the same axis is flattened
// into it.
//
// Concat(axis a) of [p, Concat(axis a) of [q, r], s] is Concat(axis a) of [p, q, r, s]. The
// inner Concat's output must be read by the outer Concat alone (possibly several times) and
// not be a graph output. Negative axes are compared after normalizing with the rank from
// the types.
#include <optional>
#include <unordered_set>

#include "passes/passes.h"

namespace onnxkit {
namespace {

// The Concat's axis as written (opset < 4: optional, default 1), or nullopt.
std::optional<int64_t> concat_axis(const Node* node, int64_t opset) {
  const Attribute* attr = node->find_attribute("axis");
  if (!attr) return opset < 4 ? std::optional<int64_t>(1) : std::nullopt;
  if (attr->type != AttrType::kInt) return std::nullopt;
  return attr->i;
}

// The rank of a Concat's output, from its output's or any input's type.
std::optional<int64_t> concat_rank(const Node* node) {
  if (auto rank = known_rank(node->output(0))) return rank;
  for (const Value* input : node->inputs()) {
    if (auto rank = known_rank(input)) return rank;
  }
  return std::nullopt;
}

bool same_axis(int64_t a, int64_t b, std::optional<int64_t> rank) {
  if (a == b) return true;
  if ((a < 0) == (b < 0)) return false;  // same sign, different axes
  if (!rank) return false;
  if (a < 0) a += *rank;
  if (b < 0) b += *rank;
  return a == b;
}

size_t merge_concats(Graph& graph, Node* outer, PassContext& context) {
  const int64_t opset = context.opset("");
  if (outer->outputs().size() != 1 || !outer->output(0)) return 0;
  auto outer_axis = concat_axis(outer, opset);
  if (!outer_axis) return 0;
  const std::optional<int64_t> rank = concat_rank(outer);

  // The inner Concats to inline: read by `outer` only, same axis, ours to remove.
  std::unordered_set<Node*> inner;
  for (Value* input : outer->inputs()) {
    if (!input) {
      inner.clear();
      break;
    }
    Node* producer = input->producer();
    if (!is_onnx_op(producer, "Concat") || producer->graph() != &graph) continue;
    if (is_graph_output(input) || kept(input, context)) continue;
    bool only_outer = true;
    for (const Use& use : input->uses()) only_outer = only_outer && use.node == outer;
    if (!only_outer) continue;
    auto axis = concat_axis(producer, opset);
    if (!axis || !same_axis(*axis, *outer_axis, rank)) continue;
    bool complete = true;
    for (const Value* v : producer->inputs()) complete = complete && v;
    if (complete && !producer->inputs().empty()) inner.insert(producer);
  }
  if (inner.empty()) return 0;

  std::vector<Value*> inputs;
  for (Value* input : outer->inputs()) {
    if (inner.count(input->producer())) {
      for (Value* v : input->producer()->inputs()) inputs.push_back(v);
    } else {
      inputs.push_back(input);
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i < outer->inputs().size()) {
      graph.set_node_input(outer, i, inputs[i]);
    } else {
      graph.add_node_input(outer, inputs[i]);
    }
  }
  for (Node* node : inner) graph.remove_node(node);
  return inner.size();
}

}  // namespace

std::unique_ptr<GraphPass> make_merge_concats_pass() {
  return make_rule_pass("merge_concats", {"Concat"}, merge_concats, NodeOrder::kTopological);
}

}  // namespace onnxkit
