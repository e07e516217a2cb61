// Reductions, ArgMax/ArgMin, TopK and CumSum: corners the backend test data leaves out
// (empty tensors, strided axis sets, integer types, opset differences, errors).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/half.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// 2x3x4 tensor with values 0..23.
Tensor iota234() {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  return floats({2, 3, 4}, v);
}

TEST(Reduce, SumNonContiguousAxes) {
  // Axes {0, 2} of [2, 3, 4]: a strided set with a kept dim between the reduced ones.
  Tensor out = run_one("ReduceSum", {iota234()}, 11, with_ints("axes", {0, 2}));
  EXPECT_EQ(out.shape(), (Shape{1, 3, 1}));
  // Row j: sum over i, k of 12i + 4j + k = 2*(4*4j + 6) + 4*12 = 32j + 60.
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{60, 92, 124}));
}

TEST(Reduce, SumLeadingAxisKeepsInnerRows) {
  Tensor out =
      run_one("ReduceSum", {iota234()}, 11, with_ints("axes", {0}, with_int("keepdims", 0)));
  EXPECT_EQ(out.shape(), (Shape{3, 4}));
  std::vector<float> expected(12);
  for (int i = 0; i < 12; ++i) expected[i] = static_cast<float>(2 * i + 12);
  EXPECT_EQ(values_of<float>(out), expected);
}

TEST(Reduce, MaxMiddleAndNegativeAxis) {
  Tensor out = run_one("ReduceMax", {iota234()}, 13, with_ints("axes", {-2}));
  EXPECT_EQ(out.shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
}

TEST(Reduce, MinAllAxesDefault) {
  Tensor out = run_one("ReduceMin", {iota234()}, 13, with_int("keepdims", 0));
  EXPECT_EQ(out.shape(), Shape{});
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0}));
}

