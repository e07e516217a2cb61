// Unit tests for the indexing op family: the corners the backend test data leaves out.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "core/half.h"
#include "onnxkit/session.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Tensor i32(Shape shape, std::vector<int32_t> values) {
  return Tensor::from_vector<int32_t>(DType::kInt32, std::move(shape), values);
}
Tensor i64s(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return int64s({n}, std::move(values));
}

// 0, 1, ..., n-1 as float.
Tensor iota(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return floats(std::move(shape), v);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- Slice ----

TEST(Slice, NegativeStepsWithExtremeEnds) {
  // data[3, 4] = 0..11; rows reversed with INT64_MIN end, cols from 10 (clamped to 3) by -2.
  Tensor out = run_one(
      "Slice", {iota({3, 4}), i64s({kMax, 10}), i64s({kMin, kMin}), i64s({0, 1}), i64s({-1, -2})},
      13);
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{11, 9, 7, 5, 3, 1}));
}

TEST(Slice, WholeInnerAxesCopyAsRuns) {
  // data[2, 3, 4, 1] = 0..23. Rows 1..2 of axis 1 with axes 2, 3 whole: runs of 2 x 4 x 1.
  Tensor rows = run_one("Slice", {iota({2, 3, 4, 1}), i64s({1}), i64s({3}), i64s({1})}, 13);
  EXPECT_EQ(rows.shape(), (Shape{2, 2, 4, 1}));
  EXPECT_EQ(values_of<float>(rows),
            (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23}));
  // Everything, with ends past every dim (jax2tf's 1e9): one copy.
  Tensor all = run_one("Slice",
                       {iota({2, 3, 4, 1}), i64s({0, 0, 0, 0}),
                        i64s({1000000000, 1000000000, 1000000000, 1000000000})},
                       13);
  EXPECT_EQ(all.shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(values_of<float>(all), values_of<float>(iota({2, 3, 4, 1})));
  // A step of 2 on axis 2 before a whole axis: runs of one row of the last axis.
  Tensor strided =
      run_one("Slice", {iota({2, 2, 4, 2}), i64s({1}), i64s({4}), i64s({2}), i64s({2})}, 13);
  EXPECT_EQ(strided.shape(), (Shape{2, 2, 2, 2}));
  EXPECT_EQ(values_of<float>(strided),
            (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31}));
}

TEST(Slice, ForwardClampsAndInt32Inputs) {
  Tensor out = run_one(
      "Slice",
      {iota({2, 5}), i32({2}, {-100, 1}), i32({2}, {1000, -1}), Tensor(), i32({2}, {1, 2})}, 13);
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{1, 3, 6, 8}));
}

TEST(Slice, NegativeStepEndMinusOneMeansBeforeLast) {
  // end -1 is dim - 1 after adjustment, so slicing 4..-1 by -1 of size 5 is empty.
  Tensor empty = run_one("Slice", {iota({5}), i64s({4}), i64s({-1}), i64s({0}), i64s({-1})}, 13);
  EXPECT_EQ(empty.shape(), (Shape{0}));
  Tensor out = run_one("Slice", {iota({5}), i64s({-2}), i64s({-6}), Tensor(), i64s({-1})}, 13);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{3, 2, 1, 0}));
}

TEST(Slice, StepInt64MinTakesOneElement) {
  Tensor out =
      run_one("Slice", {iota({5}), i64s({kMax}), i64s({kMin}), i64s({0}), i64s({kMin})}, 13);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{4}));
}

TEST(Slice, EmptyDimWithNegativeStep) {
  Tensor out =
      run_one("Slice", {iota({0, 3}), i64s({-1}), i64s({kMin}), i64s({0}), i64s({-1})}, 13);
  EXPECT_EQ(out.shape(), (Shape{0, 3}));
}

TEST(Slice, StringsAndNegativeAxes) {
  Tensor data = Tensor::from_strings({2, 3}, {"a", "b", "c", "d", "e", "f"});
  Tensor out = run_one("Slice", {data, i64s({1}), i64s({3}), i64s({-1})}, 13);
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"b", "c", "e", "f"}));
}

TEST(Slice, Opset1Attributes) {
  Tensor out = run_one("Slice", {iota({2, 4})}, 9, [](Node* n) {
    set_ints(n, "starts", {1, 0});
    set_ints(n, "ends", {2, kMax});
    set_ints(n, "axes", {0, 1});
  });
  EXPECT_EQ(out.shape(), (Shape{1, 4}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{4, 5, 6, 7}));
  // Without axes: starts apply to the leading axes.
  Tensor lead = run_one("Slice", {iota({2, 4})}, 1, [](Node* n) {
    set_ints(n, "starts", {0, -2});
    set_ints(n, "ends", {-1, 1000});
  });
  EXPECT_EQ(values_of<float>(lead), (std::vector<float>{2, 3}));
}

