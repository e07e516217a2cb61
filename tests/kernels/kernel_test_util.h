// Optimized kernels against reference ones: build a small graph twice, run one copy on the
// optimized tier (level none, so the graph is unchanged) and the other on the reference
// kernels, compare with a relative tolerance scaled by the outputs' magnitude.
#pragma once

#include <gtest/gtest.h>

#include <random>

#include "../graph_test_util.h"
#include "onnxkit/session.h"
#include "ops/fused_ops.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit::testing {

inline const Tolerance kTolerance{1e-4, 1e-6, /*scale_by_mean=*/true};

inline Tensor random_floats(const Shape& shape, std::mt19937_64& rng) {
  return random_tensor(DType::kFloat, shape, rng);
}

// Runs `actual` on the optimized kernels and `expected` on the reference ones.
inline ::testing::AssertionResult matches(GraphBuilder& actual, GraphBuilder& expected,
                                          int threads = 1) {
  NamedValues got = run_model(std::move(actual.model()), actual.feeds(), optimized(threads));
  NamedValues want =
      run_model(std::move(expected.model()), expected.feeds(), SessionOptions::reference());
  for (size_t i = 0; i < want.size(); ++i) {
    Comparison c = compare_values(got[i].second, want[i].second, kTolerance);
    if (!c.ok) return ::testing::AssertionFailure() << c.message;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace onnxkit::testing
