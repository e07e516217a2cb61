// Pass merge_squeeze_unsqueeze: Consecutive Squeeze/Unsqueeze pairs that cancel are removed;
// consecutive ones of the same kind merge.
//
//   Unsqueeze(a) -> Squeeze(a)      = x (the inserted 1-dims are removed again)
//   Squeeze(a)   -> Unsqueeze(a)    = x (Squeeze only succeeds when those dims are 1)
//   Unsqueeze(a1) -> Unsqueeze(a2)  = Unsqueeze(a2 + a1 mapped into the final rank)
//   Squeeze(b1)  -> Squeeze(b2)     = Squeeze(b1 + b2 mapped back onto the input's dims)
// Axes are an attribute before opset 13 and a (constant) input from 13 on; a Squeeze without
// axes counts only when the input's dims are all known.
#include <algorithm>
#include <optional>
#include <set>
#include <unordered_set>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// The axes of a Squeeze/Unsqueeze as written (possibly negative), or nullopt when they are
// not known: a non-constant input, or a Squeeze without axes whose input has unknown dims
// (then the axes are those of the 1-dims).
std::optional<std::vector<int64_t>> raw_axes(const Node* node, int64_t opset,
                                             const PassContext& context) {
  if (opset < 13) {
    const Attribute* attr = node->find_attribute("axes");
    if (attr) {
      if (attr->type != AttrType::kInts) return std::nullopt;
      return attr->ints;
    }
  } else if (const Value* input = node->input(1)) {
    const Tensor* tensor = constant_value(input, context);
    if (!tensor || tensor->rank() > 1) return std::nullopt;
    if (tensor->dtype() != DType::kInt64) return std::nullopt;
    return read_int64s(*tensor, "axes");
  }
  if (node->op_type() != "Squeeze" || !node->input(0)) return std::nullopt;
  const ValueType& type = node->input(0)->type();
  if (!type.is_tensor() || !type.shape) return std::nullopt;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < type.shape->size(); ++i) {
    const Dim& dim = (*type.shape)[i];
    if (!dim.is_known()) return std::nullopt;
    if (dim.value == 1) axes.push_back(static_cast<int64_t>(i));
  }
  return axes;
}

// Sorted axes in [0, rank); nullopt when out of range, repeated, or negative with the rank
// unknown.
std::optional<std::vector<int64_t>> normalized(std::vector<int64_t> axes,
                                               std::optional<int64_t> rank) {
  for (int64_t& axis : axes) {
    if (axis < 0) {
      if (!rank) return std::nullopt;
      axis += *rank;
    }
    if (axis < 0 || (rank && axis >= *rank)) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// True when `a` and `b`, both relative to the same (maybe unknown) rank, are the same axes.
bool same_axes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::optional<int64_t> rank) {
  auto na = normalized(a, rank);
  auto nb = normalized(b, rank);
  if (na && nb) return *na == *nb;
  // Rank unknown: identical sets as written still name the same axes.
  std::vector<int64_t> sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return sa == sb && std::adjacent_find(sa.begin(), sa.end()) == sa.end();
}

// Positions (ascending) of the result of Unsqueeze(first) -> Unsqueeze(second): `second`'s
// axes plus where `first`'s inserted dims end up among the positions `second` leaves alone.
std::vector<int64_t> compose_unsqueeze(const std::vector<int64_t>& first,
                                       const std::vector<int64_t>& second) {
  std::set<int64_t> result(second.begin(), second.end());
  const int64_t last = first.empty() ? -1 : first.back();
  int64_t k = 0;  // index in the first Unsqueeze's output
  for (int64_t p = 0; k <= last; ++p) {
    if (std::binary_search(second.begin(), second.end(), p)) continue;
    if (std::binary_search(first.begin(), first.end(), k)) result.insert(p);
    ++k;
  }
  return {result.begin(), result.end()};
}

// Axes of the input removed by Squeeze(first) -> Squeeze(second): `second` indexes the
// dims `first` left.
std::vector<int64_t> compose_squeeze(const std::vector<int64_t>& first,
                                     const std::vector<int64_t>& second) {
  std::set<int64_t> result(first.begin(), first.end());
  const int64_t last = second.empty() ? -1 : second.back();
  int64_t q = 0;  // index in the first Squeeze's output
  for (int64_t p = 0; q <= last; ++p) {
    if (std::binary_search(first.begin(), first.end(), p)) continue;
    if (std::binary_search(second.begin(), second.end(), q)) result.insert(p);
    ++q;
  }
  return {result.begin(), result.end()};
}

// Gives `node` the axes `axes`, in the form of the opset.
void set_axes(Graph& graph, Node* node, const std::vector<int64_t>& axes, int64_t opset) {
  if (opset < 13) {
    node->set_attribute(ints_attribute("axes", axes));
    return;
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  Value* value = graph.add_initializer(graph.unique_name(node->output(0)->name() + "_axes"),
                                       Tensor::from_vector(DType::kInt64, {n}, axes));
  value->set_type(ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(n)}));
  if (node->inputs().size() > 1) {
    graph.set_node_input(node, 1, value);
  } else {
    graph.add_node_input(node, value);
  }
}

