// Unit tests of the loss op family (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want,
                     double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "at " << i;
}

SetAttributes loss_attrs(const std::string& reduction,
                         std::optional<int64_t> ignore_index = std::nullopt) {
  return [=](Node* n) {
    set_string(n, "reduction", reduction);
    if (ignore_index) set_int(n, "ignore_index", *ignore_index);
  };
}

// The examples of the ONNX NegativeLogLikelihoodLoss documentation: N, C, d1 = 2, 3, 2.
Tensor nll_input() {
  return Tensor::from_vector<float>(DType::kFloat, {2, 3, 2}, {1, 2, 2, 2, 3, 2, 0, 1, 2, 2, 1, 2});
}
Tensor nll_target() {
  return Tensor::from_vector<int64_t>(DType::kInt64, {2, 2}, {2, 1, 0, 2});
}
Tensor nll_weight() {
  return Tensor::from_vector<float>(DType::kFloat, {3}, {0.2f, 0.3f, 0.1f});
}

// ---- NegativeLogLikelihoodLoss ----

TEST(NegativeLogLikelihoodLoss, NoneKeepsTargetShape) {
  Tensor y =
      run_op("NegativeLogLikelihoodLoss", {nll_input(), nll_target()}, 13, loss_attrs("none"))[0];
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_near_all(as_doubles<float>(y), {-3, -2, 0, -2}, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, WeightedSumAndMean) {
  Tensor sum = run_op("NegativeLogLikelihoodLoss", {nll_input(), nll_target(), nll_weight()}, 13,
                      loss_attrs("sum"))[0];
  EXPECT_EQ(sum.shape(), (Shape{}));
  EXPECT_NEAR(as_doubles<float>(sum)[0], -1.1, 1e-6);
  // Mean divides by the weights the samples used: 0.1 + 0.3 + 0.2 + 0.1.
  Tensor mean = run_op("NegativeLogLikelihoodLoss", {nll_input(), nll_target(), nll_weight()}, 12,
                       loss_attrs("mean"))[0];
  EXPECT_NEAR(as_doubles<float>(mean)[0], -1.1 / 0.7, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, IgnoreIndexDropsSamplesFromTheMean) {
  Tensor target = Tensor::from_vector<int64_t>(DType::kInt64, {2, 2}, {2, 1, -1, 2});
  Tensor mean =
      run_op("NegativeLogLikelihoodLoss", {nll_input(), target}, 13, loss_attrs("mean", -1))[0];
  EXPECT_NEAR(as_doubles<float>(mean)[0], -7.0 / 3.0, 1e-6);
  // With weights the ignored sample's weight (none: it has no class) is left out too.
  Tensor weighted = run_op("NegativeLogLikelihoodLoss", {nll_input(), target, nll_weight()}, 13,
                           loss_attrs("mean", -1))[0];
  EXPECT_NEAR(as_doubles<float>(weighted)[0], (-0.3 - 0.6 - 0.2) / 0.5, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, IgnoreIndexOutsideTheClasses) {
  Tensor target = Tensor::from_vector<int32_t>(DType::kInt32, {2, 2}, {2, 10, 10, 0});
  Tensor y =
      run_op("NegativeLogLikelihoodLoss", {nll_input(), target}, 13, loss_attrs("none", 10))[0];
  expect_near_all(as_doubles<float>(y), {-3, 0, 0, -1}, 1e-6);
}

TEST(NegativeLogLikelihoodLoss, DoubleAndFloat16) {
  Tensor xd = Tensor::from_vector<double>(DType::kDouble, {2, 2}, {-0.25, -1.5, -2.0, -0.125});
  Tensor t = Tensor::from_vector<int32_t>(DType::kInt32, {2}, {1, 0});
  Tensor yd = run_op("NegativeLogLikelihoodLoss", {xd, t}, 13, loss_attrs("mean"))[0];
  EXPECT_EQ(yd.dtype(), DType::kDouble);
  EXPECT_DOUBLE_EQ(as_doubles<double>(yd)[0], 1.75);
  Tensor xh = Tensor::from_vector<Float16>(
      DType::kFloat16, {2, 2}, {Float16(-0.25f), Float16(-1.5f), Float16(-2.0f), Float16(-0.125f)});
  Tensor yh = run_op("NegativeLogLikelihoodLoss", {xh, t}, 13, loss_attrs("sum"))[0];
  EXPECT_EQ(yh.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(yh.data<Float16>()[0]), 3.5f);
}

TEST(NegativeLogLikelihoodLoss, HigherRankAndEmptyBatch) {
  // [N, C, d1, d2] = [1, 2, 1, 2]: classes interleave with the trailing positions.
  Tensor x = Tensor::from_vector<float>(DType::kFloat, {1, 2, 1, 2}, {-1, -2, -3, -4});
  Tensor t = Tensor::from_vector<int64_t>(DType::kInt64, {1, 1, 2}, {1, 0});
  Tensor y = run_op("NegativeLogLikelihoodLoss", {x, t}, 13, loss_attrs("none"))[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  expect_near_all(as_doubles<float>(y), {3, 2}, 0);

  Tensor empty_x = Tensor::from_vector<float>(DType::kFloat, {0, 3}, {});
  Tensor empty_t = Tensor::from_vector<int64_t>(DType::kInt64, {0}, {});
  Tensor none = run_op("NegativeLogLikelihoodLoss", {empty_x, empty_t}, 13, loss_attrs("none"))[0];
  EXPECT_EQ(none.shape(), (Shape{0}));
  Tensor sum = run_op("NegativeLogLikelihoodLoss", {empty_x, empty_t}, 13, loss_attrs("sum"))[0];
  EXPECT_EQ(as_doubles<float>(sum)[0], 0.0);
}

TEST(NegativeLogLikelihoodLoss, Errors) {
  Tensor bad_target = Tensor::from_vector<int64_t>(DType::kInt64, {2, 2}, {2, 3, 0, 1});
  expect_error(
      [&] {
        run_op("NegativeLogLikelihoodLoss", {nll_input(), bad_target}, 13);
      },
      "target value 3 at flat index 1 is out of range for 3 classes");
  Tensor wrong_shape = Tensor::from_vector<int64_t>(DType::kInt64, {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_error(
      [&] {
        run_op("NegativeLogLikelihoodLoss", {nll_input(), wrong_shape}, 13);
      },
      "target has shape [2,3], expected [2,2]");
  Tensor short_weight = Tensor::from_vector<float>(DType::kFloat, {2}, {1, 1});
  expect_error(
      [&] {
        run_op("NegativeLogLikelihoodLoss", {nll_input(), nll_target(), short_weight}, 13);
      },
      "weight has shape [2], expected [3]");
  expect_error(
      [&] {
        run_op("NegativeLogLikelihoodLoss", {nll_input(), nll_target()}, 13, loss_attrs("max"));
      },
      "reduction 'max'");
}

// ---- SoftmaxCrossEntropyLoss ----

TEST(SoftmaxCrossEntropyLoss, StableForLargeScoresWithLogProb) {
  Tensor scores = Tensor::from_vector<float>(DType::kFloat, {2, 3}, {1000, 0, -5, 0.5f, 0.25f, 3});
  Tensor labels = Tensor::from_vector<int64_t>(DType::kInt64, {2}, {1, 2});
  auto out = run_op("SoftmaxCrossEntropyLoss", {scores, labels}, 13, loss_attrs("none"), 2);
  const Tensor& loss = out[0];
  EXPECT_EQ(loss.shape(), (Shape{2}));
  expect_near_all(as_doubles<float>(loss), {1000.0, 0.136288839722263}, 1e-4);
  const Tensor& log_prob = out[1];
  EXPECT_EQ(log_prob.shape(), (Shape{2, 3}));
  expect_near_all(as_doubles<float>(log_prob),
                  {0.0, -1000.0, -1005.0, -2.63628884, -2.88628884, -0.13628884}, 1e-4);
}

TEST(SoftmaxCrossEntropyLoss, ThreeDimsWeightsAndIgnoreIndex) {
  // scores[n, c, d] = 0.5 * (6n + 2c + d) - 1, except scores[1, 2, 1] = 4.
  std::vector<float> values;
  for (int i = 0; i < 12; ++i) values.push_back(0.5f * static_cast<float>(i) - 1.0f);
  values[11] = 4.0f;
  Tensor scores = Tensor::from_vector<float>(DType::kFloat, {2, 3, 2}, values);
  Tensor labels = Tensor::from_vector<int32_t>(DType::kInt32, {2, 2}, {0, 2, -1, 1});
  Tensor weights = Tensor::from_vector<float>(DType::kFloat, {3}, {1, 2, 3});
  Tensor mean =
      run_op("SoftmaxCrossEntropyLoss", {scores, labels, weights}, 12, loss_attrs("mean", -1))[0];
  EXPECT_EQ(mean.shape(), (Shape{}));
  EXPECT_NEAR(as_doubles<float>(mean)[0], 0.973114178075163, 1e-5);
  Tensor sum =
      run_op("SoftmaxCrossEntropyLoss", {scores, labels, weights}, 13, loss_attrs("sum", -1))[0];
  EXPECT_NEAR(as_doubles<float>(sum)[0], 5.838685068450978, 1e-5);
}

TEST(SoftmaxCrossEntropyLoss, BFloat16Scores) {
  // Two equal scores: loss log(2) for either label.
  Tensor scores =
      Tensor::from_vector<BFloat16>(DType::kBFloat16, {1, 2}, {BFloat16(3.0f), BFloat16(3.0f)});
  Tensor labels = Tensor::from_vector<int64_t>(DType::kInt64, {1}, {0});
  Tensor y = run_op("SoftmaxCrossEntropyLoss", {scores, labels}, 13)[0];
  EXPECT_EQ(y.dtype(), DType::kBFloat16);
  EXPECT_NEAR(static_cast<float>(y.data<BFloat16>()[0]), std::log(2.0f), 4e-3);
}

TEST(SoftmaxCrossEntropyLoss, RejectsBadLabels) {
  Tensor scores = Tensor::from_vector<float>(DType::kFloat, {1, 2}, {0, 0});
  Tensor labels = Tensor::from_vector<int64_t>(DType::kInt64, {1}, {-2});
  expect_error(
      [&] {
        run_op("SoftmaxCrossEntropyLoss", {scores, labels}, 13);
      },
      "labels value -2 at flat index 0 is out of range for 2 classes");
  Tensor vector_scores = Tensor::from_vector<float>(DType::kFloat, {2}, {0, 0});
  expect_error(
      [&] {
        run_op("SoftmaxCrossEntropyLoss", {vector_scores, labels}, 13);
      },
      "scores has shape [2], expected [N, C, d1, ...]");
}

}  // namespace
}  // namespace onnxkit