TEST(Reduce, SumOpset13AxesInput) {
  Tensor out = run_one("ReduceSum", {iota234(), int64s({2}, {2, -3})}, 13, with_int("keepdims", 0));
  EXPECT_EQ(out.shape(), (Shape{3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{60, 92, 124}));
}

TEST(Reduce, SumOpset13EmptyAxes) {
  Tensor all = run_one("ReduceSum", {iota234(), int64s({0}, {})}, 13);
  EXPECT_EQ(all.shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(values_of<float>(all), (std::vector<float>{276}));
  Tensor noop =
      run_one("ReduceSum", {iota234(), int64s({0}, {})}, 13, with_int("noop_with_empty_axes", 1));
  EXPECT_EQ(noop.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(values_of<float>(noop)[23], 23.0f);
}

TEST(Reduce, EmptyReducedAxis) {
  Tensor empty = floats({2, 0, 3}, {});
  auto reduce = [&](const std::string& op) {
    return run_one(op, {empty}, 11, with_ints("axes", {1}, with_int("keepdims", 0)));
  };
  Tensor sum = reduce("ReduceSum");
  EXPECT_EQ(sum.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(sum), std::vector<float>(6, 0.0f));
  EXPECT_EQ(values_of<float>(reduce("ReduceProd")), std::vector<float>(6, 1.0f));
  EXPECT_EQ(values_of<float>(reduce("ReduceSumSquare")), std::vector<float>(6, 0.0f));
  EXPECT_EQ(values_of<float>(reduce("ReduceMax")),
            std::vector<float>(6, -std::numeric_limits<float>::infinity()));
  EXPECT_EQ(values_of<float>(reduce("ReduceMin")),
            std::vector<float>(6, std::numeric_limits<float>::infinity()));
  EXPECT_EQ(values_of<float>(reduce("ReduceLogSumExp")),
            std::vector<float>(6, -std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(std::isnan(values_of<float>(reduce("ReduceMean"))[0]));
}

TEST(Reduce, EmptyKeptAxisGivesEmptyOutput) {
  Tensor out = run_one("ReduceSum", {floats({0, 3}, {})}, 11, with_ints("axes", {1}));
  EXPECT_EQ(out.shape(), (Shape{0, 1}));
}

TEST(Reduce, IntegerTypes) {
  Tensor x = Tensor::from_vector<int32_t>(DType::kInt32, {2, 3}, {1, -2, 3, 4, 5, -6});
  auto reduce = [&](const std::string& op) {
    return values_of<int32_t>(
        run_one(op, {x}, 11, with_ints("axes", {1}, with_int("keepdims", 0))));
  };
  EXPECT_EQ(reduce("ReduceSum"), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(reduce("ReduceProd"), (std::vector<int32_t>{-6, -120}));
  EXPECT_EQ(reduce("ReduceL1"), (std::vector<int32_t>{6, 15}));
  EXPECT_EQ(reduce("ReduceSumSquare"), (std::vector<int32_t>{14, 77}));
  EXPECT_EQ(reduce("ReduceMax"), (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(reduce("ReduceMin"), (std::vector<int32_t>{-2, -6}));
  EXPECT_EQ(reduce("ReduceMean"), (std::vector<int32_t>{0, 1}));  // 2/3, 3/3 truncated
  EXPECT_EQ(reduce("ReduceL2"), (std::vector<int32_t>{3, 8}));    // sqrt(14), sqrt(77)
}

TEST(Reduce, Int64SumIsExact) {
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor out = run_one("ReduceSum", {int64s({3}, {big, 1, -2})}, 11, with_int("keepdims", 0));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{big - 1}));
}

TEST(Reduce, UInt8MaxMin) {
  Tensor x = Tensor::from_vector<uint8_t>(DType::kUInt8, {4}, {7, 250, 0, 3});
  EXPECT_EQ(values_of<uint8_t>(run_one("ReduceMax", {x}, 13)), (std::vector<uint8_t>{250}));
  EXPECT_EQ(values_of<uint8_t>(run_one("ReduceMin", {x}, 13)), (std::vector<uint8_t>{0}));
}

TEST(Reduce, Float16Mean) {
  Tensor x = Tensor::from_vector<Float16>(
      DType::kFloat16, {4}, {Float16(1.0f), Float16(2.0f), Float16(3.0f), Float16(4.5f)});
  Tensor out = run_one("ReduceMean", {x}, 13);
  EXPECT_FLOAT_EQ(static_cast<float>(out.data<Float16>()[0]), 2.625f);
}

TEST(Reduce, LogSumExpIsStableForLargeValues) {
  Tensor x = Tensor::from_vector<double>(DType::kDouble, {3}, {1000.0, 1000.0, -1e300});
  Tensor out = run_one("ReduceLogSumExp", {x}, 13);
  EXPECT_NEAR(out.data<double>()[0], 1000.0 + std::log(2.0), 1e-9);
}

TEST(Reduce, LogSumAndL2) {
  Tensor x = floats({2, 2}, {1, 2, 3, 4});
  Tensor log_sum = run_one("ReduceLogSum", {x}, 13, with_ints("axes", {0}));
  EXPECT_NEAR(values_of<float>(log_sum)[0], std::log(4.0f), 1e-6);
  EXPECT_NEAR(values_of<float>(log_sum)[1], std::log(6.0f), 1e-6);
  Tensor l2 = run_one("ReduceL2", {x}, 13, with_ints("axes", {1}));
  EXPECT_NEAR(values_of<float>(l2)[0], std::sqrt(5.0f), 1e-6);
  EXPECT_NEAR(values_of<float>(l2)[1], 5.0f, 1e-6);
}

TEST(Reduce, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor out = run_one("ReduceMax", {floats({3}, {1, nan, 2})}, 13);
  EXPECT_TRUE(std::isnan(values_of<float>(out)[0]));
}

TEST(Reduce, Errors) {
  EXPECT_THROW(
      {
        try {
          run_one("ReduceSum", {iota234()}, 11, with_ints("axes", {3}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("axis 3 is out of range for rank 3"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW(run_one("ReduceMean", {iota234()}, 11, with_ints("axes", {1, -2})), Error);
}

TEST(ArgMax, SelectLastIndexAndInnerLayout) {
  Tensor x = floats({2, 3}, {1, 5, 5, 7, 2, 7});
  Tensor first = run_one("ArgMax", {x}, 13, with_int("axis", 1));
  EXPECT_EQ(first.shape(), (Shape{2, 1}));
  EXPECT_EQ(values_of<int64_t>(first), (std::vector<int64_t>{1, 0}));
  Tensor last = run_one("ArgMax", {x}, 13, with_int("axis", 1, with_int("select_last_index", 1)));
  EXPECT_EQ(values_of<int64_t>(last), (std::vector<int64_t>{2, 2}));
  Tensor axis0 = run_one("ArgMin", {x}, 13, with_int("axis", 0, with_int("keepdims", 0)));
  EXPECT_EQ(axis0.shape(), (Shape{3}));
  EXPECT_EQ(values_of<int64_t>(axis0), (std::vector<int64_t>{0, 1, 0}));
}

TEST(ArgMax, IntegerAndEmptyAxisError) {
  Tensor x = Tensor::from_vector<int8_t>(DType::kInt8, {4}, {-3, -1, -1, -8});
  EXPECT_EQ(values_of<int64_t>(run_one("ArgMax", {x}, 11)), (std::vector<int64_t>{1}));
  EXPECT_EQ(values_of<int64_t>(run_one("ArgMin", {x}, 11, with_int("keepdims", 0))),
            (std::vector<int64_t>{3}));
  EXPECT_THROW(run_one("ArgMax", {floats({2, 0}, {})}, 13, with_int("axis", 1)), Error);
  EXPECT_THROW(run_one("ArgMax", {floats({2, 2}, {1, 2, 3, 4})}, 13, with_int("axis", 2)), Error);
}

TEST(TopK, TiesKeepLowerIndexFirst) {
  Tensor x = floats({2, 4}, {3, 1, 3, 2, 0, 0, 5, 0});
  auto out = run_op("TopK", {x, int64s({1}, {2})}, 11, with_int("axis", 1), 2);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{3, 3, 5, 0}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{0, 2, 2, 0}));
  auto smallest =
      run_op("TopK", {x, int64s({1}, {3})}, 11, with_int("axis", -1, with_int("largest", 0)), 2);
  EXPECT_EQ(values_of<float>(smallest[0]), (std::vector<float>{1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(values_of<int64_t>(smallest[1]), (std::vector<int64_t>{1, 3, 0, 0, 1, 3}));
}

TEST(TopK, AxisZeroAndOpset1Attribute) {
  Tensor x = floats({3, 2}, {1, 6, 4, 5, 2, 9});
  auto out = run_op("TopK", {x}, 1, with_int("axis", 0, with_int("k", 2)), 2);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(out[0]), (std::vector<float>{4, 9, 2, 6}));
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 2, 2, 0}));
}

TEST(TopK, IntegersZeroKAndBadK) {
  Tensor x = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {5, -1, 7});
  auto out = run_op("TopK", {x, int64s({1}, {1})}, 11, {}, 2);
  EXPECT_EQ(values_of<int32_t>(out[0]), (std::vector<int32_t>{7}));
  auto none = run_op("TopK", {x, int64s({1}, {0})}, 11, {}, 2);
  EXPECT_EQ(none[0].shape(), (Shape{0}));
  EXPECT_THROW(run_op("TopK", {x, int64s({1}, {4})}, 11, {}, 2), Error);
}

TEST(CumSum, AxisVariants) {
  Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axis1 = Tensor::from_vector<int32_t>(DType::kInt32, {}, {1});
  EXPECT_EQ(values_of<float>(run_one("CumSum", {x, axis1}, 14)),
            (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values_of<float>(run_one("CumSum", {x, int64s({}, {0})}, 14)),
            (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values_of<float>(run_one("CumSum", {x, int64s({}, {-1})}, 14,
                                     with_int("exclusive", 1, with_int("reverse", 1)))),
            (std::vector<float>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(values_of<float>(run_one("CumSum", {x, int64s({}, {0})}, 11, with_int("reverse", 1))),
            (std::vector<float>{5, 7, 9, 4, 5, 6}));
}

TEST(CumSum, IntegersAndErrors) {
  Tensor x = int64s({4}, {1, -2, 3, 10});
  EXPECT_EQ(
      values_of<int64_t>(run_one("CumSum", {x, int64s({}, {0})}, 14, with_int("exclusive", 1))),
      (std::vector<int64_t>{0, 1, -1, 2}));
  EXPECT_THROW(run_one("CumSum", {x, int64s({}, {1})}, 14), Error);
  Tensor empty = floats({0, 2}, {});
  EXPECT_EQ(run_one("CumSum", {empty, int64s({}, {0})}, 14).shape(), (Shape{0, 2}));
}

TEST(CumProd, AxisVariants) {
  Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of<float>(run_one("CumProd", {x, int64s({}, {1})}, 26)),
            (std::vector<float>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(
      values_of<float>(run_one("CumProd", {x, int64s({}, {0})}, 26, with_int("exclusive", 1))),
      (std::vector<float>{1, 1, 1, 1, 2, 3}));
  EXPECT_EQ(values_of<float>(run_one("CumProd", {x, int64s({}, {-1})}, 26,
                                     with_int("exclusive", 1, with_int("reverse", 1)))),
            (std::vector<float>{6, 3, 1, 30, 6, 1}));
  Tensor xi = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {-2, 3, 4});
  EXPECT_EQ(values_of<int32_t>(run_one("CumProd", {xi, int64s({}, {0})}, 26)),
            (std::vector<int32_t>{-2, -6, -24}));
}

TEST(Reduce, MaxMinOfBools) {
  Tensor x(DType::kBool, {2, 2});
  bool* p = x.mutable_data<bool>();
  p[0] = true;
  p[1] = false;
  p[2] = false;
  p[3] = false;
  EXPECT_EQ(values_of<bool>(run_one("ReduceMax", {x, int64s({1}, {1})}, 20)),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(values_of<bool>(run_one("ReduceMin", {x, int64s({1}, {0})}, 20)),
            (std::vector<bool>{false, false}));
  Tensor empty(DType::kBool, {0, 2});
  EXPECT_EQ(values_of<bool>(run_one("ReduceMax", {empty, int64s({1}, {0})}, 20)),
            (std::vector<bool>{false, false}));
}

TEST(Reduce, LogSumTakesOnlyFloatsFromOpset28) {
  Tensor x = int64s({2}, {1, 2});
  EXPECT_NO_THROW(run_one("ReduceLogSum", {x}, 18));
  std::string error = run_error("ReduceLogSum", {x}, 28);
  EXPECT_NE(error.find("needs a floating-point type"), std::string::npos) << error;
}

}  // namespace
}  // namespace onnxkit
