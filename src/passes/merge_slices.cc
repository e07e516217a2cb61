// Pass merge_slices: Consecutive Slices over different axes merge into one.
//
// Slices of different axes are independent, so Slice -> Slice (first read by nothing else,
// all parameters constant) is one Slice with both parameter lists. An axis both slice is
// merged too when both steps are 1 and the input's dim is known: the clamped ranges compose
// exactly. Before opset 10 the parameters are attributes (no steps); from 10 on inputs; the
// merged node keeps the opset's form.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_set>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// One sliced axis.
struct AxisSlice {
  int64_t start = 0;
  int64_t end = 0;
  int64_t step = 1;
};

std::optional<std::vector<int64_t>> ints_attribute_values(const Node* node, std::string_view name) {
  const Attribute* attr = node->find_attribute(name);
  if (!attr || attr->type != AttrType::kInts) return std::nullopt;
  return attr->ints;
}

std::optional<std::vector<int64_t>> constant_ints(const Value* value, const PassContext& context) {
  const Tensor* tensor = constant_value(value, context);
  if (!tensor || tensor->rank() != 1) return std::nullopt;
  if (tensor->dtype() != DType::kInt64 && tensor->dtype() != DType::kInt32) return std::nullopt;
  return read_int64s(*tensor, "slice parameter");
}

// The slice `node` applies, keyed by normalized axis; nullopt when a parameter is not
// constant or malformed, or an axis is negative with the rank unknown.
std::optional<std::map<int64_t, AxisSlice>> read_slice(const Node* node, int64_t opset,
                                                       std::optional<int64_t> rank,
                                                       const PassContext& context) {
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (opset < 10) {
    starts = ints_attribute_values(node, "starts");
    ends = ints_attribute_values(node, "ends");
    if (node->find_attribute("axes")) {
      axes = ints_attribute_values(node, "axes");
      if (!axes) return std::nullopt;
    }
  } else {
    if (!node->input(1) || !node->input(2)) return std::nullopt;
    starts = constant_ints(node->input(1), context);
    ends = constant_ints(node->input(2), context);
    if (node->input(3)) {
      axes = constant_ints(node->input(3), context);
      if (!axes) return std::nullopt;
    }
    if (node->input(4)) {
      steps = constant_ints(node->input(4), context);
      if (!steps) return std::nullopt;
    }
  }
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  const size_t n = starts->size();
  if (!axes) {
    axes.emplace(n);
    for (size_t i = 0; i < n; ++i) (*axes)[i] = static_cast<int64_t>(i);
  }
  if (!steps) steps.emplace(n, 1);
  if (axes->size() != n || steps->size() != n) return std::nullopt;
  std::map<int64_t, AxisSlice> slice;
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = (*axes)[i];
    if (axis < 0) {
      if (!rank) return std::nullopt;
      axis += *rank;
    }
    if (axis < 0 || (rank && axis >= *rank) || (*steps)[i] == 0) return std::nullopt;
    if (!slice.emplace(axis, AxisSlice{(*starts)[i], (*ends)[i], (*steps)[i]}).second) {
      return std::nullopt;  // repeated axis
    }
  }
  return slice;
}

// Index `v` of a step-1 slice of a dim of size `dim`, as Slice clamps it.
int64_t clamp_index(int64_t v, int64_t dim) {
  if (v < 0) v += dim;
  return std::clamp<int64_t>(v, 0, dim);
}

// Slice `second` of the result of slice `first` on an axis of size `dim` (steps 1).
AxisSlice compose(const AxisSlice& first, const AxisSlice& second, int64_t dim) {
  const int64_t b1 = clamp_index(first.start, dim);
  const int64_t length1 = std::max<int64_t>(0, clamp_index(first.end, dim) - b1);
  const int64_t b2 = clamp_index(second.start, length1);
  const int64_t length2 = std::max<int64_t>(0, clamp_index(second.end, length1) - b2);
  return {b1 + b2, b1 + b2 + length2, 1};
}

Value* add_ints_initializer(Graph& graph, const std::string& prefix,
                            const std::vector<int64_t>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  Value* value = graph.add_initializer(graph.unique_name(prefix),
                                       Tensor::from_vector(DType::kInt64, {n}, values));
  value->set_type(ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(n)}));
  return value;
}

// Writes `slice` into `node`'s parameters in the opset's form.
void write_slice(Graph& graph, Node* node, const std::map<int64_t, AxisSlice>& slice,
                 int64_t opset) {
  std::vector<int64_t> starts, ends, axes, steps;
  bool unit_steps = true;
  for (const auto& [axis, s] : slice) {
    axes.push_back(axis);
    starts.push_back(s.start);
    ends.push_back(s.end);
    steps.push_back(s.step);
    unit_steps = unit_steps && s.step == 1;
  }
  if (opset < 10) {
    node->set_attribute(ints_attribute("starts", starts));
    node->set_attribute(ints_attribute("ends", ends));
    node->set_attribute(ints_attribute("axes", axes));
    return;
  }
  const std::string prefix = node->output(0)->name();
  std::vector<Value*> params = {add_ints_initializer(graph, prefix + "_starts", starts),
                                add_ints_initializer(graph, prefix + "_ends", ends),
                                add_ints_initializer(graph, prefix + "_axes", axes)};
  if (!unit_steps) params.push_back(add_ints_initializer(graph, prefix + "_steps", steps));
  while (node->inputs().size() > params.size() + 1) {
    graph.remove_node_input(node, node->inputs().size() - 1);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (i + 1 < node->inputs().size()) {
      graph.set_node_input(node, i + 1, params[i]);
    } else {
      graph.add_node_input(node, params[i]);
    }
  }
}

size_t merge_slices(Graph& graph, Node* second, PassContext& context) {
  const int64_t opset = context.opset("");
  Value* middle = second->input(0);
  if (!middle || second->outputs().size() != 1 || !second->output(0)) return 0;
  Node* first = middle->producer();
  if (!is_onnx_op(first, "Slice") || first->graph() != &graph) return 0;
  if (middle->uses().size() != 1 || is_graph_output(middle) || kept(middle, context)) return 0;
  Value* x = first->input(0);
  if (!x) return 0;

  std::optional<int64_t> rank = known_rank(x);
  if (!rank) rank = known_rank(middle);
  auto slice1 = read_slice(first, opset, rank, context);
  auto slice2 = read_slice(second, opset, rank, context);
  if (!slice1 || !slice2) return 0;

  std::map<int64_t, AxisSlice> merged = *slice1;
  bool ok = true;
  for (const auto& [axis, s2] : *slice2) {
    auto it = merged.find(axis);
    if (it == merged.end()) {
      merged.emplace(axis, s2);
      continue;
    }
    // The same axis twice: exact only for steps 1 and a known dim.
    const ValueType& type = x->type();
    const bool dim_known = type.is_tensor() && type.shape &&
                           axis < static_cast<int64_t>(type.shape->size()) &&
                           (*type.shape)[static_cast<size_t>(axis)].is_known();
    if (!dim_known || it->second.step != 1 || s2.step != 1) {
      ok = false;
      break;
    }
    it->second = compose(it->second, s2, (*type.shape)[static_cast<size_t>(axis)].value);
  }
  if (!ok) return 0;

  write_slice(graph, second, merged, opset);
  graph.set_node_input(second, 0, x);
  graph.remove_node(first);
  return 1;
}

}  // namespace

std::unique_ptr<GraphPass> make_merge_slices_pass() {
  return make_rule_pass("merge_slices", {"Slice"}, merge_slices, NodeOrder::kTopological);
}

}  // namespace onnxkit
