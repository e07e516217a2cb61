// Elementwise binary family: broadcasting corners, integer semantics, legacy (opset < 7)
// broadcast/axis forms, variadic ops and Where.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/half.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

SetAttributes int_attrs(std::vector<std::pair<std::string, int64_t>> values) {
  return [values](Node* n) {
    for (const auto& [name, value] : values) set_int(n, name, value);
  };
}

std::vector<bool> bools(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kBool);
  return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel());
}

Tensor int32s(Shape shape, std::vector<int32_t> v) {
  return Tensor::from_vector<int32_t>(DType::kInt32, std::move(shape), v);
}
Tensor bool_tensor(Shape shape, std::vector<bool> v) {
  Tensor t(DType::kBool, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<bool>()[i] = v[i];
  return t;
}

TEST(ElementwiseBinary, AddBroadcastsRowVector) {
  Tensor out = run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({3}, {10, 20, 30})}, 14);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseBinary, SubBroadcastsBothWays) {
  // (2,1) - (1,3) -> (2,3)
  Tensor out = run_one("Sub", {floats({2, 1}, {10, 20}), floats({1, 3}, {1, 2, 3})}, 14);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{9, 8, 7, 19, 18, 17}));
}

TEST(ElementwiseBinary, RowsWithEveryLastAxisStep) {
  // The last axis read by both, by one, by the other, by neither: a one-hot's
  // [1, L, 1] == [1, 1, C], and broadcasts along outer axes.
  Tensor one_hot =
      run_one("Equal", {int32s({1, 3, 1}, {2, 0, 3}), int32s({1, 1, 4}, {0, 1, 2, 3})}, 13);
  EXPECT_EQ(one_hot.shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(bools(one_hot), (std::vector<bool>{false, false, true, false, true, false, false, false,
                                               false, false, false, true}));
  Tensor both = run_one(
      "Sub", {floats({2, 1, 3}, {1, 2, 3, 4, 5, 6}), floats({2, 3}, {0, 10, 20, 30, 40, 50})}, 14);
  EXPECT_EQ(both.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(values_of<float>(both),
            (std::vector<float>{1, -8, -17, -29, -38, -47, 4, -5, -14, -26, -35, -44}));
  Tensor neither = run_one("Mul", {floats({2, 1, 1}, {2, 3}), floats({1, 3, 1}, {1, 10, 100})}, 14);
  EXPECT_EQ(neither.shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(values_of<float>(neither), (std::vector<float>{2, 20, 200, 3, 30, 300}));
  Tensor scalars = run_one("Add", {floats({}, {1}), floats({}, {2})}, 14);
  EXPECT_EQ(values_of<float>(scalars), (std::vector<float>{3}));
}

TEST(ElementwiseBinary, EmptyTensorBroadcasts) {
  Tensor out = run_one("Mul", {floats({0, 3}, {}), floats({3}, {1, 2, 3})}, 14);
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
  EXPECT_EQ(out.numel(), 0);
}

TEST(ElementwiseBinary, IncompatibleShapesFail) {
  std::string error = error_of([] {
    run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({2}, {1, 2})}, 14);
  });
  EXPECT_NE(error.find("cannot be broadcast"), std::string::npos) << error;
}

TEST(ElementwiseBinary, IntegerAddWrapsAndMulIsExact) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  Tensor out = run_one("Add", {int32s({2}, {max, -5}), int32s({2}, {1, 3})}, 14);
  EXPECT_EQ(values_of<int32_t>(out),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -2}));
  Tensor mul = run_one("Mul", {int64s({1}, {3037000499}), int64s({1}, {3037000499})}, 14);
  EXPECT_EQ(values_of<int64_t>(mul), (std::vector<int64_t>{9223372030926249001}));
  Tensor a = Tensor::from_vector<uint16_t>(DType::kUInt16, {1}, {65535});
  Tensor m = run_one("Mul", {a, a}, 14);
  EXPECT_EQ(values_of<uint16_t>(m), (std::vector<uint16_t>{1}));  // 65535^2 mod 2^16
}

