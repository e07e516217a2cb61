// Running one node on the fast kernels and on the reference kernels, at every SIMD level
// this CPU has, and comparing: what the fast-kernel tests share.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "../ops/op_test_util.h"
#include "kernels/vector_math.h"
#include "onnxkit/session.h"
#include "ops/registry.h"
#include "registry/builtin_registry.h"

namespace onnxkit::testing {

// The fast tier at level none (the node as given), with two threads so that parallel
// splits are exercised on big enough inputs.
inline SessionOptions fast_options() {
  return optimized(2);
}

// True when the optimized tier gives this node another kernel class than the reference
// tier (so a comparison really tests a fast kernel, not the reference against itself).
inline bool has_fast_kernel(const NodeCase& c) {
  Model model = make_model(c);
  const Node* node = model.graph().nodes().front();
  const int64_t opset = c.domain.empty() ? c.opset : 1;
  KernelCreateContext context(*node, opset, builtin_registry());
  const auto fast = builtin_registry().create_kernel(context, KernelTier::kOptimized);
  const auto reference = builtin_registry().create_kernel(context, KernelTier::kReference);
  return typeid(*fast) != typeid(*reference);
}

inline std::vector<SimdLevel> simd_levels() {
  std::vector<SimdLevel> levels{SimdLevel::kScalar};
  if (detected_simd_level() >= SimdLevel::kAvx2) levels.push_back(SimdLevel::kAvx2);
  if (detected_simd_level() >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

// |fast - ref| <= atol + rtol * |ref| elementwise; NaN matches NaN, infinities match exactly;
// with rtol == atol == 0 the bits must match (so -0 differs from +0).
inline void expect_tensors_close(const Tensor& fast, const Tensor& ref, double rtol, double atol,
                                 const std::string& what) {
  ASSERT_EQ(fast.dtype(), ref.dtype()) << what;
  ASSERT_EQ(fast.shape(), ref.shape()) << what;
  if (fast.dtype() != DType::kFloat) {
    ASSERT_TRUE(fast.same_contents(ref)) << what;
    return;
  }
  const float* f = fast.data<float>();
  const float* r = ref.data<float>();
  int reported = 0;
  for (int64_t i = 0; i < fast.numel(); ++i) {
    bool ok;
    if (std::isnan(r[i]) || std::isnan(f[i])) {
      ok = std::isnan(r[i]) && std::isnan(f[i]);
    } else if (std::isinf(r[i]) || std::isinf(f[i])) {
      ok = f[i] == r[i];
    } else if (rtol == 0 && atol == 0) {
      ok = std::memcmp(&f[i], &r[i], sizeof(float)) == 0;
    } else {
      ok = std::abs(static_cast<double>(f[i]) - r[i]) <= atol + rtol * std::abs(r[i]);
    }
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " fast " << f[i] << " reference " << r[i];
    }
  }
}

// Runs the case on the reference tier once and on the fast tier at every SIMD level.
inline void expect_fast_matches_reference(const NodeCase& c, double rtol, double atol,
                                          const std::string& what) {
  ASSERT_TRUE(has_fast_kernel(c)) << what << ": no fast kernel took the node";
  const std::vector<Tensor> reference = run_node(c, SessionOptions::reference());
  for (SimdLevel level : simd_levels()) {
    SimdLevelOverride force(level);
    const std::vector<Tensor> fast = run_node(c, fast_options());
    ASSERT_EQ(fast.size(), reference.size());
    for (size_t i = 0; i < fast.size(); ++i) {
      expect_tensors_close(
          fast[i], reference[i], rtol, atol,
          what + " output " + std::to_string(i) + " at " + std::string(simd_level_name(level)));
    }
  }
}

// normal(0, scale) floats; with `specials`, NaN, +-inf, +-0 and huge values sprinkled in.
inline Tensor random_floats(const Shape& shape, uint32_t seed, float scale = 1.0f,
                            bool specials = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Tensor t(DType::kFloat, shape);
  float* p = t.mutable_data<float>();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float special[] = {
      std::numeric_limits<float>::quiet_NaN(), kInf, -kInf, 0.0f, -0.0f, 1e30f, -1e30f, 1e-40f};
  for (int64_t i = 0; i < t.numel(); ++i) {
    p[i] = normal(rng);
    if (specials && i % 7 == 3) p[i] = special[(i / 7) % 8];
  }
  return t;
}

inline Tensor float_scalar(float value, Shape shape = {}) {
  Tensor t(DType::kFloat, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = value;
  return t;
}

}  // namespace onnxkit::testing
