// Running one op version's type inference rule (OpDefinition::infer_types) on a single node,
// without the inference engine: infer_op_type builds the node from types and constants
// (initializers: their values are what input_value sees); infer_node_types runs the rule on a
// NodeCase's node with its inputs' dtypes and the shapes given.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../attribute_test_util.h"
#include "ir/graph.h"
#include "op_test_util.h"
#include "ops/registry.h"
#include "ops/type_inference.h"
#include "registry/builtin_registry.h"

namespace onnxkit::testing {

class SingleNodeTypeContext : public TypeInferenceContext {
 public:
  SingleNodeTypeContext(const Node& node, int64_t opset) : node_(node), opset_(opset) {}

  const Node& node() const override { return node_; }
  int64_t opset() const override { return opset_; }
  const ValueType* input_type(size_t i) const override {
    if (!has_input(i)) return nullptr;
    const ValueType& type = node_.inputs()[i]->type();
    return type.kind == ValueType::Kind::kNone ? nullptr : &type;
  }
  const Tensor* input_value(size_t i) const override {
    if (!has_input(i) || !node_.inputs()[i]->has_initializer()) return nullptr;
    return &node_.inputs()[i]->initializer();
  }
  std::vector<ValueType> infer_subgraph(const Graph&, std::span<const ValueType> inputs) override {
    return std::vector<ValueType>(inputs.size());
  }
  void set_output(size_t i, ValueType type) override { outputs[i] = std::move(type); }

  std::map<size_t, ValueType> outputs;

 private:
  const Node& node_;
  int64_t opset_;
};

// One input of infer_op_types: a type, or a constant (an initializer of its own type).
struct TypedInput {
  TypedInput(ValueType value_type) : type(std::move(value_type)) {}  // NOLINT: implicit
  TypedInput(Tensor constant)                                        // NOLINT: implicit
      : type(ValueType::tensor(constant.dtype(), std::vector<Dim>())), value(std::move(constant)) {
    type.shape->clear();
    for (int64_t d : value.shape()) type.shape->push_back(Dim::known(d));
  }
  ValueType type;
  Tensor value;
};

// Output 0's type from the builtin registry's rule for `op` at `opset` (kNone when the rule
// set nothing); fails the test when the op version has no rule.
inline ValueType infer_op_type(const std::string& op, std::vector<TypedInput> inputs, int64_t opset,
                               const std::function<void(Node*)>& set_attributes = {}) {
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (inputs[i].value.defined()) {
      values.push_back(graph.add_initializer(name, inputs[i].value));
    } else {
      values.push_back(graph.add_input(name, inputs[i].type));
    }
  }
  Node* node = graph.add_node(op, values, {"out0"}, "", "node0");
  if (set_attributes) set_attributes(node);
  const OpDefinition* definition = builtin_registry().definition(*node, opset);
  if (!definition || !definition->infer_types) {
    ADD_FAILURE() << op << " at opset " << opset << " has no type inference rule";
    return {};
  }
  SingleNodeTypeContext context(*node, opset);
  definition->infer_types(context);
  auto it = context.outputs.find(0);
  return it == context.outputs.end() ? ValueType{} : it->second;
}

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

// "float[2,?,N]"-style text of a type, for EXPECT_EQ.
inline std::string type_text(const ValueType& type) {
  return value_type_to_string(type);
}

inline std::vector<Dim> dims(std::initializer_list<int64_t> values) {
  std::vector<Dim> out;
  for (int64_t v : values) out.push_back(v < 0 ? Dim{} : Dim::known(v));
  return out;
}

}  // namespace onnxkit::testing
