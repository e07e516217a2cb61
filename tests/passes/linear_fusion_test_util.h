// Shared by the tests of the passes that absorb Gelu into FusedConv / FusedMatMul.
#pragma once

#include <cmath>
#include <functional>
#include <string>

#include "pass_test_util.h"

namespace onnxkit::testing {

// Builds what follows the Conv or MatMul a test starts from: gets the model and that
// node's output, returns the graph output.
using Tail = std::function<Value*(Model&, Value*)>;

// A com.onnxkit Gelu node reading `x` (approximate "none" or "tanh").
inline Value* add_onnxkit_gelu(Model& model, Value* x, const std::string& approximate) {
  if (model.opset_version(kOnnxkitDomain) < 0) {
    model.opset_imports.push_back({std::string(kOnnxkitDomain), 1});
  }
  Graph& g = model.graph();
  Node* gelu = g.add_node("Gelu", {x}, {g.unique_name("gelu")}, std::string(kOnnxkitDomain));
  set_string(gelu, "approximate", approximate);
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

}  // namespace onnxkit::testing
