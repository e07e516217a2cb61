// Helpers shared by the pool, softmax and normalization op tests: attribute builders,
// tensor makers and a one-node runner with several outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/half.h"
#include "onnxkit/session.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

[[maybe_unused]] Attribute int_attr(const std::string& name, int64_t value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = value;
  return a;
}

[[maybe_unused]] Attribute float_attr(const std::string& name, float value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = value;
  return a;
}

[[maybe_unused]] Attribute ints_attr(const std::string& name, std::vector<int64_t> values) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kInts;
  a.ints = std::move(values);
  return a;
}

[[maybe_unused]] Attribute string_attr(const std::string& name, std::string value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kString;
  a.s = std::move(value);
  return a;
}

// Runs a one-node model. An undefined Tensor in `inputs` omits that input; `outputs`
// names the node's outputs ("" omits one). Returns the named outputs in order.
[[maybe_unused]] std::vector<Tensor> run_node(const std::string& op,
                                              const std::vector<Tensor>& inputs, int64_t opset,
                                              std::vector<Attribute> attrs = {},
                                              std::vector<std::string> outputs = {"out"}) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", opset}};
  Graph& g = model.graph();
  std::vector<Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins.push_back(inputs[i].defined()
                      ? g.add_input("in" + std::to_string(i), ValueType::tensor(inputs[i].dtype()))
                      : nullptr);
  }
  Node* n = g.add_node(op, ins, outputs, "", "node0");
  for (auto& a : attrs) n->set_attribute(std::move(a));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].empty()) g.add_output(n->output(i));
  }
  auto session = Session::create(std::move(model), SessionOptions::reference());
  if (!session) throw Error(session.error());
  NamedValues feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) feeds.emplace_back("in" + std::to_string(i), inputs[i]);
  }
  auto out = session.value()->run(feeds);
  if (!out) throw Error(out.error());
  std::vector<Tensor> result;
  for (auto& [name, value] : out.value()) result.push_back(value.tensor());
  return result;
}

[[maybe_unused]] Tensor run_one(const std::string& op, const std::vector<Tensor>& inputs,
                                int64_t opset, std::vector<Attribute> attrs = {}) {
  return run_node(op, inputs, opset, std::move(attrs))[0];
}

[[maybe_unused]] Tensor floats(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector<float>(DType::kFloat, std::move(shape), values);
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

[[maybe_unused]] void expect_near(const Tensor& t, const std::vector<float>& expected,
                                  float tol = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  const std::vector<float> got = values_of<float>(t);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], tol + tol * std::fabs(expected[i])) << "at " << i;
  }
}

[[maybe_unused]] Tensor bool_scalar(bool value) {
  Tensor t(DType::kBool, {});
  t.mutable_data<bool>()[0] = value;
  return t;
}

// Runs `f` and returns the Error's message ("" when nothing is thrown).
[[maybe_unused]] std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace
}  // namespace onnxkit
