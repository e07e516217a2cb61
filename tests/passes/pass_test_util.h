// Pass tests: build a tiny graph, run one pass, check the new structure AND that the
// outputs still match the graph before the pass (ONNX Runtime's TransformerTester idea).
// Graphs are built with graph_test_util.h's GraphBuilder or straight on the Graph.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../graph_test_util.h"
#include "ir/verifier.h"
#include "onnx/onnx_checks.h"
#include "onnxkit/model_io.h"
#include "onnxkit/session.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "passes/pass.h"
#include "passes/passes.h"
#include "registry/builtin_registry.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit::testing {

// ---- building ----

// A model importing ai.onnx `opset`, for building graphs by hand.
inline Model empty_model(int64_t opset = 13) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", opset}};
  return model;
}

// A float tensor type; -1 dims become the symbol "n".
inline ValueType float_type(std::vector<int64_t> dims) {
  std::vector<Dim> shape;
  for (int64_t d : dims) shape.push_back(d >= 0 ? Dim::known(d) : Dim::symbol("n"));
  return ValueType::tensor(DType::kFloat, shape);
}

inline ValueType float_dims(std::vector<Dim> dims) {
  return ValueType::tensor(DType::kFloat, std::move(dims));
}

// Random float tensor with a fixed seed (for initializers).
inline Tensor random_floats(Shape shape, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  return random_tensor(DType::kFloat, shape, rng);
}

// Random values in [0.5, 1.5): BatchNormalization variances and scales.
inline Tensor positive_floats(Shape shape, uint64_t seed) {
  Tensor t = random_floats(std::move(shape), seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.mutable_data<float>()[i] = 0.5f + std::fmod(std::abs(t.data<float>()[i]), 1.0f);
  }
  return t;
}

// `t` (float) converted to the float type `dtype`.
inline Tensor cast_to(const Tensor& t, DType dtype) {
  Tensor out(dtype, t.shape());
  dispatch_float(dtype, "test", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i) {
      out.mutable_data<T>()[i] = static_cast<T>(t.data<float>()[i]);
    }
  });
  return out;
}

inline Tensor floats(std::vector<float> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(DType::kFloat, {n}, values);
}

inline Tensor int64s(std::vector<int64_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(DType::kInt64, {n}, values);
}

inline Tensor bool_scalar(bool value) {
  return Tensor::from_vector<bool>(DType::kBool, {}, {value});
}

// `prefix` followed by `i`: "a3".
inline std::string numbered(char prefix, int i) {
  return std::string(1, prefix) + std::to_string(i);
}

// An attribute with its name and type set and no value yet.
inline Attribute typed_attribute(std::string name, AttrType type) {
  Attribute a;
  a.name = std::move(name);
  a.type = type;
  return a;
}

// A float scalar initializer with a fresh name.
inline Value* float_scalar(Graph& g, float value) {
  return g.add_initializer(g.unique_name("k"),
                           Tensor::from_vector(DType::kFloat, {}, std::vector<float>{value}));
}

// An int64 vector initializer named `name` (made unique).
inline Value* int64s(Graph& g, const std::string& name, const std::vector<int64_t>& values) {
  return g.add_initializer(g.unique_name(name), int64s(values));
}

// A node with a fresh output name; returns that output.
inline Value* add_op(Graph& g, const std::string& type, std::vector<Value*> inputs) {
  return g.add_node(type, std::move(inputs), {g.unique_name(type)})->output(0);
}

// x [1, 4, 5, 5] -> Conv(W [6, 4, 3, 3], B) -> `op`(Conv output, the constant `operand` of
// `operand_shape`) -> y; with `conv_first` false the constant is `op`'s first input.
inline Model conv_then(const std::string& op, const std::string& operand,
                       const Shape& operand_shape, bool bias = true, bool conv_first = true) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({1, 4, 5, 5}));
  std::vector<Value*> inputs{x, g.add_initializer("W", random_floats({6, 4, 3, 3}, 1))};
  if (bias) inputs.push_back(g.add_initializer("B", random_floats({6}, 2)));
  Value* c = g.add_node("Conv", inputs, {"c"}, "", "conv")->output(0);
  Value* k = g.add_initializer(operand, random_floats(operand_shape, 3));
  Node* node = g.add_node(op, conv_first ? std::vector{c, k} : std::vector{k, c}, {"y"}, "", "op");
  g.add_output(node->output(0));
  return model;
}

// Serializes and reparses, so the copy shares nothing with `model`.
inline Model copy_model(const Model& model) {
  auto bytes = serialize_model(model);
  if (!bytes) throw Error(bytes.error());
  auto copy = parse_model(bytes.value());
  if (!copy) throw Error(copy.error());
  return std::move(copy).value();
}

// Runs ONNX shape inference (the pipeline does before each round) so passes see value types.
inline void infer(Model& model) {
  Status status = infer_shapes(model);
  ASSERT_TRUE(status.ok()) << status.message();
}

// ---- running a pass ----