TEST(ElementwiseBinary, IntegerDivTruncatesTowardZero) {
  Tensor out = run_one("Div", {int32s({4}, {-7, 7, -7, 7}), int32s({4}, {2, -2, -2, 2})}, 14);
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{-3, -3, 3, 3}));
  Tensor u = run_one("Div",
                     {Tensor::from_vector<uint8_t>(DType::kUInt8, {2}, {255, 7}),
                      Tensor::from_vector<uint8_t>(DType::kUInt8, {1}, {2})},
                     14);
  EXPECT_EQ(values_of<uint8_t>(u), (std::vector<uint8_t>{127, 3}));
}

TEST(ElementwiseBinary, IntegerDivByZeroFails) {
  std::string error = error_of([] { run_one("Div", {int32s({1}, {1}), int32s({1}, {0})}, 14); });
  EXPECT_NE(error.find("division by zero"), std::string::npos) << error;
}

TEST(ElementwiseBinary, FloatDivByZeroIsInf) {
  Tensor out = run_one("Div", {floats({2}, {1, -1}), floats({1}, {0})}, 14);
  EXPECT_EQ(values_of<float>(out)[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(values_of<float>(out)[1], -std::numeric_limits<float>::infinity());
}

TEST(ElementwiseBinary, Float16AddRounds) {
  Tensor a = Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(1.0f), Float16(2048.0f)});
  Tensor b = Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(0.5f), Float16(1.0f)});
  Tensor out = run_one("Add", {a, b}, 14);
  ASSERT_EQ(out.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(out.data<Float16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(out.data<Float16>()[1]), 2048.0f);  // 2049 ties to even
}

TEST(ElementwiseBinary, MixedInputTypesFail) {
  std::string error = error_of([] { run_one("Add", {floats({1}, {1}), int32s({1}, {1})}, 14); });
  EXPECT_NE(error.find("input types differ: float and int32"), std::string::npos) << error;
}

// ---- legacy broadcast (opset < 7) ----

TEST(ElementwiseBinary, LegacyBroadcastAtAxis) {
  std::vector<float> a(24);
  for (int i = 0; i < 24; ++i) a[i] = static_cast<float>(i);
  Tensor out = run_one("Add", {floats({2, 3, 4}, a), floats({3}, {100, 200, 300})}, 6,
                       int_attrs({{"broadcast", 1}, {"axis", 1}}));
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  std::vector<float> got = values_of<float>(out);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(got[i], a[i] + 100.0f * ((i / 4) % 3 + 1)) << i;
}

TEST(ElementwiseBinary, LegacyBroadcastSuffixAndSizeOne) {
  Tensor suffix = run_one("Mul", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({3}, {1, 10, 100})}, 6,
                          int_attrs({{"broadcast", 1}}));
  EXPECT_EQ(values_of<float>(suffix), (std::vector<float>{1, 20, 300, 4, 50, 600}));
  // B (2,1) at axis 0 expands its size-1 dim, as pytorch's exporter relies on.
  Tensor column = run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({2, 1}, {10, 20})}, 6,
                          int_attrs({{"broadcast", 1}, {"axis", 0}}));
  EXPECT_EQ(values_of<float>(column), (std::vector<float>{11, 12, 13, 24, 25, 26}));
  Tensor scalar =
      run_one("Sub", {floats({2}, {1, 2}), floats({}, {1})}, 1, int_attrs({{"broadcast", 1}}));
  EXPECT_EQ(values_of<float>(scalar), (std::vector<float>{0, 1}));
}

TEST(ElementwiseBinary, LegacyWithoutBroadcastNeedsEqualShapes) {
  std::string error = error_of([] {
    run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({3}, {1, 2, 3})}, 6);
  });
  EXPECT_NE(error.find("broadcast is not set"), std::string::npos) << error;
  // The same model at opset 7 broadcasts numpy-style.
  Tensor out = run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({3}, {1, 2, 3})}, 7);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 4, 6, 5, 7, 9}));
}

TEST(ElementwiseBinary, LegacyBroadcastMismatchFails) {
  std::string error = error_of([] {
    run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({2}, {1, 2})}, 6,
            int_attrs({{"broadcast", 1}, {"axis", 1}}));
  });
  EXPECT_NE(error.find("B of shape [2] does not match A of shape [2,3] at axis 1"),
            std::string::npos)
      << error;
  error = error_of([] {
    run_one("Add", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({3}, {1, 2, 3})}, 6,
            int_attrs({{"broadcast", 1}, {"axis", 2}}));
  });
  EXPECT_NE(error.find("axis 2 does not fit B of shape [3]"), std::string::npos) << error;
}

