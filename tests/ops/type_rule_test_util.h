// Running one op version's type inference rule (OpDefinition::infer_types) on a NodeCase,
// with the inputs' dtypes (and shapes given here) as the known types.
#pragma once

#include <optional>
#include <vector>

#include "op_test_util.h"
#include "ops/type_inference.h"
#include "registry/builtin_registry.h"

namespace onnxkit::testing {

class NodeTypeContext : public TypeInferenceContext {
 public:
  NodeTypeContext(const Node& node, int64_t opset, std::vector<ValueType> inputs)
      : node_(node), opset_(opset), inputs_(std::move(inputs)) {
    outputs_.resize(node.outputs().size());
  }
  const Node& node() const override { return node_; }
  int64_t opset() const override { return opset_; }
  const ValueType* input_type(size_t i) const override {
    return has_input(i) && i < inputs_.size() ? &inputs_[i] : nullptr;
  }
  const Tensor* input_value(size_t) const override { return nullptr; }
  std::vector<ValueType> infer_subgraph(const Graph&, std::span<const ValueType> types) override {
    return std::vector<ValueType>(types.size());
  }
  void set_output(size_t i, ValueType type) override {
    if (i < outputs_.size()) outputs_[i] = std::move(type);
  }
  const std::vector<ValueType>& outputs() const { return outputs_; }

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<ValueType> inputs_;
  std::vector<ValueType> outputs_;
};

// The output types the registered rule of `c`'s op at `c.opset` gives when input i has the
// dtype of c.inputs[i] and the shape shapes[i] (unknown rank where shapes is shorter).
inline std::vector<ValueType> infer_node_types(const NodeCase& c,
                                               const std::vector<SymbolicShape>& shapes) {
  Model model = make_model(c);
  const Node& node = *model.graph().nodes()[0];
  std::vector<ValueType> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(
        ValueType::tensor(c.inputs[i].dtype(), i < shapes.size() ? shapes[i] : std::nullopt));
  }
  const OpDefinition* definition = builtin_registry().definition(node, c.opset);
  EXPECT_NE(definition, nullptr);
  if (!definition || !definition->infer_types) {
    ADD_FAILURE() << c.op << "-" << c.opset << " has no type inference rule";
    return {};
  }
  NodeTypeContext context(node, c.opset, std::move(inputs));
  definition->infer_types(context);
  return context.outputs();
}

inline std::vector<Dim> dims(std::initializer_list<int64_t> values) {
  std::vector<Dim> out;
  for (int64_t v : values) out.push_back(Dim::known(v));
  return out;
}

}  // namespace onnxkit::testing
