#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Sets float attributes on a node.
SetAttributes float_attrs(std::vector<std::pair<std::string, float>> attrs) {
  return [attrs](Node* n) {
    for (const auto& [name, value] : attrs) set_float(n, name, value);
  };
}

TEST(Activation, ReluOnFloatsAndSignedIntegers) {
  expect_floats(run_one("Relu", {floats({3}, {-1.0f, 0.0f, 2.5f})}, 6), {0.0f, 0.0f, 2.5f});
  auto y = run_one("Relu", {Tensor::from_vector<int32_t>(DType::kInt32, {3}, {-7, 0, 7})}, 14);
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{0, 0, 7}));
  std::string error = run_error("Relu", {Tensor(DType::kUInt8, {1})}, 14);
  EXPECT_NE(error.find("uint8 is not supported"), std::string::npos) << error;
}

TEST(Activation, AttributeDefaultsAndOverrides) {
  Tensor x = floats({3}, {-2.0f, 0.0f, 3.0f});
  expect_floats(run_one("LeakyRelu", {x}, 16), {-0.02f, 0.0f, 3.0f});
  expect_floats(run_one("LeakyRelu", {x}, 6, float_attrs({{"alpha", 0.5f}})), {-1.0f, 0.0f, 3.0f});
  expect_floats(run_one("Elu", {x}, 6), {std::expm1(-2.0f), 0.0f, 3.0f});
  expect_floats(run_one("Selu", {x}, 6),
                {1.0507010f * 1.6732632f * std::expm1(-2.0f), 0.0f, 1.0507010f * 3.0f}, 1e-5f);
  expect_floats(run_one("Celu", {x}, 12, float_attrs({{"alpha", 2.0f}})),
                {2.0f * std::expm1(-1.0f), 0.0f, 3.0f});
  expect_floats(run_one("ThresholdedRelu", {x}, 10, float_attrs({{"alpha", 2.0f}})),
                {0.0f, 0.0f, 3.0f});
  expect_floats(run_one("HardSigmoid", {x}, 6), {0.1f, 0.5f, 1.0f});
  expect_floats(run_one("HardSwish", {floats({4}, {-4.0f, -1.0f, 1.0f, 4.0f})}, 14),
                {0.0f, -1.0f / 3.0f, 2.0f / 3.0f, 4.0f});
  expect_floats(run_one("Softsign", {x}, 1), {-2.0f / 3.0f, 0.0f, 0.75f});
  expect_floats(run_one("Tanh", {x}, 13), {std::tanh(-2.0f), 0.0f, std::tanh(3.0f)});
}

TEST(Activation, SigmoidAndSoftplusDoNotOverflow) {
  Tensor x = floats({4}, {-1000.0f, 0.0f, 2.0f, 1000.0f});
  expect_floats(run_one("Sigmoid", {x}, 13), {0.0f, 0.5f, 0.880797f, 1.0f});
  expect_floats(run_one("Softplus", {x}, 1), {0.0f, std::log(2.0f), 2.126928f, 1000.0f}, 1e-5f);
}

TEST(Activation, HalfTypesComputeInFloat) {
  auto h = Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(-1.0f), Float16(0.0f)});
  auto y = run_one("Sigmoid", {h}, 13);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_NEAR(static_cast<float>(y.data<Float16>()[0]), 0.268941f, 1e-3f);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[1]), 0.5f);
}

TEST(Activation, PReluBroadcastsSlopeUnidirectionally) {
  Tensor x = floats({2, 2, 3}, {-1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6});
  Tensor slope = floats({2, 1}, {10.0f, 100.0f});
  expect_floats(run_one("PRelu", {x, slope}, 16),
                {-10, 1, -20, 2, -300, 3, -40, 4, -50, 5, -600, 6});
  expect_floats(run_one("PRelu", {x, floats({1}, {0.5f})}, 9),
                {-0.5f, 1, -1, 2, -1.5f, 3, -2, 4, -2.5f, 5, -3, 6});
  std::string error = run_error("PRelu", {x, floats({2}, {1, 2})}, 16);
  EXPECT_NE(error.find("slope shape [2] does not broadcast to X shape [2,2,3]"), std::string::npos)
      << error;
  error = run_error("PRelu", {x, floats({3, 2, 3}, std::vector<float>(18, 1.0f))}, 16);
  EXPECT_NE(error.find("does not broadcast"), std::string::npos) << error;
}

