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

TEST(ElementwiseUnary, NegWrapsSignedIntegersAndRejectsUnsigned) {
  auto y = run_one("Neg", {Tensor::from_vector<int8_t>(DType::kInt8, {4}, {1, -5, 127, -128})}, 13);
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{-1, 5, -127, -128}));
  auto z = run_one("Neg", {Tensor::from_vector<int64_t>(DType::kInt64, {2}, {7, -9})}, 13);
  EXPECT_EQ(values_of<int64_t>(z), (std::vector<int64_t>{-7, 9}));
  std::string error = run_error("Neg", {Tensor(DType::kUInt8, {2})}, 13);
  EXPECT_NE(error.find("uint8 is not supported"), std::string::npos) << error;
}

TEST(ElementwiseUnary, AbsAndSignOnIntegers) {
  auto a = run_one("Abs", {Tensor::from_vector<int32_t>(DType::kInt32, {3}, {-3, 0, 4})}, 13);
  EXPECT_EQ(values_of<int32_t>(a), (std::vector<int32_t>{3, 0, 4}));
  auto u = run_one("Abs", {Tensor::from_vector<uint16_t>(DType::kUInt16, {2}, {65535, 1})}, 13);
  EXPECT_EQ(values_of<uint16_t>(u), (std::vector<uint16_t>{65535, 1}));
  auto s = run_one("Sign", {Tensor::from_vector<int16_t>(DType::kInt16, {3}, {-300, 0, 9})}, 13);
  EXPECT_EQ(values_of<int16_t>(s), (std::vector<int16_t>{-1, 0, 1}));
  auto su = run_one("Sign", {Tensor::from_vector<uint8_t>(DType::kUInt8, {2}, {0, 200})}, 9);
  EXPECT_EQ(values_of<uint8_t>(su), (std::vector<uint8_t>{0, 1}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_floats(run_one("Sign", {floats({4}, {-2.5f, 0.0f, 1e-30f, nan})}, 13),
                {-1.0f, 0.0f, 1.0f, nan});
}

TEST(ElementwiseUnary, RoundsHalfToEven) {
  auto y = run_one(
      "Round", {floats({9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, -2.6f, 3.50001f})}, 11);
  expect_floats(y, {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f, 2.0f, -3.0f, 4.0f}, 0.0f);
  EXPECT_TRUE(std::signbit(y.data<float>()[3]));
  auto d = run_one("Round", {Tensor::from_vector<double>(DType::kDouble, {2}, {4.5, -7.5})}, 11);
  EXPECT_EQ(values_of<double>(d), (std::vector<double>{4.0, -8.0}));
}

TEST(ElementwiseUnary, FloorCeilAndMath) {
  expect_floats(run_one("Floor", {floats({3}, {-1.5f, 1.5f, 2.0f})}, 13), {-2, 1, 2});
  expect_floats(run_one("Ceil", {floats({3}, {-1.5f, 1.5f, 2.0f})}, 13), {-1, 2, 2});
  expect_floats(run_one("Sqrt", {floats({3}, {4.0f, 0.25f, -1.0f})}, 13),
                {2.0f, 0.5f, std::numeric_limits<float>::quiet_NaN()});
  expect_floats(run_one("Reciprocal", {floats({2}, {4.0f, -0.5f})}, 13), {0.25f, -2.0f});
  expect_floats(run_one("Log", {floats({2}, {1.0f, 0.0f})}, 13),
                {0.0f, -std::numeric_limits<float>::infinity()});
  expect_floats(run_one("Acosh", {floats({2}, {1.0f, 2.0f})}, 9), {0.0f, 1.3169579f});
  expect_floats(run_one("Atanh", {floats({1}, {0.5f})}, 9), {0.54930615f});
  expect_floats(run_one("Tan", {floats({1}, {1.0f})}, 7), {1.5574077f});
}

TEST(ElementwiseUnary, ErfOnIntegersTruncates) {
  auto y = run_one("Erf", {Tensor::from_vector<int32_t>(DType::kInt32, {3}, {-3, 0, 5})}, 13);
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{0, 0, 0}));
  expect_floats(run_one("Erf", {floats({2}, {0.5f, -1.0f})}, 13), {0.5204999f, -0.8427008f});
}