TEST(Slice, Errors) {
  EXPECT_TRUE(
      contains(run_error("Slice", {iota({4}), i64s({0}), i64s({2}), i64s({0}), i64s({0})}, 13),
               "step for axis 0 is 0"));
  EXPECT_TRUE(
      contains(run_error("Slice", {iota({2, 2}), i64s({0, 0}), i64s({1, 1}), i64s({1, -1})}, 13),
               "axis 1 appears more than once"));
  EXPECT_TRUE(contains(run_error("Slice", {iota({2, 2}), i64s({0}), i64s({1}), i64s({2})}, 13),
                       "axis 2 is out of range for rank 2"));
  EXPECT_TRUE(contains(run_error("Slice", {iota({4}), i64s({0, 1}), i64s({1})}, 13),
                       "starts has 2 values but ends has 1"));
}

// ---- Gather family ----

TEST(Gather, NegativeAxisAndIndicesInt32) {
  Tensor out = run_one("Gather", {iota({2, 3}), i32({2}, {-1, 0})}, 13, with_int("axis", -1));
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 0, 5, 3}));
}

TEST(Gather, ScalarIndexDropsAxis) {
  Tensor out = run_one("Gather", {iota({3, 2}), int64s({}, {1})}, 13);
  EXPECT_EQ(out.shape(), (Shape{2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 3}));
}

TEST(Gather, StringsAndBool) {
  Tensor s = run_one("Gather", {Tensor::from_strings({3}, {"x", "y", "z"}), i64s({2, 2, 0})}, 11);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"z", "z", "x"}));
  Tensor b = run_one("Gather",
                     {Tensor::from_vector<uint8_t>(DType::kBool, {2}, {1, 0}), i64s({1, 0})}, 13);
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(values_of<bool>(b), (std::vector<bool>{false, true}));
}

TEST(Gather, OutOfBoundsNamesTheIndex) {
  std::string error = run_error("Gather", {iota({5, 2}), i64s({0, 7})}, 13);
  EXPECT_TRUE(contains(error, "indices value 7")) << error;
  EXPECT_TRUE(contains(error, "element 1")) << error;
  EXPECT_TRUE(contains(error, "axis 0 of size 5")) << error;
  EXPECT_TRUE(contains(run_error("Gather", {iota({5}), i64s({-6})}, 13), "indices value -6"));
}

TEST(GatherElements, Axis1WithNegativeIndices) {
  // data [[0,1,2],[3,4,5]], indices [[-1,0],[1,1]] along axis 1.
  Tensor out = run_one("GatherElements", {iota({2, 3}), int64s({2, 2}, {-1, 0, 1, 1})}, 13,
                       with_int("axis", 1));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 0, 4, 4}));
}

TEST(GatherElements, SmallerIndicesAlongOtherAxes) {
  // data 3x3, indices 1x2 along axis 0: out[0][j] = data[idx][j].
  Tensor out = run_one("GatherElements", {iota({3, 3}), int64s({1, 2}, {2, 1})}, 13);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{6, 4}));
  EXPECT_TRUE(
      contains(run_error("GatherElements", {iota({2, 2}), int64s({2, 3}, {0, 0, 0, 0, 0, 0})}, 13),
               "indices dim 1 is 3, larger than data dim 2"));
}

TEST(GatherND, Examples) {
  // Example 3: data [2,2,2], indices [[0,1],[1,0]] -> [[2,3],[4,5]].
  Tensor out = run_one("GatherND", {iota({2, 2, 2}), int64s({2, 2}, {0, 1, 1, 0})}, 13);
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 3, 4, 5}));
  // Example 5, batch_dims 1: indices [[1],[0]] -> [[2,3],[4,5]].
  Tensor batched =
      run_one("GatherND", {iota({2, 2, 2}), int64s({2, 1}, {1, 0})}, 13, with_int("batch_dims", 1));
  EXPECT_EQ(batched.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(batched), (std::vector<float>{2, 3, 4, 5}));
  // Batch dims with several tuples per batch and a negative index.
  Tensor many = run_one("GatherND", {iota({2, 3}), int64s({2, 2, 1}, {2, -3, 0, 1})}, 13,
                        with_int("batch_dims", 1));
  EXPECT_EQ(many.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(many), (std::vector<float>{2, 0, 3, 4}));
}