TEST(Activation, PReluOpset6UsesPerChannelSlope) {
  Tensor x = floats({1, 2, 3}, {-1, -1, 1, -1, -1, 1});
  expect_floats(run_one("PRelu", {x, floats({2}, {2.0f, 3.0f})}, 6), {-2, -2, 1, -3, -3, 1});
}

TEST(Activation, PReluOnIntegers) {
  auto x = Tensor::from_vector<int64_t>(DType::kInt64, {3}, {-4, 0, 5});
  auto s = Tensor::from_vector<int64_t>(DType::kInt64, {1}, {3});
  EXPECT_EQ(values_of<int64_t>(run_one("PRelu", {x, s}, 16)), (std::vector<int64_t>{-12, 0, 5}));
}

TEST(Activation, ClipOpset6UsesAttributes) {
  Tensor x = floats({4}, {-2.0f, -0.2f, 0.7f, 3.0f});
  expect_floats(run_one("Clip", {x}, 6, float_attrs({{"min", -0.5f}, {"max", 0.5f}})),
                {-0.5f, -0.2f, 0.5f, 0.5f});
  expect_floats(run_one("Clip", {x}, 6, float_attrs({{"min", 0.0f}})), {0.0f, 0.0f, 0.7f, 3.0f});
}

TEST(Activation, Version1IgnoresConsumedInputs) {
  Tensor x = floats({4}, {-2.0f, -0.2f, 0.7f, 3.0f});
  const SetAttributes legacy = [](Node* n) { set_ints(n, "consumed_inputs", {0}); };
  expect_floats(run_one("Relu", {x}, 1, legacy), {0.0f, 0.0f, 0.7f, 3.0f});
  expect_floats(run_one("Clip", {x}, 1,
                        [&](Node* n) {
                          legacy(n);
                          set_float(n, "min", -0.5f);
                          set_float(n, "max", 0.5f);
                        }),
                {-0.5f, -0.2f, 0.5f, 0.5f});
  expect_floats(run_one("Clip", {x}, 1), {-2.0f, -0.2f, 0.7f, 3.0f});
  // Version 1 PRelu reads a 1-D slope per channel, as 6 does.
  Tensor y = floats({1, 2, 2}, {-1, 1, -1, 1});
  expect_floats(run_one("PRelu", {y, floats({2}, {2.0f, 3.0f})}, 1, legacy), {-2, 1, -3, 1});
}

TEST(Activation, SeluVersion1HasRoundedDefaults) {
  Tensor x = floats({2}, {1.0f, -1.0f});
  Tensor v1 = run_one("Selu", {x}, 1);
  EXPECT_EQ(v1.data<float>()[0], 1.0507f);
  EXPECT_NEAR(v1.data<float>()[1], 1.0507f * 1.6732f * std::expm1(-1.0f), 1e-6f);
  EXPECT_EQ(run_one("Selu", {x}, 6).data<float>()[0], 1.05070102214813232421875f);
  // Attributes given win at any version.
  EXPECT_EQ(run_one("Selu", {x}, 1, float_attrs({{"gamma", 2.0f}})).data<float>()[0], 2.0f);
}

TEST(Activation, ClipOpset11UsesOptionalInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floats({5}, {-2.0f, -0.2f, 0.7f, 3.0f, nan});
  expect_floats(run_one("Clip", {x, Tensor(), floats({}, {1.0f})}, 11),
                {-2.0f, -0.2f, 0.7f, 1.0f, nan});
  expect_floats(run_one("Clip", {x, floats({}, {0.0f})}, 13), {0.0f, 0.0f, 0.7f, 3.0f, nan});
  expect_floats(run_one("Clip", {x}, 13), {-2.0f, -0.2f, 0.7f, 3.0f, nan});
  // min > max: every value becomes max.
  expect_floats(run_one("Clip", {x, floats({}, {2.0f}), floats({}, {1.0f})}, 13),
                {1.0f, 1.0f, 1.0f, 1.0f, nan});
  std::string error = run_error("Clip", {x, floats({2}, {0.0f, 1.0f})}, 13);
  EXPECT_NE(error.find("min must be a scalar, got shape [2]"), std::string::npos) << error;
}

