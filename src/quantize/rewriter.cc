#include "quantize/rewriter.h"

namespace onnxkit::quant {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string node_label(const Node& node) {
  if (!node.name().empty()) return node.name();
  return node.output(0) ? node.output(0)->name() : node.op_type();
}

int64_t int_attribute(const Node& node, std::string_view name, int64_t fallback) {
  const Attribute* a = node.find_attribute(name);
  return a ? a->i : fallback;
}

float float_attribute(const Node& node, std::string_view name, float fallback) {
  const Attribute* a = node.find_attribute(name);
  return a ? a->f : fallback;
}

bool is_float_constant(const Graph& graph, const Value* value) {
  return value && value->has_initializer() && !graph.is_input(value) &&
         value->initializer().dtype() == DType::kFloat;
}

bool weights_symmetric(const QuantizeOptions& options) {
  return options.symmetric_weights.value_or(options.weight_type == DType::kInt8);
}

Rewriter::Rewriter(Graph& graph) : graph_(graph) {
  for (const Node* node : graph.nodes()) node_names_.insert(node->name());
}

std::string Rewriter::node_name(const std::string& prefix) {
  std::string name = prefix;
  for (int i = 1; node_names_.count(name); ++i) name = prefix + "_" + std::to_string(i);
  node_names_.insert(name);
  return name;
}

Value* Rewriter::constant(const std::string& prefix, Tensor tensor) {
  const std::string name = graph_.unique_name(prefix);
  tensor.set_name(name);
  std::vector<Dim> dims;
  for (int64_t d : tensor.shape()) dims.push_back(Dim::known(d));
  ValueType type = ValueType::tensor(tensor.dtype(), dims);
  Value* value = graph_.create_value(name);
  graph_.set_initializer(value, std::move(tensor));
  value->set_type(std::move(type));
  return value;
}

Node* Rewriter::node(std::string op_type, std::vector<Value*> inputs,
                     const std::string& output_prefix, const ValueType& output_type) {
  const std::string out = graph_.unique_name(output_prefix);
  Node* n = graph_.add_node(std::move(op_type), std::move(inputs), {out}, "",
                            node_name(output_prefix + "_node"));
  n->output(0)->set_type(output_type);
  return n;
}

void Rewriter::move_output(Node* from, size_t index, Node* to) {
  Value* value = from->output(index);
  Value* placeholder = graph_.create_value(graph_.unique_name(value->name() + "_replaced"));
  graph_.set_node_output(from, index, placeholder);
  Value* old = to->output(0);
  graph_.set_node_output(to, 0, value);
  if (old && old->uses().empty() && !graph_.is_output(old)) graph_.remove_value(old);
}

}  // namespace onnxkit::quant
