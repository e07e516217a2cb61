// Shared by the tests of the passes that build FusedConv / FusedMatMul.
#pragma once

#include <cmath>
#include <string>

#include "../ops/op_test_util.h"
#include "onnx/onnx_checks.h"
#include "ops/fused_ops.h"
#include "pass_test_util.h"

namespace onnxkit::testing {

// Records value types as the pipeline would before a round (the passes read shapes).
inline void infer_types(Model& model) {
  Status status = infer_shapes(model);
  ASSERT_TRUE(status.ok()) << status.message();
}

inline Value* float_scalar(Graph& g, float value) {
  Tensor t(DType::kFloat, Shape{});
  t.mutable_data<float>()[0] = value;
  return g.add_initializer(g.unique_name("k"), std::move(t));
}

inline Value* add_op(Graph& g, const std::string& type, std::vector<Value*> inputs) {
  return g.add_node(type, std::move(inputs), {g.unique_name(type)})->output(0);
}

// A com.onnxkit Gelu node reading `x` (approximate "none" or "tanh").
inline Value* add_onnxkit_gelu(Model& model, Value* x, const std::string& approximate) {
  if (model.opset_version(kOnnxkitDomain) < 0) {
    model.opset_imports.push_back({std::string(kOnnxkitDomain), 1});
  }
  Graph& g = model.graph();
  Node* gelu = g.add_node("Gelu", {x}, {g.unique_name("gelu")}, std::string(kOnnxkitDomain));
  Attribute a;
  a.name = "approximate";
  a.type = AttrType::kString;
  a.s = approximate;
  gelu->set_attribute(std::move(a));
  return gelu->output(0);
}

// A copy of `model` with every com.onnxkit Gelu written out in standard float ops, so it
// runs without a Gelu kernel (the reference of pass tests that absorb Gelu).
inline Model expand_gelu(const Model& model) {
  Model copy = copy_model(model);
  Graph& g = copy.graph();
  for (Node* gelu : g.nodes()) {
    if (gelu->op_type() != "Gelu" || gelu->domain() != kOnnxkitDomain) continue;
    Value* x = gelu->input(0);
    const Attribute* a = gelu->find_attribute("approximate");
    const bool tanh_form = a && a->s == "tanh";
    Value* inner = nullptr;
    if (tanh_form) {
      Value* cube = add_op(g, "Mul", {add_op(g, "Mul", {x, x}), x});
      Value* sum = add_op(g, "Add", {x, add_op(g, "Mul", {cube, float_scalar(g, 0.044715f)})});
      inner = add_op(g, "Tanh", {add_op(g, "Mul", {sum, float_scalar(g, std::sqrt(2 / M_PI))})});
    } else {
      inner = add_op(g, "Erf", {add_op(g, "Div", {x, float_scalar(g, std::sqrt(2.0f))})});
    }
    Value* y = add_op(g, "Mul",
                      {add_op(g, "Mul", {x, float_scalar(g, 0.5f)}),
                       add_op(g, "Add", {inner, float_scalar(g, 1.0f)})});
    replace_value(g, gelu->output(0), y);
    g.remove_node(gelu);
  }
  g.sort_topologically();
  return copy;
}

// The only node of `model` with this op type, or nullptr.
inline const Node* only_node(const Model& model, const std::string& op_type) {
  const Node* found = nullptr;
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != op_type) continue;
    if (found) return nullptr;
    found = node;
  }
  return found;
}

inline std::string string_attr(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->s : "";
}

inline std::vector<float> floats_attr(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->floats : std::vector<float>{};
}

inline bool imports_onnxkit(const Model& model) {
  return model.opset_version(kOnnxkitDomain) == kOnnxkitDomainVersion;
}

}  // namespace onnxkit::testing
