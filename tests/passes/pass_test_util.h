// Pass tests: build a tiny graph, run one pass, check the new structure AND that the
// outputs still match the graph before the pass (ONNX Runtime's TransformerTester idea).
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ir/verifier.h"
#include "ops/registry.h"
#include "passes/pass.h"
#include "passes/passes.h"
#include "registry/builtin_registry.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"
#include "runtime/session.h"

namespace onnxkit::testing {

// A model importing ai.onnx `opset`, for building graphs by hand.
inline Model empty_model(int64_t opset = 13) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", opset}};
  return model;
}

inline ValueType float_type(std::vector<int64_t> dims) {
  std::vector<Dim> shape;
  for (int64_t d : dims) shape.push_back(d >= 0 ? Dim::known(d) : Dim::symbol("n"));
  return ValueType::tensor(DType::kFloat, shape);
}

// Random float tensor with a fixed seed (for initializers).
inline Tensor random_floats(Shape shape, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  return random_tensor(DType::kFloat, shape, rng);
}

// Serializes and reparses, so the copy shares nothing with `model`.
inline Model copy_model(const Model& model);

// Runs `pass` once on the main graph only (the pipeline visits subgraphs; tests of
// subgraph behaviour call run() on them directly); returns the number of changes.
inline size_t apply_pass(GraphPass& pass, Model& model, PassContext context = {}) {
  context.model = &model;
  context.registry = &builtin_registry();
  size_t changes = pass.run(model.graph(), context);
  model.graph().sort_topologically();
  Status verified = verify_model(model);
  EXPECT_TRUE(verified.ok()) << "graph invalid after " << pass.name() << ": " << verified.message();
  return changes;
}

// Random inputs for every graph input (symbolic dims: n = batch = 2, seq = 3), run through
// both models, compare.
inline ::testing::AssertionResult same_outputs(const Model& before, const Model& after,
                                               double rtol = 1e-4, double atol = 1e-5);

inline size_t count_ops(const Model& model, const std::string& op_type) {
  size_t count = 0;
  for (const Node* node : model.graph().nodes()) count += node->op_type() == op_type;
  return count;
}

}  // namespace onnxkit::testing

#include "onnx/model_io.h"

namespace onnxkit::testing {

inline Model copy_model(const Model& model) {
  auto bytes = serialize_model(model);
  if (!bytes) throw Error(bytes.error());
  auto copy = parse_model(bytes.value());
  if (!copy) throw Error(copy.error());
  return std::move(copy).value();
}

inline ::testing::AssertionResult same_outputs(const Model& before, const Model& after, double rtol,
                                               double atol) {
  std::map<std::string, int64_t> dims{{"n", 2}, {"batch", 2}, {"seq", 3}};
  std::mt19937_64 rng(42);
  NamedValues feeds;
  for (const Value* input : before.graph().inputs()) {
    if (input->has_initializer()) continue;
    feeds.emplace_back(input->name(),
                       random_tensor(input->type().elem_type, concrete_shape(*input, dims), rng));
  }
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
    Comparison c = compare_values(out_b.value()[i].second, out_a.value()[i].second, {rtol, atol});
    if (!c.ok) {
      return ::testing::AssertionFailure()
             << "output '" << out_a.value()[i].first << "': " << c.message;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace onnxkit::testing
