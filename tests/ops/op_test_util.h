// Running one op through a Session, for the op-family and kernel unit tests, and the small
// tensor helpers they share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "../graph_test_util.h"

namespace onnxkit::testing {

// One node to run in a model of its own.
struct NodeCase {
  NodeCase(std::string op_type, std::vector<Tensor> node_inputs, int64_t node_opset = 17,
           SetAttributes set_attributes = {})
      : op(std::move(op_type)),
        inputs(std::move(node_inputs)),
        opset(node_opset),
        attributes(std::move(set_attributes)) {}

  std::string op;
  // Graph inputs "in0", "in1", ... fed with these values, or initializers for the indexes in
  // `constants`; a default-constructed Tensor is an omitted optional input.
  std::vector<Tensor> inputs;
  int64_t opset = 17;
  SetAttributes attributes;
  std::string domain;  // "" for ai.onnx; another domain is imported at version 1
  // The node's output names, each a graph output; "" omits that output.
  std::vector<std::string> outputs{"out0"};
  std::vector<size_t> constants;

  bool is_constant(size_t input) const {
    return std::find(constants.begin(), constants.end(), input) != constants.end();
  }
};

inline Model make_model(const NodeCase& c) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", c.opset}};
  if (!c.domain.empty()) model.opset_imports.push_back({c.domain, 1});
  Graph& graph = model.graph();
  std::vector<Value*> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!c.inputs[i].defined()) {
      inputs.push_back(nullptr);
    } else if (c.is_constant(i)) {
      inputs.push_back(graph.add_initializer(name, c.inputs[i]));
    } else {
      inputs.push_back(graph.add_input(name, ValueType::tensor(c.inputs[i].dtype())));
    }
  }
  Node* node = graph.add_node(c.op, inputs, c.outputs, c.domain, "node0");
  if (c.attributes) c.attributes(node);
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!c.outputs[i].empty()) graph.add_output(node->output(i));
  }
  return model;
}

inline NamedValues feeds_of(const NodeCase& c) {
  NamedValues feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].defined() && !c.is_constant(i)) {
      feeds.emplace_back("in" + std::to_string(i), c.inputs[i]);
    }
  }
  return feeds;
}

// Runs the node (on the reference kernels unless `options` say otherwise) and returns the
// outputs it names, in order; a failed create or run throws its Error.
inline std::vector<Tensor> run_node(const NodeCase& c,
                                    const SessionOptions& options = SessionOptions::reference()) {
  return tensors_of(run_model(make_model(c), feeds_of(c), options));
}

// Runs `op` on the reference kernels and returns its first `num_outputs` outputs.
inline std::vector<Tensor> run_op(const std::string& op, std::vector<Tensor> inputs, int64_t opset,
                                  const SetAttributes& set_attributes = {}, size_t num_outputs = 1,
                                  const std::string& domain = "") {
  NodeCase c(op, std::move(inputs), opset, set_attributes);
  c.domain = domain;
  c.outputs.clear();
  for (size_t i = 0; i < num_outputs; ++i) c.outputs.push_back("out" + std::to_string(i));
  return run_node(c);
}

// Output 0 of run_op.
inline Tensor run_one(const std::string& op, std::vector<Tensor> inputs, int64_t opset,
                      const SetAttributes& set_attributes = {}) {
  return run_op(op, std::move(inputs), opset, set_attributes)[0];
}

// The message of the Error that `f` throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The message of the Error that running `op` throws; a run that succeeds is a test failure.
inline std::string run_error(const std::string& op, std::vector<Tensor> inputs, int64_t opset,
                             const SetAttributes& set_attributes = {}, size_t num_outputs = 1,
                             const std::string& domain = "") {
  try {
    run_op(op, std::move(inputs), opset, set_attributes, num_outputs, domain);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << op << " did not fail";
  return "";
}

// Expects `f` to throw an Error whose message contains `needle`.
inline void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// One attribute as a setter, for the attributes argument of the runners; `more` sets others.
inline SetAttributes with_int(std::string name, int64_t value, SetAttributes more = {}) {
  return [=](Node* n) {
    set_int(n, name, value);
    if (more) more(n);
  };
}
inline SetAttributes with_ints(std::string name, std::vector<int64_t> values,
                               SetAttributes more = {}) {
  return [=](Node* n) {
    set_ints(n, name, values);
    if (more) more(n);
  };
}
inline SetAttributes with_string(std::string name, std::string value, SetAttributes more = {}) {
  return [=](Node* n) {
    set_string(n, name, value);
    if (more) more(n);
  };
}

inline Tensor floats(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector<float>(DType::kFloat, std::move(shape), values);
}
inline Tensor int64s(Shape shape, const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(DType::kInt64, std::move(shape), values);
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

template <typename T>
std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<double>(t.data<T>()[i]));
  return v;
}

inline Tensor bool_scalar(bool value) {
  return Tensor::from_vector<bool>(DType::kBool, {}, {value});
}

// A float tensor's elements against `expected`, within `tolerance` relative and absolute.
inline void expect_near(const Tensor& t, const std::vector<float>& expected,
                        float tolerance = 1e-5f) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  const std::vector<float> got = values_of<float>(t);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], tolerance + tolerance * std::fabs(expected[i])) << "at " << i;
  }
}

// A float tensor's elements against `expected`: NaN matches NaN, infinities match exactly,
// the rest within `tolerance`.
inline void expect_floats(const Tensor& t, const std::vector<float>& expected,
                          float tolerance = 1e-6f) {
  ASSERT_EQ(t.dtype(), DType::kFloat);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(t.data<float>()[i])) << "element " << i;
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(t.data<float>()[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(t.data<float>()[i], expected[i], tolerance) << "element " << i;
    }
  }
}

}  // namespace onnxkit::testing