TEST(GatherND, Errors) {
  EXPECT_TRUE(contains(run_error("GatherND", {iota({2, 2}), int64s({1, 2}, {0, 2})}, 13),
                       "indices value 2"));
  EXPECT_TRUE(contains(run_error("GatherND", {iota({2, 2}), int64s({1, 3}, {0, 0, 0})}, 13),
                       "indices last dim 3 is larger than data rank 2"));
}

// ---- Scatter family ----

TEST(Scatter, Opset9IsScatterElements) {
  Tensor out = run_one(
      "Scatter",
      {floats({1, 5}, {1, 2, 3, 4, 5}), int64s({1, 2}, {1, 3}), floats({1, 2}, {1.1f, 2.1f})}, 9,
      with_int("axis", 1));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
}

TEST(ScatterElements, ReductionAddAndMulWithDuplicates) {
  auto with = [](const char* reduction) {
    return [=](Node* n) {
      with_int("axis", 1)(n);
      set_string(n, "reduction", reduction);
    };
  };
  Tensor data = floats({1, 5}, {1, 2, 3, 4, 5});
  Tensor indices = int64s({1, 3}, {1, 1, -1});
  Tensor updates = floats({1, 3}, {10, 20, 3});
  Tensor add = run_one("ScatterElements", {data, indices, updates}, 16, with("add"));
  EXPECT_EQ(values_of<float>(add), (std::vector<float>{1, 32, 3, 4, 8}));
  Tensor mul = run_one("ScatterElements", {data, indices, updates}, 16, with("mul"));
  EXPECT_EQ(values_of<float>(mul), (std::vector<float>{1, 400, 3, 4, 15}));
  // The input stays untouched.
  EXPECT_EQ(values_of<float>(data), (std::vector<float>{1, 2, 3, 4, 5}));
  // Reduction is an opset 16 attribute.
  EXPECT_TRUE(contains(run_error("ScatterElements", {data, indices, updates}, 13, with("add")),
                       "needs opset 16"));
}

TEST(ScatterElements, ReductionMaxAndMinWithDuplicates) {
  auto with = [](const char* reduction) {
    return [=](Node* n) {
      with_int("axis", 1)(n);
      set_string(n, "reduction", reduction);
    };
  };
  Tensor data = floats({1, 5}, {1, 2, 3, 4, 5});
  Tensor indices = int64s({1, 3}, {1, 1, -1});
  Tensor updates = floats({1, 3}, {10, -20, 3});
  EXPECT_EQ(values_of<float>(run_one("ScatterElements", {data, indices, updates}, 18, with("max"))),
            (std::vector<float>{1, 10, 3, 4, 5}));
  EXPECT_EQ(values_of<float>(run_one("ScatterElements", {data, indices, updates}, 18, with("min"))),
            (std::vector<float>{1, -20, 3, 4, 3}));
  EXPECT_TRUE(contains(run_error("ScatterElements", {data, indices, updates}, 16, with("max")),
                       "needs opset 18"));
  Tensor nd = run_one("ScatterND", {iota({4}), int64s({2, 1}, {1, 1}), floats({2}, {-1, 7})}, 18,
                      [](Node* n) { set_string(n, "reduction", "max"); });
  EXPECT_EQ(values_of<float>(nd), (std::vector<float>{0, 7, 2, 3}));
}

TEST(ScatterElements, Float16AddAndInt8Wraps) {
  auto add = [](Node* n) { set_string(n, "reduction", "add"); };
  Tensor h = Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(1.5f), Float16(2.0f)});
  Tensor hu = Tensor::from_vector<Float16>(DType::kFloat16, {1}, {Float16(0.25f)});
  Tensor out = run_one("ScatterElements", {h, i64s({1}), hu}, 16, add);
  EXPECT_EQ(static_cast<float>(out.data<Float16>()[1]), 2.25f);
  Tensor b = Tensor::from_vector<int8_t>(DType::kInt8, {1}, {127});
  Tensor bu = Tensor::from_vector<int8_t>(DType::kInt8, {1}, {1});
  Tensor wrapped = run_one("ScatterElements", {b, i64s({0}), bu}, 16, add);
  EXPECT_EQ(wrapped.data<int8_t>()[0], -128);
}

