// Pass eliminate_identity: Identity and inference-mode Dropout are removed.
//
// Readers of the output read the input instead. A node stays when that would rename a
// graph output (its input is a graph input, another output or an outer value), when its
// output is named in keep_values, or when a nested subgraph returns it directly.
#include <algorithm>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool fully_static(const Value* value) {
  const ValueType& type = value->type();
  if (!type.is_tensor() || !type.shape || type.elem_type == DType::kUndefined) return false;
  for (const Dim& dim : *type.shape) {
    if (!dim.is_known()) return false;
  }
  return true;
}

// A one-element constant of any numeric or bool type, as double.
std::optional<double> constant_scalar(const Value* value, const PassContext& context) {
  const Tensor* tensor = constant_value(value, context);
  if (!tensor || tensor->numel() != 1) return std::nullopt;
  if (tensor->dtype() == DType::kBool) return tensor->data<bool>()[0] ? 1.0 : 0.0;
  if (!dtype_is_float(tensor->dtype()) && !dtype_is_integer(tensor->dtype())) return std::nullopt;
  return read_scalar(*tensor, "Dropout");
}

bool replaceable(const Value* from, const Value* to, const PassContext& context) {
  if (!from || !to || !can_replace(from, to) || from->returned_by_subgraph()) return false;
  if (context.keep_values.count(from->name())) return false;
  // A graph output hands its name to `to`, which then no longer exists under its own.
  return !(is_graph_output(from) && context.keep_values.count(to->name()));
}

void rewire(Graph& graph, Value* from, Value* to) {
  // The graph's interface keeps its declared type when `to` knows less.
  if (is_graph_output(from) && to->type().kind == ValueType::Kind::kNone) {
    to->set_type(from->type());
  }
  replace_value(graph, from, to);
}

size_t eliminate_identity(Graph& graph, Node* node, const PassContext& context) {
  Value* input = node->input(0);
  Value* output = node->output(0);
  if (node->inputs().size() != 1 || node->outputs().size() != 1) return 0;
  if (!replaceable(output, input, context)) return 0;
  rewire(graph, output, input);
  graph.remove_node(node);
  return 1;
}

// True when this Dropout passes its data through unchanged (and its mask is all true).
bool dropout_is_identity(const Node& node, const PassContext& context) {
  const int64_t opset = context.opset("");
  if (opset < 7) {
    // is_test defaults to 0 (training); a zero ratio drops nothing in either mode.
    const Attribute* is_test = node.find_attribute("is_test");
    if (is_test && is_test->i != 0) return true;
    const Attribute* ratio = node.find_attribute("ratio");
    return ratio && ratio->f == 0.0f;
  }
  if (opset < 12) return true;  // no training mode before 12: always inference
  if (node.input(1)) {
    auto ratio = constant_scalar(node.input(1), context);
    if (ratio && *ratio == 0.0) return true;
  }
  if (!node.input(2)) return true;
  const Tensor* training = constant_value(node.input(2), context);
  return training && training->dtype() == DType::kBool && training->numel() == 1 &&
         !training->data<bool>()[0];
}

size_t eliminate_dropout(Graph& graph, Node* node, const PassContext& context) {
  Value* input = node->input(0);
  Value* output = node->output(0);
  if (!input || !output || node->outputs().size() > 2) return 0;
  if (!dropout_is_identity(*node, context)) return 0;

  // A used mask becomes a constant all-true (all-ones before opset 10) tensor, which
  // needs a static shape.
  Value* mask = node->output(1);
  std::optional<Tensor> ones;
  if (mask && (mask->returned_by_subgraph() || context.keep_values.count(mask->name()))) {
    return 0;
  }
  if (mask && !is_unused(mask)) {
    // The mask has the data's shape; bool from opset 10, the data's type before.
    if (!fully_static(input)) return 0;
    const DType dtype = context.opset("") >= 10 ? DType::kBool : input->type().elem_type;
    if (dtype != DType::kBool && !dtype_is_float(dtype) && !dtype_is_integer(dtype)) return 0;
    Shape shape;
    for (const Dim& dim : *input->type().shape) shape.push_back(dim.value);
    // Declared dims: numel x element size may leave uint64.
    const auto numel = static_cast<uint64_t>(shape_numel(shape));
    if (numel > context.tensor_size_threshold / std::max<uint64_t>(dtype_size(dtype), 1)) return 0;
    ones.emplace(dtype, shape);
    dispatch_numeric_bool(dtype, "Dropout mask", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* data = ones->mutable_data<T>();
      for (int64_t i = 0; i < ones->numel(); ++i) data[i] = convert_element<T>(1.0f);
    });
  }

  // Where the data output cannot take the input's place (a graph output fed by a graph
  // input), an Identity keeps the interface.
  Value* replacement = input;
  if (!replaceable(output, input, context)) {
    if (output->returned_by_subgraph() || context.keep_values.count(output->name())) return 0;
    Node* identity = graph.add_node("Identity", {input}, {graph.unique_name(output->name())}, "",
                                    node->name(), node);
    replacement = identity->output(0);
    replacement->set_type(output->type());
  }
  if (ones) {
    Value* constant = graph.add_initializer(graph.unique_name(mask->name() + "_ones"), *ones);
    constant->set_type(ValueType::tensor(ones->dtype(), input->type().shape));
    rewire(graph, mask, constant);
  }
  rewire(graph, output, replacement);
  graph.remove_node(node);
  return 1;
}

size_t eliminate_identity_or_dropout(Graph& graph, Node* node, PassContext& context) {
  if (node->op_type() == "Identity") return eliminate_identity(graph, node, context);
  return eliminate_dropout(graph, node, context);
}

}  // namespace

std::unique_ptr<GraphPass> make_eliminate_identity_pass() {
  return make_rule_pass("eliminate_identity", {"Identity", "Dropout"},
                        eliminate_identity_or_dropout);
}

}  // namespace onnxkit
