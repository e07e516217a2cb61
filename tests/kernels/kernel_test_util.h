// Optimized kernels against reference ones: build a small graph twice, run one copy on the
// optimized tier (level none, so the graph is unchanged) and the other on the reference
// kernels, compare with a relative tolerance scaled by the outputs' magnitude.
#pragma once

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../attribute_test_util.h"
#include "ir/model.h"
#include "onnxkit/session.h"
#include "ops/fused_ops.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit::testing {

inline const Tolerance kTolerance{1e-4, 1e-6, /*scale_by_mean=*/true};

// Builds a small graph whose fed inputs are remembered with their values.
class GraphBuilder {
 public:
  explicit GraphBuilder(int64_t opset = 14) {
    model_.ir_version = 8;
    model_.opset_imports = {{"", opset}, {std::string(kOnnxkitDomain), 1}};
  }

  // A graph input; `static_shape` declares its dims (else the shape is left unknown).
  Value* input(Tensor value, bool static_shape = false) {
    const std::string name = fmt::format("x{}", feeds_.size());
    std::optional<std::vector<Dim>> dims;
    if (static_shape) {
      dims.emplace();
      for (int64_t d : value.shape()) dims->push_back(Dim::known(d));
    }
    Value* v = model_.graph().add_input(name, ValueType::tensor(value.dtype(), dims));
    feeds_.emplace_back(name, std::move(value));
    return v;
  }
  Value* constant(Tensor value) {
    return model_.graph().add_initializer(fmt::format("c{}", constants_++), std::move(value));
  }
  Value* scalar(float value) {
    return constant(Tensor::from_vector(DType::kFloat, {}, std::vector<float>{value}));
  }
  Value* node(const std::string& op, std::vector<Value*> inputs,
              const std::function<void(Node*)>& attributes = {}, const std::string& domain = "") {
    const std::string index = std::to_string(nodes_++);
    Node* n = model_.graph().add_node(op, std::move(inputs), {fmt::format("v{}", index)}, domain,
                                      op + index);
    if (attributes) attributes(n);
    return n->outputs()[0];
  }
  void output(Value* value) { model_.graph().add_output(value); }

  Model& model() { return model_; }
  const NamedValues& feeds() const { return feeds_; }

 private:
  Model model_;
  NamedValues feeds_;
  int constants_ = 0, nodes_ = 0;
};

inline Tensor random_floats(const Shape& shape, std::mt19937_64& rng) {
  return random_tensor(DType::kFloat, shape, rng);
}

inline SessionOptions optimized(int threads = 1) {
  SessionOptions options;
  options.level = OptimizationLevel::kNone;
  options.kernels = KernelTier::kOptimized;
  options.intra_op_threads = threads;
  return options;
}

inline NamedValues run(Model model, const NamedValues& feeds, const SessionOptions& options) {
  auto session = Session::create(std::move(model), options);
  if (!session) throw Error(session.error());
  auto result = session.value()->run(feeds);
  if (!result) throw Error(result.error());
  return std::move(result).value();
}

// Runs `actual` on the optimized kernels and `expected` on the reference ones.
inline ::testing::AssertionResult matches(GraphBuilder& actual, GraphBuilder& expected,
                                          int threads = 1) {
  NamedValues got = run(std::move(actual.model()), actual.feeds(), optimized(threads));
  NamedValues want =
      run(std::move(expected.model()), expected.feeds(), SessionOptions::reference());
  for (size_t i = 0; i < want.size(); ++i) {
    Comparison c = compare_values(got[i].second, want[i].second, kTolerance);
    if (!c.ok) return ::testing::AssertionFailure() << c.message;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace onnxkit::testing