TEST(ElementwiseBinary, LegacyEqualAndLogic) {
  Tensor eq = run_one("Equal", {int32s({2, 2}, {1, 2, 3, 2}), int32s({2}, {1, 2})}, 1,
                      int_attrs({{"broadcast", 1}}));
  EXPECT_EQ(bools(eq), (std::vector<bool>{true, true, false, true}));
  Tensor a = run_one(
      "And", {bool_tensor({2, 2}, {true, true, false, true}), bool_tensor({2}, {true, false})}, 1,
      int_attrs({{"broadcast", 1}, {"axis", 0}}));
  EXPECT_EQ(bools(a), (std::vector<bool>{true, true, false, false}));
}

// ---- Pow ----

TEST(ElementwiseBinary, PowMixedTypes) {
  Tensor i = run_one("Pow", {int32s({3}, {1, 2, 3}), floats({3}, {4, 5, 6})}, 15);
  ASSERT_EQ(i.dtype(), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(i), (std::vector<int32_t>{1, 32, 729}));
  Tensor f = run_one("Pow", {floats({3}, {2, 4, -2}), int64s({3}, {-1, 0, 3})}, 15);
  EXPECT_EQ(values_of<float>(f), (std::vector<float>{0.5f, 1.0f, -8.0f}));
  // Integer powers stay exact beyond double precision.
  Tensor big = run_one("Pow", {int64s({1}, {3}), int64s({1}, {39})}, 15);
  EXPECT_EQ(values_of<int64_t>(big), (std::vector<int64_t>{4052555153018976267}));
}

TEST(ElementwiseBinary, PowBroadcastsAndNaN) {
  Tensor out = run_one("Pow", {floats({2, 2}, {1, 2, 3, -1}), floats({1}, {0.5f})}, 7);
  std::vector<float> v = values_of<float>(out);
  EXPECT_FLOAT_EQ(v[1], std::sqrt(2.0f));
  EXPECT_TRUE(std::isnan(v[3]));
}

// ---- Mod ----

TEST(ElementwiseBinary, ModIntegerSigns) {
  Tensor a = int64s({6}, {-4, 7, 5, 4, -7, 8});
  Tensor b = int64s({6}, {2, -3, 8, -2, 3, 5});
  EXPECT_EQ(values_of<int64_t>(run_one("Mod", {a, b}, 13)),
            (std::vector<int64_t>{0, -2, 5, 0, 2, 3}));  // Python's %
  EXPECT_EQ(values_of<int64_t>(run_one("Mod", {a, b}, 13, int_attrs({{"fmod", 1}}))),
            (std::vector<int64_t>{0, 1, 5, 0, -1, 3}));  // C's fmod
}

TEST(ElementwiseBinary, ModFloat) {
  Tensor a = Tensor::from_vector<double>(DType::kDouble, {3}, {-4.3, 4.3, -4.3});
  Tensor b = Tensor::from_vector<double>(DType::kDouble, {3}, {2.1, -2.1, -2.1});
  std::vector<double> f = values_of<double>(run_one("Mod", {a, b}, 13, int_attrs({{"fmod", 1}})));
  EXPECT_NEAR(f[0], -0.1, 1e-12);
  EXPECT_NEAR(f[1], 0.1, 1e-12);
  EXPECT_NEAR(f[2], -0.1, 1e-12);
  std::vector<double> p = values_of<double>(run_one("Mod", {a, b}, 13));
  EXPECT_NEAR(p[0], 2.0, 1e-12);
  EXPECT_NEAR(p[1], -2.0, 1e-12);
  EXPECT_NEAR(p[2], -0.1, 1e-12);
}

TEST(ElementwiseBinary, ModUnsignedAndByZero) {
  Tensor a = Tensor::from_vector<uint32_t>(DType::kUInt32, {2}, {4000000000u, 7});
  Tensor b = Tensor::from_vector<uint32_t>(DType::kUInt32, {1}, {7});
  EXPECT_EQ(values_of<uint32_t>(run_one("Mod", {a, b}, 13)),
            (std::vector<uint32_t>{4000000000u % 7u, 0}));
  std::string error = error_of([] { run_one("Mod", {int32s({1}, {5}), int32s({1}, {0})}, 13); });
  EXPECT_NE(error.find("modulo by zero"), std::string::npos) << error;
}

// ---- BitShift ----

