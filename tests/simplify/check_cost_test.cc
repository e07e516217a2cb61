// --check-n auto: the run-cost estimate it weighs, and the check it runs, skips or is told
// to run.
#include <gtest/gtest.h>

#include "../graph_test_util.h"
#include "onnxkit/simplify.h"
#include "registry/builtin_registry.h"
#include "simplify/check_cost.h"

namespace onnxkit {
namespace {

using testing::Attr;
using testing::GraphBuilder;

// x: float[N,3,H,W] -> Conv 3x3 (pads 1, 4 filters) -> MatMul with [W, 8].
Model conv_matmul_model() {
  GraphBuilder b(13);
  Value* x = b.input("x", {Dim::symbol("N"), Dim::known(3), Dim::symbol("H"), Dim::symbol("W")},
                     DType::kFloat);
  Tensor w(DType::kFloat, {4, 3, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.mutable_data<float>()[i] = 0.01f * (i % 7);
  Value* conv = b.op("Conv", {x, b.constant(w)}, {Attr::Ints("pads", {1, 1, 1, 1})});
  Tensor m(DType::kFloat, {224, 8});
  for (int64_t i = 0; i < m.numel(); ++i) m.mutable_data<float>()[i] = 0.02f * (i % 5);
  b.output(b.op("MatMul", {conv, b.constant(m)}));
  return std::move(b.model());
}

// The check's sizes: N=1 (a batch), H=W=224 (they reach the Conv's spatial axes).
constexpr uint64_t kConvOut = 1 * 4 * 224 * 224;
constexpr uint64_t kMatMulOut = 1 * 4 * 224 * 8;
constexpr uint64_t kUnits = kConvOut * (1 + 3 * 3 * 3) + kMatMulOut * (1 + 224);

TEST(CheckCost, MultiplyAddsAndElementsFromStaticShapes) {
  Model model = conv_matmul_model();
  SimplifyOptions options;
  options.check_n = 0;
  ASSERT_TRUE(simplify(model, options).ok());  // infers the shapes
  // The Conv's output size is unknown in the model ([N,4,?,?]): inferred again from the
  // input's size.
  const RunCostEstimate estimate =
      estimate_run_cost(model, {{"x", {1, 3, 224, 224}}}, builtin_registry());
  EXPECT_EQ(estimate.multiply_adds, kConvOut * 27 + kMatMulOut * 224);
  EXPECT_EQ(estimate.elements, kConvOut + kMatMulOut);
  EXPECT_EQ(estimate.unsized_nodes, 0u);
  // From the model's own shapes, unknown dims count as 1 and their nodes as unsized.
  const RunCostEstimate unsized = estimate_run_cost(model.graph(), {{"N", 1}});
  EXPECT_EQ(unsized.unsized_nodes, 2u);
  EXPECT_LT(unsized.units(), estimate.units());
}

TEST(CheckCost, AutoChecksWhatFitsItsBudget) {
  Model model = conv_matmul_model();
  auto report = simplify(model, SimplifyOptions{});
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().checks_run, 1);
  EXPECT_TRUE(report.value().check_ok);
  EXPECT_EQ(report.value().check_cost_estimate, kUnits);
  EXPECT_TRUE(report.value().check_skipped.empty());
}

TEST(CheckCost, AutoSkipsOverItsBudgetAndSaysHowToForceIt) {
  Model model = conv_matmul_model();
  SimplifyOptions options;
  options.check_auto_budget = 2 * kUnits - 1;
  auto report = simplify(model, options);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().checks_run, 0);
  EXPECT_TRUE(report.value().check_ok);
  EXPECT_EQ(report.value().check_cost_estimate, kUnits);
  const std::string& why = report.value().check_skipped;
  EXPECT_NE(why.find("check skipped"), std::string::npos) << why;
  EXPECT_NE(why.find("--check-n 1"), std::string::npos) << why;
}

TEST(CheckCost, ACountForcesTheChecksAndZeroTurnsThemOff) {
  for (int n : {0, 1, 2}) {
    Model model = conv_matmul_model();
    SimplifyOptions options;
    options.check_n = n;
    options.check_auto_budget = 0;  // only auto reads it
    auto report = simplify(model, options);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(report.value().checks_run, n);
    EXPECT_EQ(report.value().check_cost_estimate, 0u);
    EXPECT_TRUE(report.value().check_skipped.empty());
  }
  Model model = conv_matmul_model();
  SimplifyOptions options;
  options.check_n = -2;
  auto report = simplify(model, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().find("check_n"), std::string::npos) << report.error();
}

}  // namespace
}  // namespace onnxkit