TEST(ScatterElements, StringsAndErrors) {
  Tensor s = run_one(
      "ScatterElements",
      {Tensor::from_strings({3}, {"a", "b", "c"}), i32({1}, {0}), Tensor::from_strings({1}, {"z"})},
      13);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"z", "b", "c"}));
  EXPECT_TRUE(
      contains(run_error("ScatterElements", {iota({3}), i64s({3}), floats({1}, {0})}, 13),
               "indices value 3 (at indices element 0) is out of bounds for axis 0 of size 3"));
  EXPECT_TRUE(
      contains(run_error("ScatterElements", {iota({3}), i64s({0, 1}), floats({1}, {0})}, 13),
               "updates shape [1] differs from indices shape [2]"));
}

TEST(ScatterND, SlicesAndReductions) {
  // data 2x3, replace row 1.
  Tensor out =
      run_one("ScatterND", {iota({2, 3}), int64s({1, 1}, {-1}), floats({1, 3}, {7, 8, 9})}, 13);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 1, 2, 7, 8, 9}));
  Tensor add =
      run_one("ScatterND", {iota({4}), int64s({3, 1}, {1, 1, 3}), floats({3}, {10, 20, 5})}, 16,
              [](Node* n) { set_string(n, "reduction", "add"); });
  EXPECT_EQ(values_of<float>(add), (std::vector<float>{0, 31, 2, 8}));
  Tensor mul = run_one("ScatterND", {iota({2, 2}), int64s({1, 2}, {1, 1}), floats({1}, {4})}, 16,
                       [](Node* n) { set_string(n, "reduction", "mul"); });
  EXPECT_EQ(values_of<float>(mul), (std::vector<float>{0, 1, 2, 12}));
  EXPECT_TRUE(contains(
      run_error("ScatterND", {iota({2, 3}), int64s({1, 1}, {0}), floats({3}, {1, 2, 3})}, 13),
      "updates shape [3] must be [1,3]"));
}

// ---- NonZero ----

TEST(NonZero, RowMajorOrderAndFloatZeroes) {
  Tensor x = floats({2, 3}, {0, -0.0f, 3, NAN, 0, -1});
  Tensor out = run_one("NonZero", {x}, 13);
  EXPECT_EQ(out.dtype(), DType::kInt64);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<int64_t>(out), (std::vector<int64_t>{0, 1, 1, 2, 0, 2}));
}

TEST(NonZero, ScalarStringsAndEmpty) {
  Tensor scalar = run_one("NonZero", {floats({}, {5})}, 13);
  EXPECT_EQ(scalar.shape(), (Shape{0, 1}));
  Tensor s = run_one("NonZero", {Tensor::from_strings({3}, {"", "a", ""})}, 13);
  EXPECT_EQ(values_of<int64_t>(s), (std::vector<int64_t>{1}));
  Tensor none = run_one("NonZero", {iota({0, 4})}, 13);
  EXPECT_EQ(none.shape(), (Shape{2, 0}));
}

// ---- OneHot ----

TEST(OneHot, AxisZeroIntDepthStringValues) {
  Tensor depth = Tensor::from_vector<uint8_t>(DType::kUInt8, {}, {3});
  Tensor out = run_one("OneHot", {i64s({2, 0, 5}), depth, Tensor::from_strings({2}, {"off", "on"})},
                       11, with_int("axis", 0));
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"off", "on", "off", "off", "off", "off", "on",
                                                     "off", "off"}));
}

TEST(OneHot, NegativeIndicesWrapFromOpset11) {
  Tensor depth = floats({1}, {3.7f});  // cast to int64: 3
  Tensor values = i32({2}, {0, 1});
  Tensor v11 = run_one("OneHot", {floats({3}, {-1.9f, 2.2f, -4}), depth, values}, 11);
  EXPECT_EQ(v11.dtype(), DType::kInt32);
  EXPECT_EQ(v11.shape(), (Shape{3, 3}));
  EXPECT_EQ(values_of<int32_t>(v11), (std::vector<int32_t>{0, 0, 1, 0, 0, 1, 0, 0, 0}));
  Tensor v9 = run_one("OneHot", {i64s({-1, 1}), depth, values}, 9);
  EXPECT_EQ(values_of<int32_t>(v9), (std::vector<int32_t>{0, 0, 0, 0, 1, 0}));
}