TEST(ElementwiseBinary, BitShift) {
  Tensor x = Tensor::from_vector<uint8_t>(DType::kUInt8, {4}, {16, 4, 1, 255});
  Tensor y = Tensor::from_vector<uint8_t>(DType::kUInt8, {4}, {1, 2, 3, 8});
  EXPECT_EQ(values_of<uint8_t>(run_one("BitShift", {x, y}, 11, with_string("direction", "LEFT"))),
            (std::vector<uint8_t>{32, 16, 8, 0}));
  EXPECT_EQ(values_of<uint8_t>(run_one("BitShift", {x, y}, 11, with_string("direction", "RIGHT"))),
            (std::vector<uint8_t>{8, 1, 0, 0}));
  Tensor big = Tensor::from_vector<uint64_t>(DType::kUInt64, {1}, {1});
  Tensor by = Tensor::from_vector<uint64_t>(DType::kUInt64, {1}, {63});
  EXPECT_EQ(
      values_of<uint64_t>(run_one("BitShift", {big, by}, 11, with_string("direction", "LEFT"))),
      (std::vector<uint64_t>{uint64_t{1} << 63}));
  std::string error = error_of([&] {
    run_one("BitShift", {x, y}, 11, with_string("direction", "UP"));
  });
  EXPECT_NE(error.find("direction must be"), std::string::npos) << error;
}

TEST(ElementwiseBinary, BitShiftSignedIsArithmetic) {
  Tensor x = Tensor::from_vector<int8_t>(DType::kInt8, {5}, {-16, -16, 16, -1, 5});
  Tensor y = Tensor::from_vector<int8_t>(DType::kInt8, {5}, {2, 8, 9, -1, 1});
  EXPECT_EQ(values_of<int8_t>(run_one("BitShift", {x, y}, 28, with_string("direction", "RIGHT"))),
            (std::vector<int8_t>{-4, -1, 0, -1, 2}));
  EXPECT_EQ(values_of<int8_t>(run_one("BitShift", {x, y}, 28, with_string("direction", "LEFT"))),
            (std::vector<int8_t>{-64, 0, 0, 0, 10}));
}

TEST(ElementwiseBinary, Bitwise) {
  Tensor a = int32s({2, 2}, {12, -1, 5, 0});
  Tensor b = int32s({2}, {10, 3});
  EXPECT_EQ(values_of<int32_t>(run_one("BitwiseAnd", {a, b}, 18)),
            (std::vector<int32_t>{8, 3, 0, 0}));
  EXPECT_EQ(values_of<int32_t>(run_one("BitwiseOr", {a, b}, 18)),
            (std::vector<int32_t>{14, -1, 15, 3}));
  EXPECT_EQ(values_of<int32_t>(run_one("BitwiseXor", {a, b}, 18)),
            (std::vector<int32_t>{6, -4, 15, 3}));
  std::string error = error_of([&] {
    run_one("BitwiseAnd", {floats({1}, {1}), floats({1}, {1})}, 18);
  });
  EXPECT_NE(error.find("float"), std::string::npos) << error;
}

// ---- logic and comparisons ----