size_t merge_squeeze_unsqueeze(Graph& graph, Node* second, PassContext& context) {
  const int64_t opset = context.opset("");
  const bool second_squeeze = is_onnx_op(second, "Squeeze");
  if (!second_squeeze && !is_onnx_op(second, "Unsqueeze")) return 0;
  Value* middle = second->input(0);
  if (!middle || second->outputs().size() != 1 || !second->output(0)) return 0;
  Node* first = middle->producer();
  if (!first || first->graph() != &graph) return 0;  // outer nodes are not ours to edit
  const bool first_squeeze = is_onnx_op(first, "Squeeze");
  if (!first_squeeze && !is_onnx_op(first, "Unsqueeze")) return 0;
  Value* x = first->input(0);
  if (!x) return 0;
  auto axes1 = raw_axes(first, opset, context);
  auto axes2 = raw_axes(second, opset, context);
  if (!axes1 || !axes2) return 0;

  std::optional<int64_t> x_rank = known_rank(x);
  std::optional<int64_t> middle_rank = known_rank(middle);
  const int64_t n1 = static_cast<int64_t>(axes1->size());
  if (!middle_rank && x_rank) middle_rank = first_squeeze ? *x_rank - n1 : *x_rank + n1;
  if (!x_rank && middle_rank) x_rank = first_squeeze ? *middle_rank + n1 : *middle_rank - n1;

  if (first_squeeze != second_squeeze) {
    // Cancelling pair: Unsqueeze -> Squeeze compares axes of the middle value; Squeeze ->
    // Unsqueeze those of x (the Unsqueeze's output has x's rank when the counts match).
    if (axes1->size() != axes2->size()) return 0;
    if (!same_axes(*axes1, *axes2, first_squeeze ? x_rank : middle_rank)) return 0;
    Value* y = second->output(0);
    if (kept(y, context)) return 0;
    bypass_node(graph, second, y, x, y->name());
  } else {
    // Same kind: one node with the composed axes, worth it only when the first goes.
    if (middle->uses().size() != 1 || is_graph_output(middle) || kept(middle, context)) {
      return 0;
    }
    std::vector<int64_t> axes;
    if (first_squeeze) {
      auto b1 = normalized(*axes1, x_rank);
      auto b2 = normalized(*axes2, middle_rank);
      if (!b1 || !b2) return 0;
      axes = compose_squeeze(*b1, *b2);
    } else {
      std::optional<int64_t> out_rank;
      if (middle_rank) out_rank = *middle_rank + static_cast<int64_t>(axes2->size());
      auto a1 = normalized(*axes1, middle_rank);
      auto a2 = normalized(*axes2, out_rank);
      if (!a1 || !a2) return 0;
      axes = compose_unsqueeze(*a1, *a2);
    }
    set_axes(graph, second, axes, opset);
    graph.set_node_input(second, 0, x);
  }
  if (is_unused(middle) && !kept(middle, context)) {
    graph.remove_node(first);
  }
  return 1;
}

}  // namespace

std::unique_ptr<GraphPass> make_merge_squeeze_unsqueeze_pass() {
  return make_rule_pass("merge_squeeze_unsqueeze", {"Squeeze", "Unsqueeze"},
                        merge_squeeze_unsqueeze, NodeOrder::kTopological);
}

}  // namespace onnxkit
