// Optimizers of ai.onnx.preview.training: the update rules with T > 0 (the conformance cases
// all use T = 0), double tensors, broadcasting, unread outputs and error messages.
// Expected values from numpy with the schema's pseudo code.
#include <gtest/gtest.h>

#include <functional>

#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

constexpr const char* kDomain = "ai.onnx.preview.training";

std::vector<Tensor> run_training(const std::string& op, std::vector<Tensor> inputs,
                                 size_t num_outputs, const SetAttributes& attrs) {
  return run_op(op, std::move(inputs), 17, attrs, num_outputs, kDomain);
}

std::string training_error(const std::string& op, std::vector<Tensor> inputs, size_t num_outputs,
                           const SetAttributes& attrs) {
  return run_error(op, std::move(inputs), 17, attrs, num_outputs, kDomain);
}

Tensor scalar_r(double r) {
  return Tensor::from_vector<double>(DType::kDouble, {}, {r});
}
Tensor scalar_t(int64_t t) {
  return Tensor::from_vector<int64_t>(DType::kInt64, {}, {t});
}
Tensor vec(std::vector<double> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector<double>(DType::kDouble, shape, v);
}

void expect_values(const Tensor& t, const std::vector<double>& expected, Shape shape = {}) {
  ASSERT_EQ(t.dtype(), DType::kDouble);
  if (shape.empty()) shape = {static_cast<int64_t>(expected.size())};
  ASSERT_EQ(t.shape(), shape);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t.data<double>()[i], expected[i], 1e-6) << "element " << i;
  }
}

TEST(Adagrad, DecayedLearningRate) {
  // r = 0.5 / (1 + 2 * 0.25)
  const auto out = run_training(
      "Adagrad",
      {scalar_r(0.5), scalar_t(2), vec({1, -2, 3}), vec({0.5, 0.25, -1}), vec({0, 1, 4})}, 2,
      [](Node* n) {
        set_float(n, "norm_coefficient", 0.1f);
        set_float(n, "epsilon", 1e-3f);
        set_float(n, "decay_factor", 0.25f);
      });
  expect_values(out[0], {0.6672212978369385, -2.016629263798518, 3.110064865421217});
  expect_values(out[1], {0.36, 1.0025, 4.49});
}

TEST(Adam, BiasCorrectionAndPostRegularization) {
  // T = 3: R_adjusted = R * sqrt(1 - beta^3) / (1 - alpha^3); X_final = 0.9 * X_new.
  const auto out = run_training("Adam",
                                {scalar_r(0.1), scalar_t(3), vec({1, 2}), vec({-0.5, 0.75}),
                                 vec({0.1, -0.2}), vec({0.5, 0.25})},
                                3, [](Node* n) {
                                  set_float(n, "alpha", 0.9f);
                                  set_float(n, "beta", 0.99f);
                                  set_float(n, "epsilon", 1e-4f);
                                  set_float(n, "norm_coefficient", 0.01f);
                                  set_float(n, "norm_coefficient_post", 0.1f);
                                });
  expect_values(out[0], {0.8966731922100518, 1.8117079689903683});
  expect_values(out[1], {0.041, -0.103});
  expect_values(out[2], {0.497401, 0.253429});
}

void set_momentum(Node* n, const std::string& mode) {
  set_float(n, "alpha", 0.9f);
  set_float(n, "beta", 0.5f);
  set_float(n, "norm_coefficient", 0.2f);
  set_string(n, "mode", mode);
}

TEST(Momentum, StandardWithBroadcastGradient) {
  // T = 1 uses beta (T = 0 would use 1); G of shape [1] broadcasts over X [2, 2].
  const auto out = run_training("Momentum",
                                {scalar_r(0.1), scalar_t(1), vec({1, 2, 3, 4}, {2, 2}), vec({0.5}),
                                 vec({0.1, 0.2, 0.3, 0.4}, {2, 2})},
                                2, [](Node* n) { set_momentum(n, "standard"); });
  expect_values(out[0], {0.956, 1.937, 2.918, 3.899}, {2, 2});
  expect_values(out[1], {0.44, 0.63, 0.82, 1.01}, {2, 2});
}

TEST(Momentum, NesterovOnlyXNewRead) {
  const auto out = run_training("Momentum",
                                {scalar_r(0.1), scalar_t(1), vec({1, 2, 3, 4}, {2, 2}), vec({0.5}),
                                 vec({0.1, 0.2, 0.3, 0.4}, {2, 2})},
                                1, [](Node* n) { set_momentum(n, "nesterov"); });
  ASSERT_EQ(out.size(), 1u);
  expect_values(out[0], {0.8904, 1.8533, 2.8162, 3.7791}, {2, 2});
}

TEST(Momentum, FloatTensorsWithDoubleRate) {
  const auto out = run_training(
      "Momentum",
      {scalar_r(0.1), scalar_t(1), Tensor::from_vector<float>(DType::kFloat, {1}, {1.0f}),
       Tensor::from_vector<float>(DType::kFloat, {1}, {0.5f}),
       Tensor::from_vector<float>(DType::kFloat, {1}, {0.1f})},
      2, [](Node* n) { set_momentum(n, "standard"); });
  ASSERT_EQ(out[0].dtype(), DType::kFloat);
  EXPECT_NEAR(out[0].data<float>()[0], 0.956f, 1e-6f);
  EXPECT_NEAR(out[1].data<float>()[0], 0.44f, 1e-6f);
}

TEST(Optimizers, Errors) {
  auto adagrad = [](Node*) {};
  EXPECT_NE(training_error("Adagrad", {scalar_r(0.1), scalar_t(0), vec({1}), vec({1})}, 2, adagrad)
                .find("3 lists of equal length), got 4 inputs"),
            std::string::npos);
  EXPECT_NE(training_error("Adagrad",
                           {scalar_r(0.1), Tensor::from_vector<int32_t>(DType::kInt32, {}, {0}),
                            vec({1}), vec({1}), vec({1})},
                           2, adagrad)
                .find("T has type int32, must be int64"),
            std::string::npos);
  EXPECT_NE(training_error("Adagrad", {vec({0.1, 0.2}), scalar_t(0), vec({1}), vec({1}), vec({1})},
                           2, adagrad)
                .find("R must be a scalar, got shape [2]"),
            std::string::npos);
  EXPECT_NE(training_error("Adagrad",
                           {scalar_r(0.1), scalar_t(0), vec({1}),
                            Tensor::from_vector<float>(DType::kFloat, {1}, {1.0f}), vec({1})},
                           2, adagrad)
                .find("input 3 has type float, expected double"),
            std::string::npos);
  EXPECT_NE(training_error("Momentum", {scalar_r(0.1), scalar_t(0), vec({1}), vec({1}), vec({1})},
                           2, [](Node* n) { set_momentum(n, "heavy"); })
                .find("mode is 'heavy'"),
            std::string::npos);
}

}  // namespace
}  // namespace onnxkit