// Runs `pass` once on `graph` (the main graph when null: the pipeline visits subgraphs,
// tests of subgraph behaviour name one), then sorts and verifies the model; returns the
// number of changes. `context` keeps what the pass recorded in it.
inline size_t apply_pass(GraphPass& pass, Model& model, PassContext& context,
                         Graph* graph = nullptr) {
  context.model = &model;
  context.registry = &builtin_registry();
  size_t changes = pass.run(graph ? *graph : model.graph(), context);
  model.graph().sort_topologically();
  Status verified = verify_model(model);
  EXPECT_TRUE(verified.ok()) << "graph invalid after " << pass.name() << ": " << verified.message();
  return changes;
}
inline size_t apply_pass(GraphPass& pass, Model& model, PassContext&& context = {},
                         Graph* graph = nullptr) {
  return apply_pass(pass, model, context, graph);
}

// ---- checking ----

// Random values for every graph input of `model` that has no initializer, its symbolic
// dims bound by `dims`.
inline NamedValues random_feeds(const Model& model, const std::map<std::string, int64_t>& dims,
                                uint64_t seed) {
  std::mt19937_64 rng(seed);
  NamedValues feeds;
  for (const Value* input : model.graph().inputs()) {
    if (input->has_initializer()) continue;
    feeds.emplace_back(input->name(),
                       random_tensor(input->type().elem_type, concrete_shape(*input, dims), rng));
  }
  return feeds;
}

// Runs both models on the reference kernels with `feeds` and compares their outputs, which
// must keep their names and order.
inline ::testing::AssertionResult same_outputs_on(const Model& before, const Model& after,
                                                  const NamedValues& feeds,
                                                  const Tolerance& tolerance) {
  auto a = Session::create(copy_model(before), SessionOptions::reference());
  if (!a) return ::testing::AssertionFailure() << "original: " << a.error();
  auto b = Session::create(copy_model(after), SessionOptions::reference());
  if (!b) return ::testing::AssertionFailure() << "rewritten: " << b.error();
  auto out_a = a.value()->run(feeds);
  if (!out_a) return ::testing::AssertionFailure() << "original: " << out_a.error();
  auto out_b = b.value()->run(feeds);
  if (!out_b) return ::testing::AssertionFailure() << "rewritten: " << out_b.error();
  if (out_a.value().size() != out_b.value().size()) {
    return ::testing::AssertionFailure() << "output counts differ";
  }
  for (size_t i = 0; i < out_a.value().size(); ++i) {
    if (out_a.value()[i].first != out_b.value()[i].first) {
      return ::testing::AssertionFailure()
             << "output " << i << " renamed from '" << out_a.value()[i].first << "' to '"
             << out_b.value()[i].first << "'";
    }
    Comparison c = compare_values(out_b.value()[i].second, out_a.value()[i].second, tolerance);
    if (!c.ok) {
      return ::testing::AssertionFailure()
             << "output '" << out_a.value()[i].first << "': " << c.message;
    }
  }
  return ::testing::AssertionSuccess();
}

// Random inputs for every graph input (symbolic dims: n = batch = 2, seq = 3), run through
// both models, compared.
inline ::testing::AssertionResult same_outputs(const Model& before, const Model& after,
                                               double rtol = 1e-4, double atol = 1e-5) {
  return same_outputs_on(
      before, after, random_feeds(before, {{"n", 2}, {"batch", 2}, {"seq", 3}}, 42), {rtol, atol});
}

inline size_t count_ops(const Model& model, std::string_view op_type) {
  size_t count = 0;
  for (const Node* node : model.graph().nodes()) count += node->op_type() == op_type;
  return count;
}

// Nodes of com.onnxkit's `op_type`.
inline size_t count_domain_ops(const Model& model, std::string_view op_type) {
  size_t count = 0;
  for (const Node* node : model.graph().nodes()) {
    count += node->op_type() == op_type && node->domain() == kOnnxkitDomain;
  }
  return count;
}

// The first node of `op_type`, or nullptr.
inline Node* find_op(Model& model, const std::string& op_type) {
  for (Node* node : model.graph().nodes()) {
    if (node->op_type() == op_type) return node;
  }
  return nullptr;
}
inline const Node* find_op(const Model& model, const std::string& op_type) {
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() == op_type) return node;
  }
  return nullptr;
}

// The only node of `op_type`, or nullptr (also when there are several).
inline const Node* only_node(const Model& model, const std::string& op_type) {
  const Node* found = nullptr;
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != op_type) continue;
    if (found) return nullptr;
    found = node;
  }
  return found;
}

// The values of a constant int64 input.
inline std::vector<int64_t> input_ints(const Node* node, size_t index) {
  const Tensor& t = node->input(index)->initializer();
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

inline float float_attribute_of(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->f : std::numeric_limits<float>::quiet_NaN();
}

inline int64_t int_attribute_of(const Node* node, const std::string& name, int64_t fallback) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->i : fallback;
}

inline std::string string_attribute_of(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->s : "";
}

inline std::vector<float> floats_attribute_of(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->floats : std::vector<float>{};
}

inline bool imports_onnxkit(const Model& model) {
  return model.opset_version(kOnnxkitDomain) == kOnnxkitDomainVersion;
}

}  // namespace onnxkit::testing