TEST(OneHot, Errors) {
  EXPECT_TRUE(
      contains(run_error("OneHot", {i64s({0}), floats({}, {2}), floats({3}, {0, 1, 2})}, 11),
               "values must hold two elements"));
  EXPECT_TRUE(contains(run_error("OneHot", {i64s({0}), floats({}, {-2}), floats({2}, {0, 1})}, 11),
                       "depth -2 is invalid"));
  EXPECT_TRUE(contains(run_error("OneHot", {i64s({0}), floats({}, {2}), floats({2}, {0, 1})}, 11,
                                 with_int("axis", 2)),
                       "axis 2 is out of range for output rank 2"));
}

// ---- Trilu, EyeLike ----

TEST(Trilu, UpperLowerWithKAndBatches) {
  Tensor x = iota({2, 2, 3});
  Tensor upper = run_one("Trilu", {x, int64s({}, {1})}, 14);
  EXPECT_EQ(values_of<float>(upper), (std::vector<float>{0, 1, 2, 0, 0, 5, 0, 7, 8, 0, 0, 11}));
  Tensor lower = run_one("Trilu", {x, int64s({}, {-1})}, 14, with_int("upper", 0));
  EXPECT_EQ(values_of<float>(lower), (std::vector<float>{0, 0, 0, 3, 0, 0, 0, 0, 0, 9, 0, 0}));
  Tensor lower_default = run_one("Trilu", {iota({2, 2})}, 14, with_int("upper", 0));
  EXPECT_EQ(values_of<float>(lower_default), (std::vector<float>{0, 0, 2, 3}));
}

TEST(Trilu, ExtremeKAndStrings) {
  Tensor all = run_one("Trilu", {iota({2, 2}), int64s({}, {kMin})}, 14);
  EXPECT_EQ(values_of<float>(all), (std::vector<float>{0, 1, 2, 3}));
  Tensor none = run_one("Trilu", {iota({2, 2}), int64s({}, {kMax})}, 14);
  EXPECT_EQ(values_of<float>(none), (std::vector<float>{0, 0, 0, 0}));
  Tensor none_lower =
      run_one("Trilu", {iota({2, 2}), int64s({}, {kMin})}, 14, with_int("upper", 0));
  EXPECT_EQ(values_of<float>(none_lower), (std::vector<float>{0, 0, 0, 0}));
  Tensor s = run_one("Trilu", {Tensor::from_strings({2, 2}, {"a", "b", "c", "d"})}, 14);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"a", "b", "", "d"}));
  EXPECT_TRUE(contains(run_error("Trilu", {iota({3})}, 14), "rank >= 2"));
}

