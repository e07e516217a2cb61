// Pass merge_reshapes: Consecutive Reshape/Flatten become one Reshape.
//
// Reshape, Flatten, Squeeze and Unsqueeze only reinterpret the shape: the elements and their
// order stay. So when one of them feeds (alone) a Reshape or Flatten, the second can read the
// first's input directly, provided its target does not depend on the intermediate shape:
//   Reshape: a 0 entry (allowzero = 0) copies the intermediate dim, so it is resolved first
//            (from the intermediate's type, or from the first Reshape's constant target);
//   Flatten: becomes Reshape(x, [left, right]) with the products known from the types (one
//            of them may be -1 when the other is known and nonzero).
#include <optional>
#include <unordered_set>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

int64_t int_attribute(const Node* node, std::string_view name, int64_t fallback) {
  const Attribute* attr = node->find_attribute(name);
  return attr && attr->type == AttrType::kInt ? attr->i : fallback;
}

// The dims of `value`'s type (-1 where not known), or nullopt when the rank is unknown.
std::optional<std::vector<int64_t>> type_dims(const Value* value) {
  const ValueType& type = value->type();
  if (!type.is_tensor() || !type.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim& dim : *type.shape) dims.push_back(dim.is_known() ? dim.value : -1);
  return dims;
}

// A constant 1-D int64/int32 tensor's values.
std::optional<std::vector<int64_t>> constant_ints(const Value* value, const PassContext& context) {
  const Tensor* tensor = constant_value(value, context);
  if (!tensor || tensor->rank() != 1) return std::nullopt;
  if (tensor->dtype() != DType::kInt64 && tensor->dtype() != DType::kInt32) return std::nullopt;
  return read_int64s(*tensor, "shape");
}

Value* add_shape_initializer(Graph& graph, const std::string& prefix,
                             const std::vector<int64_t>& dims) {
  const int64_t n = static_cast<int64_t>(dims.size());
  Value* value = graph.add_initializer(graph.unique_name(prefix),
                                       Tensor::from_vector(DType::kInt64, {n}, dims));
  value->set_type(ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(n)}));
  return value;
}

// Ops whose output is their input with another shape (same elements, same order).
bool is_reshape_like(const Node* node, int64_t opset) {
  if (is_onnx_op(node, "Reshape")) return opset >= 5;  // Reshape-1 took the shape as attribute
  return is_onnx_op(node, "Flatten") || is_onnx_op(node, "Squeeze") ||
         is_onnx_op(node, "Unsqueeze");
}

// The Reshape target that reproduces `second` (a Reshape) without reading the shape of
// `middle` (the output of `first`); nullopt when that is not possible.
std::optional<std::vector<int64_t>> reshape_target(const Node* first, const Node* second,
                                                   const Value* middle,
                                                   const PassContext& context) {
  auto target = constant_ints(second->input(1), context);
  if (!target) return std::nullopt;
  if (int_attribute(second, "allowzero", 0) != 0) return target;  // 0 is a literal dim
  auto middle_dims = type_dims(middle);
  std::optional<std::vector<int64_t>> first_target;
  if (is_onnx_op(first, "Reshape")) first_target = constant_ints(first->input(1), context);
  for (size_t i = 0; i < target->size(); ++i) {
    if ((*target)[i] != 0) continue;
    int64_t dim = -1;
    if (middle_dims && i < middle_dims->size()) dim = (*middle_dims)[i];
    if (dim < 0 && first_target && i < first_target->size()) dim = (*first_target)[i];
    // An intermediate 0 dim cannot be written without allowzero: leave it.
    if (dim <= 0) return std::nullopt;
    (*target)[i] = dim;
  }
  return target;
}

// The Reshape target equal to Flatten(axis) of `middle`: [left, right] from the types.
std::optional<std::vector<int64_t>> flatten_target(const Node* flatten, const Value* middle) {
  auto dims = type_dims(middle);
  if (!dims) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(dims->size());
  int64_t axis = int_attribute(flatten, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return std::nullopt;
  // Products of the known dims; -1 when any of them is unknown.
  auto product = [&](int64_t begin, int64_t end) {
    int64_t p = 1;
    for (int64_t i = begin; i < end; ++i) {
      int64_t d = (*dims)[static_cast<size_t>(i)];
      if (d < 0) return int64_t{-1};
      if (d != 0 && p > INT64_MAX / d) return int64_t{-1};
      p *= d;
    }
    return p;
  };
  const int64_t left = product(0, axis);
  const int64_t right = product(axis, rank);
  // -1 is inferred from the element count, which fails when the other side is 0.
  if (left >= 0 && right >= 0) {
    // A literal 0 would copy a dim of the new input (allowzero = 0): leave empty tensors.
    if (left == 0 || right == 0) return std::nullopt;
    return std::vector<int64_t>{left, right};
  }
  if (left > 0) return std::vector<int64_t>{left, -1};
  if (right > 0) return std::vector<int64_t>{-1, right};
  return std::nullopt;
}

size_t merge_reshapes(Graph& graph, Node* second, PassContext& context) {
  const int64_t opset = context.opset("");
  if (opset < 5) return 0;  // no Reshape with a shape input to rewrite to
  const bool second_is_reshape = is_onnx_op(second, "Reshape");
  if (!second_is_reshape && !is_onnx_op(second, "Flatten")) return 0;
  Value* middle = second->input(0);
  if (!middle || second->outputs().size() != 1 || !second->output(0)) return 0;
  Node* first = middle->producer();
  // Only nodes of this graph may be removed; the middle value must have no other reader.
  if (!is_reshape_like(first, opset) || first->graph() != &graph) return 0;
  if (middle->uses().size() != 1 || is_graph_output(middle) || kept(middle, context)) return 0;
  Value* x = first->input(0);
  if (!x) return 0;

  if (second_is_reshape) {
    if (!second->input(1)) return 0;
    auto target = reshape_target(first, second, middle, context);
    if (!target) return 0;
    auto old_target = constant_ints(second->input(1), context);
    if (*target != *old_target) {
      graph.set_node_input(second, 1,
                           add_shape_initializer(graph, middle->name() + "_shape", *target));
    }
    graph.set_node_input(second, 0, x);
  } else {
    auto target = flatten_target(second, middle);
    if (!target) return 0;
    Value* y = second->output(0);
    if (kept(y, context)) return 0;
    Value* shape = add_shape_initializer(graph, y->name() + "_shape", *target);
    Node* reshape = graph.add_node("Reshape", {x, shape}, {graph.unique_name(y->name())}, "",
                                   second->name(), second);
    reshape->output(0)->set_type(y->type());
    replace_value(graph, y, reshape->output(0));  // always possible: a fresh value
    graph.remove_node(second);
  }
  graph.remove_node(first);
  return 1;
}

}  // namespace

std::unique_ptr<GraphPass> make_merge_reshapes_pass() {
  return make_rule_pass("merge_reshapes", {"Reshape", "Flatten"}, merge_reshapes,
                        NodeOrder::kTopological);
}

}  // namespace onnxkit
