// Pass constant_to_initializer: Constant nodes become initializers, so every constant looks
// alike to the other passes (constant_value() only sees initializers).
#include <optional>

#include "passes/passes.h"

namespace onnxkit {
namespace {

// The tensor a Constant node's value attribute describes, or nullopt when the node is not
// one we can convert with certainty (sparse_value, a function's attribute reference, no or
// several value attributes, a wrongly typed attribute).
std::optional<Tensor> constant_tensor(const Node& node) {
  if (node.attributes().size() != 1) return std::nullopt;
  const Attribute& a = node.attributes().front();
  if (!a.ref_attr_name.empty()) return std::nullopt;
  auto count = [](size_t n) { return Shape{static_cast<int64_t>(n)}; };
  if (a.name == "value" && a.type == AttrType::kTensor && a.t.defined()) {
    Tensor tensor = a.t;
    tensor.set_name("");
    return tensor;
  }
  if (a.name == "value_float" && a.type == AttrType::kFloat) {
    return Tensor::from_vector<float>(DType::kFloat, {}, {a.f});
  }
  if (a.name == "value_floats" && a.type == AttrType::kFloats) {
    return Tensor::from_vector(DType::kFloat, count(a.floats.size()), a.floats);
  }
  if (a.name == "value_int" && a.type == AttrType::kInt) {
    return Tensor::from_vector<int64_t>(DType::kInt64, {}, {a.i});
  }
  if (a.name == "value_ints" && a.type == AttrType::kInts) {
    return Tensor::from_vector(DType::kInt64, count(a.ints.size()), a.ints);
  }
  if (a.name == "value_string" && a.type == AttrType::kString) {
    return Tensor::from_strings({}, {a.s});
  }
  if (a.name == "value_strings" && a.type == AttrType::kStrings) {
    return Tensor::from_strings(count(a.strings.size()), a.strings);
  }
  return std::nullopt;
}

ValueType type_of(const Tensor& tensor) {
  std::vector<Dim> dims;
  for (int64_t d : tensor.shape()) dims.push_back(Dim::known(d));
  return ValueType::tensor(tensor.dtype(), dims);
}

class ConstantToInitializerPass : public GraphPass {
 public:
  std::string_view name() const override { return "constant_to_initializer"; }

  size_t run(Graph& graph, PassContext&) override {
    size_t changes = 0;
    for (Node* node : graph.nodes()) {
      if (!is_onnx_op(node, "Constant")) continue;
      if (!node->inputs().empty() || node->outputs().size() != 1 || !node->output(0)) continue;
      std::optional<Tensor> tensor = constant_tensor(*node);
      if (!tensor) continue;
      Value* output = node->output(0);
      const std::string name = output->name();
      const bool keep_doc = !output->doc_string().empty();
      const std::string doc = output->doc_string();
      // A value cannot be both computed and an initializer: move the readers (and the graph
      // output slot) to a temporary initializer, drop the node, then give it the name back.
      Value* init = graph.add_initializer(graph.unique_name(name + "__const"), std::move(*tensor));
      init->set_type(type_of(init->initializer()));
      graph.replace_all_uses(output, init);
      graph.remove_node(node);
      graph.rename_value(init, name);
      if (keep_doc) init->set_doc_string(doc);
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_constant_to_initializer_pass() {
  return std::make_unique<ConstantToInitializerPass>();
}

}  // namespace onnxkit