TEST(EyeLike, KAndDtype) {
  Tensor up = run_one("EyeLike", {iota({2, 3})}, 9, with_int("k", 1));
  EXPECT_EQ(values_of<float>(up), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  Tensor down = run_one("EyeLike", {int64s({3, 2}, {9, 9, 9, 9, 9, 9})}, 9, with_int("k", -1));
  EXPECT_EQ(down.dtype(), DType::kInt64);
  EXPECT_EQ(values_of<int64_t>(down), (std::vector<int64_t>{0, 0, 1, 0, 0, 1}));
  Tensor b = run_one("EyeLike", {iota({2, 2})}, 9, with_int("dtype", 9));
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(values_of<bool>(b), (std::vector<bool>{true, false, false, true}));
  Tensor h = run_one("EyeLike", {iota({1, 1})}, 9, with_int("dtype", 10));
  EXPECT_EQ(static_cast<float>(h.data<Float16>()[0]), 1.0f);
  Tensor far = run_one("EyeLike", {iota({2, 2})}, 9, with_int("k", kMin));
  EXPECT_EQ(values_of<float>(far), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_TRUE(contains(run_error("EyeLike", {iota({2, 2})}, 9, with_int("dtype", 8)),
                       "output type string is not supported"));
  EXPECT_TRUE(contains(run_error("EyeLike", {iota({2})}, 9), "rank 2"));
}

// ---- Unique and Compress ----

Tensor bools(Shape shape, std::vector<bool> values) {
  Tensor t(DType::kBool, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.mutable_data<bool>()[i] = values[i];
  return t;
}

// The four outputs of Unique.
struct UniqueResult {
  Tensor y;
  std::vector<int64_t> indices, inverse, counts;
};
UniqueResult unique_of(Tensor x, std::optional<int64_t> axis, int64_t sorted = 1) {
  auto values = run_op(
      "Unique", {std::move(x)}, 11,
      [&](Node* n) {
        set_int(n, "sorted", sorted);
        if (axis) set_int(n, "axis", *axis);
      },
      4);
  return {values[0], values_of<int64_t>(values[1]), values_of<int64_t>(values[2]),
          values_of<int64_t>(values[3])};
}

TEST(Unique, SpecExamplesOneAndTwo) {
  UniqueResult r = unique_of(floats({6}, {2, 1, 1, 3, 4, 3}), std::nullopt, 0);
  EXPECT_EQ(values_of<float>(r.y), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(r.inverse, (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{1, 2, 2, 1}));
  r = unique_of(int64s({2, 2}, {1, 3, 2, 3}), std::nullopt);
  EXPECT_EQ(r.y.shape(), (Shape{3}));
  EXPECT_EQ(values_of<int64_t>(r.y), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(r.inverse, (std::vector<int64_t>{0, 2, 1, 2}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{1, 1, 2}));
}

TEST(Unique, SlicesAlongAxisSortedAndUnsorted) {
  // Spec example 4: the slices along axis 1 of a (2, 4, 2) tensor.
  Tensor x = floats({2, 4, 2}, {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1});
  UniqueResult r = unique_of(x, 1);
  EXPECT_EQ(r.y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values_of<float>(r.y), (std::vector<float>{0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(r.inverse, (std::vector<int64_t>{1, 0, 2, 0}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{2, 1, 1}));
  r = unique_of(x, -2, 0);
  EXPECT_EQ(values_of<float>(r.y), (std::vector<float>{1, 1, 0, 1, 2, 1, 1, 1, 0, 1, 2, 1}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(r.inverse, (std::vector<int64_t>{0, 1, 2, 1}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{1, 2, 1}));
}

TEST(Unique, StringsNanAndEmpty) {
  UniqueResult r = unique_of(Tensor::from_strings({4}, {"b", "a", "b", ""}), std::nullopt);
  EXPECT_EQ(r.y.strings(), (std::vector<std::string>{"", "a", "b"}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{1, 1, 2}));
  // NaN sorts last and NaNs count as one value.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r = unique_of(floats({4}, {nan, 1, nan, -1}), std::nullopt);
  std::vector<float> y = values_of<float>(r.y);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], -1);
  EXPECT_EQ(y[1], 1);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(r.inverse, (std::vector<int64_t>{2, 1, 2, 0}));
  r = unique_of(floats({0, 3}, {}), std::nullopt);
  EXPECT_EQ(r.y.shape(), (Shape{0}));
  EXPECT_TRUE(r.counts.empty());
  r = unique_of(floats({0, 3}, {}), 0);
  EXPECT_EQ(r.y.shape(), (Shape{0, 3}));
}

TEST(Unique, OnlyYRequestedAndBadAxis) {
  Tensor y = run_one("Unique", {int64s({3}, {3, 3, 1})}, 11);
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{1, 3}));
  std::string message = error_of([] {
    run_one("Unique", {int64s({3}, {3, 3, 1})}, 11, [](Node* n) { set_int(n, "axis", 1); });
  });
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

TEST(Compress, AxisShortConditionAndFlatten) {
  Tensor x = floats({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor out = run_one("Compress", {x, bools({2}, {false, true})}, 11,
                       [](Node* n) { set_int(n, "axis", 0); });
  EXPECT_EQ(out.shape(), (Shape{1, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{3, 4}));
  out = run_one("Compress", {x, bools({2}, {true, true})}, 11,
                [](Node* n) { set_int(n, "axis", -1); });
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  out = run_one("Compress", {x, bools({5}, {false, true, false, false, true})}, 9);
  EXPECT_EQ(out.shape(), (Shape{2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{2, 5}));
  out = run_one("Compress", {x, bools({3}, {false, false, false})}, 11,
                [](Node* n) { set_int(n, "axis", 0); });
  EXPECT_EQ(out.shape(), (Shape{0, 2}));
}

TEST(Compress, StringsAndErrors) {
  Tensor s = Tensor::from_strings({2, 2}, {"a", "b", "c", "d"});
  Tensor out = run_one("Compress", {s, bools({2}, {false, true})}, 11,
                       [](Node* n) { set_int(n, "axis", 1); });
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"b", "d"}));
  std::string message = error_of([&] {
    run_one("Compress", {s, bools({3}, {false, false, true})}, 11,
            [](Node* n) { set_int(n, "axis", 1); });
  });
  EXPECT_NE(message.find("condition is true at index 2, beyond the 2 slices"), std::string::npos)
      << message;
  message = error_of([&] { run_one("Compress", {s, int64s({2}, {1, 0})}, 11); });
  EXPECT_NE(message.find("condition must be bool"), std::string::npos) << message;
}

}  // namespace
}  // namespace onnxkit