TEST(ElementwiseUnary, HalfTypesComputeInFloat) {
  auto h = Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(0.0f), Float16(1.0f)});
  auto y = run_one("Exp", {h}, 13);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[0]), 1.0f);
  EXPECT_NEAR(static_cast<float>(y.data<Float16>()[1]), 2.71875f, 1e-3f);
  auto b = Tensor::from_vector<BFloat16>(DType::kBFloat16, {1}, {BFloat16(-2.0f)});
  auto z = run_one("Neg", {b}, 13);
  ASSERT_EQ(z.dtype(), DType::kBFloat16);
  EXPECT_EQ(static_cast<float>(z.data<BFloat16>()[0]), 2.0f);
}

TEST(ElementwiseUnary, EmptyTensorsKeepTheirShape) {
  auto y = run_one("Exp", {floats({0, 3}, {})}, 13);
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  auto n = run_one("IsNaN", {floats({2, 0}, {})}, 13);
  EXPECT_EQ(n.dtype(), DType::kBool);
  EXPECT_EQ(n.shape(), (Shape{2, 0}));
}

TEST(ElementwiseUnary, FloatOnlyOpsRejectIntegers) {
  std::string error = run_error("Sqrt", {Tensor(DType::kInt32, {2})}, 13);
  EXPECT_NE(error.find("int32 is not supported"), std::string::npos) << error;
  EXPECT_NE(error.find("floating-point"), std::string::npos) << error;
  error = run_error("Not", {floats({1}, {1.0f})}, 1);
  EXPECT_NE(error.find("needs bool"), std::string::npos) << error;
}

TEST(ElementwiseUnary, IsNaNIsInfAndNot) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floats({4}, {inf, -inf, nan, 1.0f});
  EXPECT_EQ(values_of<bool>(run_one("IsNaN", {x}, 13)),
            (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(values_of<bool>(run_one("IsInf", {x}, 10)),
            (std::vector<bool>{true, true, false, false}));
  auto only_negative = run_one("IsInf", {x}, 10, [](Node* n) { set_int(n, "detect_positive", 0); });
  EXPECT_EQ(values_of<bool>(only_negative), (std::vector<bool>{false, true, false, false}));
  auto only_positive = run_one("IsInf", {x}, 10, [](Node* n) { set_int(n, "detect_negative", 0); });
  EXPECT_EQ(values_of<bool>(only_positive), (std::vector<bool>{true, false, false, false}));
  auto d = Tensor::from_vector<double>(DType::kDouble, {2},
                                       {-std::numeric_limits<double>::infinity(), 0.0});
  EXPECT_EQ(values_of<bool>(run_one("IsInf", {d}, 10)), (std::vector<bool>{true, false}));
}

TEST(ElementwiseUnary, NotFlipsBools) {
  Tensor x(DType::kBool, {3});
  bool* p = x.mutable_data<bool>();
  p[0] = true;
  p[1] = false;
  p[2] = true;
  EXPECT_EQ(values_of<bool>(run_one("Not", {x}, 1)), (std::vector<bool>{false, true, false}));
}

TEST(ElementwiseUnary, BitwiseNot) {
  Tensor x = Tensor::from_vector<int16_t>(DType::kInt16, {3}, {0, -1, 5});
  EXPECT_EQ(values_of<int16_t>(run_one("BitwiseNot", {x}, 18)), (std::vector<int16_t>{-1, 0, -6}));
  Tensor u = Tensor::from_vector<uint8_t>(DType::kUInt8, {2}, {0, 0x0f});
  EXPECT_EQ(values_of<uint8_t>(run_one("BitwiseNot", {u}, 18)), (std::vector<uint8_t>{255, 0xf0}));
}

TEST(ElementwiseUnary, Opset22Trigonometry) {
  EXPECT_NEAR(values_of<float>(run_one("Cos", {floats({1}, {0.0f})}, 22))[0], 1.0f, 1e-6f);
  EXPECT_EQ(values_of<float>(run_one("Round", {floats({2}, {2.5f, -1.5f})}, 22)),
            (std::vector<float>{2.0f, -2.0f}));
}

}  // namespace
}  // namespace onnxkit