TEST(Activation, ClipOnIntegers) {
  auto x = Tensor::from_vector<int8_t>(DType::kInt8, {4}, {-128, -3, 5, 127});
  auto lo = Tensor::from_vector<int8_t>(DType::kInt8, {}, {-4});
  auto hi = Tensor::from_vector<int8_t>(DType::kInt8, {}, {4});
  EXPECT_EQ(values_of<int8_t>(run_one("Clip", {x, lo, hi}, 12)),
            (std::vector<int8_t>{-4, -3, 4, 4}));
  auto big = Tensor::from_vector<int64_t>(DType::kInt64, {2}, {INT64_MAX, INT64_MIN});
  auto big_hi = Tensor::from_vector<int64_t>(DType::kInt64, {1}, {INT64_MAX - 1});
  EXPECT_EQ(values_of<int64_t>(run_one("Clip", {big, Tensor(), big_hi}, 13)),
            (std::vector<int64_t>{INT64_MAX - 1, INT64_MIN}));
  std::string error = run_error("Clip", {x, floats({}, {0.0f})}, 13);
  EXPECT_NE(error.find("min type float differs from input type int8"), std::string::npos) << error;
}

TEST(Activation, ShrinkOnFloatsAndIntegers) {
  Tensor x = floats({5}, {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});
  expect_floats(run_one("Shrink", {x}, 9), {-2.0f, 0.0f, 0.0f, 0.0f, 2.0f});
  expect_floats(run_one("Shrink", {x}, 9, float_attrs({{"bias", 1.5f}, {"lambd", 1.5f}})),
                {-0.5f, 0.0f, 0.0f, 0.0f, 0.5f});
  auto xi = Tensor::from_vector<int32_t>(DType::kInt32, {5}, {-5, -1, 0, 1, 5});
  auto yi = run_one("Shrink", {xi}, 9, float_attrs({{"bias", 2.0f}, {"lambd", 1.0f}}));
  EXPECT_EQ(values_of<int32_t>(yi), (std::vector<int32_t>{-3, 0, 0, 0, 3}));
}

TEST(Activation, EmptyInputsAndTypeErrors) {
  auto y = run_one("Selu", {floats({3, 0}, {})}, 6);
  EXPECT_EQ(y.shape(), (Shape{3, 0}));
  auto p = run_one("PRelu", {floats({0, 2}, {}), floats({2}, {1, 2})}, 16);
  EXPECT_EQ(p.shape(), (Shape{0, 2}));
  std::string error = run_error("Sigmoid", {Tensor(DType::kInt32, {1})}, 13);
  EXPECT_NE(error.find("int32 is not supported"), std::string::npos) << error;
  error = run_error("PRelu", {floats({1}, {1}), Tensor(DType::kDouble, {1})}, 16);
  EXPECT_NE(error.find("slope type double differs from X type float"), std::string::npos) << error;
}

TEST(Activation, GeluMishSwish) {
  Tensor x = floats({3}, {-1.0f, 0.0f, 2.0f});
  expect_floats(run_one("Gelu", {x}, 20), {-0.15865526f, 0.0f, 1.9544997f});
  expect_floats(run_one("Gelu", {x}, 20, with_string("approximate", "tanh")),
                {-0.15880801f, 0.0f, 1.9545977f});
  expect_floats(run_one("Mish", {x}, 18), {-0.30340144f, 0.0f, 1.9439590f});
  expect_floats(run_one("Swish", {x}, 24), {-0.26894142f, 0.0f, 1.7615942f});
  expect_floats(run_one("Swish", {x}, 24, float_attrs({{"alpha", 2.0f}})),
                {-0.11920292f, 0.0f, 1.9640276f});
  std::string error = run_error("Gelu", {x}, 20, with_string("approximate", "fast"));
  EXPECT_NE(error.find("approximate is 'fast'"), std::string::npos) << error;
}

}  // namespace
}  // namespace onnxkit