TEST(ElementwiseBinary, LogicBroadcast) {
  Tensor a = bool_tensor({2, 2}, {true, true, false, false});
  Tensor b = bool_tensor({2}, {true, false});
  EXPECT_EQ(bools(run_one("And", {a, b}, 7)), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(bools(run_one("Or", {a, b}, 7)), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(bools(run_one("Xor", {a, b}, 7)), (std::vector<bool>{false, true, true, false}));
}

TEST(ElementwiseBinary, Comparisons) {
  Tensor a = int64s({4}, {1, 2, 3, 4});
  Tensor b = int64s({}, {3});
  EXPECT_EQ(bools(run_one("Less", {a, b}, 13)), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(bools(run_one("LessOrEqual", {a, b}, 16)),
            (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(bools(run_one("Greater", {a, b}, 13)), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(bools(run_one("GreaterOrEqual", {a, b}, 16)),
            (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(bools(run_one("Equal", {a, b}, 13)), (std::vector<bool>{false, false, true, false}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor f = floats({2}, {nan, 1});
  EXPECT_EQ(bools(run_one("Equal", {f, f}, 13)), (std::vector<bool>{false, true}));
  EXPECT_EQ(bools(run_one("GreaterOrEqual", {f, f}, 16)), (std::vector<bool>{false, true}));
}

TEST(ElementwiseBinary, EqualStringsAndBools) {
  Tensor a = Tensor::from_strings({3}, {"a", "bc", ""});
  Tensor b = Tensor::from_strings({3}, {"a", "b", ""});
  EXPECT_EQ(bools(run_one("Equal", {a, b}, 13)), (std::vector<bool>{true, false, true}));
  Tensor x = bool_tensor({2}, {true, false});
  Tensor y = bool_tensor({1}, {false});
  EXPECT_EQ(bools(run_one("Equal", {x, y}, 13)), (std::vector<bool>{false, true}));
}

// ---- Where ----

TEST(ElementwiseBinary, WhereThreeWayBroadcast) {
  Tensor c = bool_tensor({2, 1}, {true, false});
  Tensor x = floats({1, 3}, {1, 2, 3});
  Tensor y = floats({}, {-1});
  Tensor out = run_one("Where", {c, x, y}, 16);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{1, 2, 3, -1, -1, -1}));
}

TEST(ElementwiseBinary, WhereStringsAndInt64) {
  Tensor c = bool_tensor({3}, {false, true, false});
  Tensor s =
      run_one("Where",
              {c, Tensor::from_strings({3}, {"a", "b", "c"}), Tensor::from_strings({1}, {"z"})}, 9);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"z", "b", "z"}));
  Tensor i = run_one("Where", {c, int64s({3}, {1, 2, 3}), int64s({3}, {-1, -2, -3})}, 16);
  EXPECT_EQ(values_of<int64_t>(i), (std::vector<int64_t>{-1, 2, -3}));
}

// ---- Min, Max, Sum, Mean ----

TEST(ElementwiseBinary, VariadicBroadcastThreeInputs) {
  std::vector<Tensor> in{floats({2, 1}, {1, 10}), floats({3}, {2, 5, 8}), floats({}, {4})};
  EXPECT_EQ(values_of<float>(run_one("Max", in, 13)), (std::vector<float>{4, 5, 8, 10, 10, 10}));
  EXPECT_EQ(values_of<float>(run_one("Min", in, 13)), (std::vector<float>{1, 1, 1, 2, 4, 4}));
  EXPECT_EQ(values_of<float>(run_one("Sum", in, 13)), (std::vector<float>{7, 10, 13, 16, 19, 22}));
  std::vector<float> mean = values_of<float>(run_one("Mean", in, 13));
  std::vector<float> expected{7 / 3.f, 10 / 3.f, 13 / 3.f, 16 / 3.f, 19 / 3.f, 22 / 3.f};
  for (size_t i = 0; i < mean.size(); ++i) EXPECT_FLOAT_EQ(mean[i], expected[i]);
}

TEST(ElementwiseBinary, VariadicOneInputAndIntegers) {
  EXPECT_EQ(values_of<float>(run_one("Sum", {floats({2}, {3, 4})}, 13)),
            (std::vector<float>{3, 4}));
  Tensor a = Tensor::from_vector<uint64_t>(DType::kUInt64, {2}, {~uint64_t{0}, 5});
  Tensor b = Tensor::from_vector<uint64_t>(DType::kUInt64, {2}, {1, 7});
  EXPECT_EQ(values_of<uint64_t>(run_one("Max", {a, b}, 13)),
            (std::vector<uint64_t>{~uint64_t{0}, 7}));
  EXPECT_EQ(values_of<int32_t>(run_one("Min", {int32s({2}, {-3, 4}), int32s({1}, {0})}, 13)),
            (std::vector<int32_t>{-3, 0}));
}

TEST(ElementwiseBinary, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out =
      values_of<float>(run_one("Max", {floats({2}, {nan, 1}), floats({2}, {1, nan})}, 13));
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
}

TEST(ElementwiseBinary, VariadicBeforeOpset8NeedsEqualShapes) {
  std::string error = error_of([] { run_one("Sum", {floats({2}, {1, 2}), floats({1}, {1})}, 6); });
  EXPECT_NE(error.find("no broadcasting before opset 8"), std::string::npos) << error;
  EXPECT_EQ(values_of<float>(run_one("Sum", {floats({2}, {1, 2}), floats({2}, {3, 4})}, 6)),
            (std::vector<float>{4, 6}));
}

}  // namespace
}  // namespace onnxkit
