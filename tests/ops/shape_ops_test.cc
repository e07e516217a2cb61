// Shape and data-movement ops: opset differences, corners, zero-copy and error messages.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <limits>

#include "core/half.h"

#include "onnxkit/session.h"
#include "op_test_util.h"
#include "ops/shape_vector.h"
#include "registry/builtin_registry.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

SetAttributes both(SetAttributes a, SetAttributes b) {
  return [=](Node* n) {
    a(n);
    b(n);
  };
}

Tensor iota(Shape shape) {
  Tensor t(DType::kFloat, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = static_cast<float>(i);
  return t;
}

// ---- Shape, Size ----

TEST(Shape, WholeShapeAndScalar) {
  EXPECT_EQ(values_of<int64_t>(run_one("Shape", {iota({2, 3, 4})}, 13)),
            (std::vector<int64_t>{2, 3, 4}));
  Tensor s = run_one("Shape", {floats({}, {1})}, 15);
  EXPECT_EQ(s.shape(), (Shape{0}));
}

TEST(Shape, StartEndClampedAndNegative) {
  Tensor x(DType::kFloat, {2, 3, 4, 5});
  auto run = [&](int64_t start, std::optional<int64_t> end) {
    SetAttributes attrs = with_int("start", start);
    if (end) attrs = both(attrs, with_int("end", *end));
    return values_of<int64_t>(run_one("Shape", {x}, 15, attrs));
  };
  EXPECT_EQ(run(1, -1), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(run(-10, 100), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(run(-1, std::nullopt), (std::vector<int64_t>{5}));
  EXPECT_EQ(run(3, 1), (std::vector<int64_t>{}));
  // Before opset 15 start/end do not exist.
  EXPECT_EQ(values_of<int64_t>(run_one("Shape", {x}, 13, with_int("start", 2))).size(), 4u);
}

TEST(Size, CountsElements) {
  Tensor size = run_one("Size", {Tensor(DType::kString, {2, 0, 3})}, 13);
  EXPECT_EQ(size.shape(), Shape{});
  EXPECT_EQ(size.data<int64_t>()[0], 0);
  EXPECT_EQ(run_one("Size", {iota({2, 3})}, 1).data<int64_t>()[0], 6);
}

// ---- Reshape ----

TEST(Reshape, ZeroCopiesDimAndMinusOneInfers) {
  Tensor x = iota({2, 3, 4});
  Tensor y = run_one("Reshape", {x, int64s({3}, {0, -1, 2})}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(values_of<float>(y), values_of<float>(x));
  // No copy: the output views the input's bytes.
  EXPECT_EQ(y.raw_data(), x.raw_data());
}

TEST(Reshape, AllowZeroMakesZeroDims) {
  Tensor x(DType::kFloat, {0, 3});
  EXPECT_EQ(run_one("Reshape", {x, int64s({3}, {3, 0, 5})}, 14, with_int("allowzero", 1)).shape(),
            (Shape{3, 0, 5}));
  // Without allowzero the 0 copies dim 1 (3): 3*3*5 elements do not fit 0.
  EXPECT_NE(run_error("Reshape", {x, int64s({3}, {3, 0, 5})}, 14).find("cannot reshape"),
            std::string::npos);
  // allowzero is ignored before opset 14.
  EXPECT_EQ(
      run_one("Reshape", {iota({2, 3}), int64s({2}, {0, 3})}, 13, with_int("allowzero", 1)).shape(),
      (Shape{2, 3}));
  EXPECT_NE(run_error("Reshape", {x, int64s({2}, {0, -1})}, 14, with_int("allowzero", 1))
                .find("both 0 and -1"),
            std::string::npos);
}

TEST(Reshape, Version1TakesTheShapeAttribute) {
  Tensor x = iota({2, 3, 4});
  Tensor y =
      run_one("Reshape", {x}, 1, with_ints("shape", {0, -1}, with_ints("consumed_inputs", {0})));
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(y.data<float>()[23], 23.0f);
  EXPECT_EQ(run_one("Reshape", {iota({1})}, 1, with_ints("shape", {})).shape(), (Shape{}));
  EXPECT_NE(run_error("Reshape", {x}, 1).find("needs the `shape` attribute"), std::string::npos);
  EXPECT_NE(run_error("Reshape", {x}, 1, with_ints("shape", {5, -1})).find("cannot be inferred"),
            std::string::npos);
  // The type rule reads the attribute too.
  const ValueType x_type = ValueType::tensor(DType::kFloat, dims({2, 3, 4}));
  EXPECT_EQ(type_text(infer_op_type("Reshape", {x_type}, 1, with_ints("shape", {4, -1}))),
            "float[4,6]");
}

TEST(Reshape, Errors) {
  Tensor x = iota({2, 3});
  EXPECT_NE(run_error("Reshape", {x, int64s({2}, {-1, -1})}, 13).find("more than one -1"),
            std::string::npos);
  std::string e = run_error("Reshape", {x, int64s({2}, {4, -1})}, 13);
  EXPECT_NE(e.find("cannot reshape [2,3] (6 elements) to [4,-1]"), std::string::npos) << e;
  e = run_error("Reshape", {x, int64s({2}, {4, 2})}, 5);
  EXPECT_NE(e.find("[2,3] (6 elements) to [4,2] (8 elements)"), std::string::npos) << e;
  e = run_error("Reshape", {x, int64s({3}, {1, 6, 0})}, 13);
  EXPECT_NE(e.find("input [2,3] has rank 2"), std::string::npos) << e;
  EXPECT_NE(run_error("Reshape", {x, int64s({2}, {-2, 3})}, 13).find("invalid dim -2"),
            std::string::npos);
}

TEST(Reshape, StringsAndScalar) {
  Tensor s = Tensor::from_strings({2, 2}, {"a", "b", "c", "d"});
  Tensor y = run_one("Reshape", {s, int64s({1}, {-1})}, 14);
  EXPECT_EQ(y.shape(), Shape{4});
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(run_one("Reshape", {floats({1, 1}, {7}), int64s({0}, {})}, 14).shape(), Shape{});
}

// ---- Flatten ----

TEST(Flatten, AxesIncludingNegativeAndRank) {
  Tensor x = iota({2, 3, 4});
  EXPECT_EQ(run_one("Flatten", {x}, 13).shape(), (Shape{2, 12}));
  EXPECT_EQ(run_one("Flatten", {x}, 13, with_int("axis", 0)).shape(), (Shape{1, 24}));
  EXPECT_EQ(run_one("Flatten", {x}, 13, with_int("axis", 3)).shape(), (Shape{24, 1}));
  EXPECT_EQ(run_one("Flatten", {x}, 11, with_int("axis", -1)).shape(), (Shape{6, 4}));
  EXPECT_EQ(run_one("Flatten", {x}, 11, with_int("axis", -3)).shape(), (Shape{1, 24}));
  Tensor y = run_one("Flatten", {x}, 9, with_int("axis", 2));
  EXPECT_EQ(y.raw_data(), x.raw_data());
  // Negative axes came with opset 11, but older exporters wrote them: accepted as ORT does.
  EXPECT_EQ(run_one("Flatten", {x}, 9, with_int("axis", -1)).shape(), (Shape{6, 4}));
  EXPECT_NE(run_error("Flatten", {x}, 13, with_int("axis", 4)).find("axis 4 is out of range"),
            std::string::npos);
  EXPECT_EQ(run_one("Flatten", {Tensor(DType::kFloat, {2, 0, 3})}, 13, with_int("axis", 2)).shape(),
            (Shape{0, 3}));
}

// ---- Squeeze, Unsqueeze ----

TEST(Squeeze, AllOnesWhenNoAxes) {
  Tensor x = iota({1, 3, 1, 2});
  Tensor y = run_one("Squeeze", {x}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.raw_data(), x.raw_data());
  EXPECT_EQ(run_one("Squeeze", {x}, 11).shape(), (Shape{3, 2}));
  EXPECT_EQ(run_one("Squeeze", {floats({1, 1}, {5})}, 13).shape(), Shape{});
}

TEST(Squeeze, AxesAttributeAndInput) {
  Tensor x = iota({1, 3, 1, 2});
  EXPECT_EQ(run_one("Squeeze", {x}, 11, with_ints("axes", {-2})).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(run_one("Squeeze", {x}, 1, with_ints("axes", {0})).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(run_one("Squeeze", {x, int64s({2}, {2, 0})}, 13).shape(), (Shape{3, 2}));
  std::string e = run_error("Squeeze", {x, int64s({1}, {1})}, 13);
  EXPECT_NE(e.find("cannot squeeze axis 1 of size 3"), std::string::npos) << e;
  e = run_error("Squeeze", {x, int64s({1}, {4})}, 13);
  EXPECT_NE(e.find("axis 4 is out of range for rank 4"), std::string::npos) << e;
  EXPECT_EQ(run_one("Squeeze", {x}, 1, with_ints("axes", {-2})).shape(), (Shape{1, 3, 2}));
}

TEST(Unsqueeze, AttributeAndInputAxes) {
  Tensor x = iota({3, 4});
  EXPECT_EQ(run_one("Unsqueeze", {x}, 11, with_ints("axes", {-1, 0})).shape(), (Shape{1, 3, 4, 1}));
  Tensor y = run_one("Unsqueeze", {x, int64s({3}, {4, 0, 2})}, 13);
  EXPECT_EQ(y.shape(), (Shape{1, 3, 1, 4, 1}));
  EXPECT_EQ(y.raw_data(), x.raw_data());
  EXPECT_EQ(run_one("Unsqueeze", {floats({}, {2}), int64s({1}, {0})}, 13).shape(), Shape{1});
  EXPECT_NE(run_error("Unsqueeze", {x, int64s({2}, {1, -3})}, 13).find("axis 1 is repeated"),
            std::string::npos);
  EXPECT_NE(run_error("Unsqueeze", {x, int64s({1}, {3})}, 13).find("out of range for rank 3"),
            std::string::npos);
  EXPECT_NE(run_error("Unsqueeze", {x}, 11).find("'axes' is missing"), std::string::npos);
}

// ---- Transpose ----

TEST(Transpose, DefaultReversesAndPerm) {
  Tensor x = iota({2, 3});
  Tensor y = run_one("Transpose", {x}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  // numpy: np.arange(24).reshape(2,3,4).transpose(1,2,0).ravel()[:8]
  Tensor z = run_one("Transpose", {iota({2, 3, 4})}, 13, with_ints("perm", {1, 2, 0}));
  EXPECT_EQ(z.shape(), (Shape{3, 4, 2}));
  std::vector<float> head(z.data<float>(), z.data<float>() + 8);
  EXPECT_EQ(head, (std::vector<float>{0, 12, 1, 13, 2, 14, 3, 15}));
}

TEST(Transpose, StringsHalfAndErrors) {
  Tensor s = Tensor::from_strings({2, 2}, {"a", "b", "c", "d"});
  EXPECT_EQ(run_one("Transpose", {s}, 13).strings(),
            (std::vector<std::string>{"a", "c", "b", "d"}));
  Tensor h = Tensor::from_vector(DType::kFloat16, {1, 2},
                                 std::vector<Float16>{Float16(1.5f), Float16(-2.0f)});
  Tensor ht = run_one("Transpose", {h}, 13);
  EXPECT_EQ(ht.shape(), (Shape{2, 1}));
  EXPECT_EQ(static_cast<float>(ht.data<Float16>()[1]), -2.0f);
  EXPECT_NE(run_error("Transpose", {iota({2, 3})}, 13, with_ints("perm", {0, 0}))
                .find("not a permutation"),
            std::string::npos);
  EXPECT_NE(
      run_error("Transpose", {iota({2, 3})}, 13, with_ints("perm", {0})).find("perm has 1 entries"),
      std::string::npos);
}

// ---- Concat, Split ----

TEST(Concat, AxesEmptyInputsAndStrings) {
  Tensor a = iota({2, 2});
  Tensor b = floats({2, 1}, {10, 11});
  Tensor empty(DType::kFloat, {2, 0});
  Tensor y = run_one("Concat", {a, empty, b}, 11, with_int("axis", -1));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 1, 10, 2, 3, 11}));
  Tensor s =
      run_one("Concat", {Tensor::from_strings({1}, {"x"}), Tensor::from_strings({2}, {"y", "z"})},
              13, with_int("axis", 0));
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"x", "y", "z"}));
  std::string e = run_error("Concat", {a, iota({3, 1})}, 13, with_int("axis", 1));
  EXPECT_NE(e.find("input 1 has shape [3,1]"), std::string::npos) << e;
  EXPECT_NE(run_error("Concat", {a, int64s({2, 1}, {1, 2})}, 13, with_int("axis", 1))
                .find("input 1 has type int64"),
            std::string::npos);
  EXPECT_NE(run_error("Concat", {a}, 13, with_int("axis", 2)).find("out of range"),
            std::string::npos);
}

TEST(Split, EqualPartsAndSizes) {
  Tensor x = iota({2, 4});
  auto parts = run_op("Split", {x}, 13, with_int("axis", 1), 2);
  EXPECT_EQ(values_of<float>(parts[0]), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{2, 3, 6, 7}));
  parts = run_op("Split", {x, int64s({3}, {1, 0, 3})}, 13, with_int("axis", -1), 3);
  EXPECT_EQ(parts[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(values_of<float>(parts[2]), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  parts = run_op("Split", {x}, 11, both(with_ints("split", {3, 1}), with_int("axis", 1)), 2);
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{3, 7}));
  parts = run_op("Split", {x}, 2, {}, 2);
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{4, 5, 6, 7}));
}

TEST(Split, Version1SplitAttributeOrInput) {
  Tensor x = iota({2, 4});
  auto parts = run_op("Split", {x}, 1, both(with_ints("split", {1, 3}), with_int("axis", 1)), 2);
  EXPECT_EQ(values_of<float>(parts[0]), (std::vector<float>{0, 4}));
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  // The split input has the data's type in version 1; int64 is read as well.
  parts = run_op("Split", {x, floats({2}, {3, 1})}, 1, with_int("axis", 1), 2);
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{3, 7}));
  parts = run_op("Split", {x, int64s({2}, {2, 2})}, 1, with_int("axis", 1), 2);
  EXPECT_EQ(values_of<float>(parts[0]), (std::vector<float>{0, 1, 4, 5}));
  parts = run_op("Split", {x}, 1, {}, 2);  // equal parts along axis 0
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{4, 5, 6, 7}));
  std::string e = run_error("Split", {x, floats({2}, {2.5f, 1.5f})}, 1, with_int("axis", 1), 2);
  EXPECT_NE(e.find("not a whole number"), std::string::npos) << e;
  e = run_error("Split", {x, floats({2}, {2, 2})}, 1, with_ints("split", {2, 2}), 2);
  EXPECT_NE(e.find("both as an attribute and as input 1"), std::string::npos) << e;
  // Opset 2 to 12 read only the attribute.
  e = run_error("Split", {x}, 2, with_ints("split", {2, 2}), 3);
  EXPECT_NE(e.find("has 2 entries for 3 outputs"), std::string::npos) << e;
  // The type rule (one output here) reads version 1's constant split input or attribute
  // where the dim is unknown.
  const ValueType x_type = ValueType::tensor(DType::kFloat, dims({-1, -1}));
  EXPECT_EQ(type_text(infer_op_type("Split", {x_type, floats({1}, {5})}, 1, with_int("axis", 1))),
            "float[?,5]");
  EXPECT_EQ(type_text(infer_op_type("Split", {x_type}, 1, with_ints("split", {7}))), "float[7,?]");
}

TEST(Split, Errors) {
  Tensor x = iota({5});
  std::string e = run_error("Split", {x}, 13, {}, 2);
  EXPECT_NE(e.find("size 5 cannot be split into 2 equal parts"), std::string::npos) << e;
  e = run_error("Split", {x, int64s({2}, {2, 2})}, 13, {}, 2);
  EXPECT_NE(e.find("sums to 4, but dim 0 has size 5"), std::string::npos) << e;
  e = run_error("Split", {x}, 11, with_ints("split", {5}), 2);
  EXPECT_NE(e.find("has 1 entries for 2 outputs"), std::string::npos) << e;
}

TEST(Split, Opset18NumOutputsWithASmallerLastPart) {
  Tensor x = iota({7});
  auto parts = run_op("Split", {x}, 18, with_int("num_outputs", 3), 3);
  EXPECT_EQ(values_of<float>(parts[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(values_of<float>(parts[2]), (std::vector<float>{6}));
  // Without num_outputs the outputs count the same way.
  parts = run_op("Split", {x}, 18, {}, 4);
  EXPECT_EQ(parts[3].shape(), (Shape{1}));
  std::string e = run_error("Split", {x}, 18, with_int("num_outputs", 2), 3);
  EXPECT_NE(e.find("num_outputs is 2, but the node has 3 outputs"), std::string::npos) << e;
  e = run_error("Split", {iota({2})}, 18, {}, 4);
  EXPECT_NE(e.find("size 2 cannot be split into 4 parts"), std::string::npos) << e;
}

// ---- Expand, Tile ----

TEST(Expand, Bidirectional) {
  Tensor x = floats({3, 1}, {1, 2, 3});
  Tensor y = run_one("Expand", {x, int64s({2}, {1, 2})}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3}));
  // The shape may have fewer dims, or 1s where the input is larger.
  EXPECT_EQ(run_one("Expand", {x, int64s({1}, {1})}, 8).shape(), (Shape{3, 1}));
  Tensor z = run_one("Expand", {x, int64s({3}, {2, 1, 4})}, 8);
  EXPECT_EQ(z.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(z.data<float>()[23], 3.0f);
  EXPECT_NE(run_error("Expand", {x, int64s({2}, {4, 1})}, 13).find("cannot be broadcast"),
            std::string::npos);
  EXPECT_EQ(run_one("Expand", {floats({1, 2}, {1, 2}), int64s({2}, {0, 1})}, 13).shape(),
            (Shape{0, 2}));
  Tensor flags(DType::kBool, {2});
  flags.mutable_data<bool>()[1] = true;
  Tensor f = run_one("Expand", {flags, int64s({2}, {2, 1})}, 13);
  EXPECT_EQ(values_of<bool>(f), (std::vector<bool>{false, true, false, true}));
}

TEST(Tile, RepeatsEachDim) {
  Tensor x = iota({2, 2});
  Tensor y = run_one("Tile", {x, int64s({2}, {2, 3})}, 13);
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  // np.tile(np.arange(4).reshape(2,2), (2,3)) rows 0 and 3
  std::vector<float> v = values_of<float>(y);
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 6), (std::vector<float>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(std::vector<float>(v.begin() + 18, v.end()), (std::vector<float>{2, 3, 2, 3, 2, 3}));
  EXPECT_EQ(run_one("Tile", {x, int64s({2}, {0, 2})}, 6).shape(), (Shape{0, 4}));
  Tensor s = run_one("Tile", {Tensor::from_strings({2}, {"a", "b"}), int64s({1}, {2})}, 13);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"a", "b", "a", "b"}));
  EXPECT_NE(run_error("Tile", {x, int64s({1}, {2})}, 13).find("repeats has 1 entries"),
            std::string::npos);
  EXPECT_NE(run_error("Tile", {x, int64s({2}, {1, -1})}, 13).find("negative"), std::string::npos);
}

TEST(Tile, Version1RepeatsAlongOneAxis) {
  Tensor x = iota({2, 2});
  Tensor y = run_one("Tile", {x, floats({}, {3}), floats({}, {1})}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  y = run_one("Tile", {x, int64s({1}, {2}), int64s({1}, {-2})}, 1);
  EXPECT_EQ(y.shape(), (Shape{4, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_NE(run_error("Tile", {x, floats({}, {2}), floats({}, {2})}, 1).find("out of range"),
            std::string::npos);
  EXPECT_NE(run_error("Tile", {x, floats({2}, {2, 2}), floats({}, {0})}, 1).find("single values"),
            std::string::npos);
  // The type rule: dim `axis` times `tiles` when both are constant.
  const ValueType x_type = ValueType::tensor(DType::kFloat, dims({2, 5}));
  EXPECT_EQ(type_text(infer_op_type("Tile", {x_type, floats({}, {3}), floats({}, {1})}, 1)),
            "float[2,15]");
  const ValueType scalar = ValueType::tensor(DType::kFloat, dims({}));
  EXPECT_EQ(type_text(infer_op_type("Tile", {x_type, scalar, floats({}, {0})}, 1)), "float[?,5]");
  EXPECT_EQ(type_text(infer_op_type("Tile", {x_type, floats({}, {3}), scalar}, 1)), "float[?,?]");
}

// ---- Constant, ConstantOfShape, Range ----

TEST(Constant, ValueAttributes) {
  Tensor v = run_one("Constant", {}, 13, [](Node* n) {
    Attribute a;
    a.name = "value";
    a.type = AttrType::kTensor;
    a.t = Tensor::from_vector<int32_t>(DType::kInt32, {2}, {4, 5});
    n->set_attribute(std::move(a));
  });
  EXPECT_EQ(values_of<int32_t>(v), (std::vector<int32_t>{4, 5}));
  Tensor fs = run_one("Constant", {}, 12, [](Node* n) {
    set_floats(n, "value_floats", {1.5f, 2.5f});
  });
  EXPECT_EQ(fs.dtype(), DType::kFloat);
  EXPECT_EQ(values_of<float>(fs), (std::vector<float>{1.5f, 2.5f}));
  Tensor i = run_one("Constant", {}, 13, with_int("value_int", 7));
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_EQ(i.shape(), Shape{});
  EXPECT_EQ(i.data<int64_t>()[0], 7);
  Tensor is = run_one("Constant", {}, 13, with_ints("value_ints", {3, -1}));
  EXPECT_EQ(is.shape(), Shape{2});
  Tensor s = run_one("Constant", {}, 17, [](Node* n) {
    set_strings(n, "value_strings", {"p", "q"});
  });
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"p", "q"}));
  Tensor one = run_one("Constant", {}, 12, [](Node* n) { set_string(n, "value_string", "hi"); });
  EXPECT_EQ(one.shape(), Shape{});
  EXPECT_EQ(one.strings()[0], "hi");
}

TEST(Constant, SparseValueAndErrors) {
  Tensor dense = run_one("Constant", {}, 13, [](Node* n) {
    Attribute a;
    a.name = "sparse_value";
    a.type = AttrType::kSparseTensor;
    a.sparse_tensor.values = floats({2}, {5, 6});
    a.sparse_tensor.indices = int64s({2, 2}, {0, 1, 1, 2});
    a.sparse_tensor.dims = {2, 3};
    n->set_attribute(std::move(a));
  });
  EXPECT_EQ(values_of<float>(dense), (std::vector<float>{0, 5, 0, 0, 0, 6}));
  std::string e = run_error("Constant", {}, 11, with_int("value_int", 1));
  EXPECT_NE(e.find("'value_int' needs opset 12"), std::string::npos) << e;
  e = run_error("Constant", {}, 13, both(with_int("value_int", 1), with_ints("value_ints", {1})));
  EXPECT_NE(e.find("exactly one value attribute"), std::string::npos) << e;
  EXPECT_NE(run_error("Constant", {}, 13).find("needs one of"), std::string::npos);
}

TEST(ConstantOfShape, DefaultValueTypesAndScalar) {
  Tensor z = run_one("ConstantOfShape", {int64s({2}, {2, 3})}, 9);
  EXPECT_EQ(z.dtype(), DType::kFloat);
  EXPECT_EQ(values_of<float>(z), std::vector<float>(6, 0.0f));
  auto value = [](Tensor t) {
    return [t](Node* n) {
      Attribute a;
      a.name = "value";
      a.type = AttrType::kTensor;
      a.t = t;
      n->set_attribute(std::move(a));
    };
  };
  Tensor s = run_one("ConstantOfShape", {int64s({0}, {})}, 9,
                     value(Tensor::from_vector<int32_t>(DType::kInt32, {1}, {4})));
  EXPECT_EQ(s.dtype(), DType::kInt32);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.data<int32_t>()[0], 4);
  Tensor h = run_one(
      "ConstantOfShape", {int64s({1}, {3})}, 9,
      value(Tensor::from_vector(DType::kFloat16, {1}, std::vector<Float16>{Float16(0.5f)})));
  EXPECT_EQ(static_cast<float>(h.data<Float16>()[2]), 0.5f);
  EXPECT_EQ(run_one("ConstantOfShape", {int64s({2}, {4, 0})}, 9).numel(), 0);
  EXPECT_NE(run_error("ConstantOfShape", {int64s({1}, {-2})}, 9).find("negative dim"),
            std::string::npos);
}

TEST(Range, HalfTypesComputeInTheirStashType) {
  auto h = [](float v) { return Tensor::from_vector<Float16>(DType::kFloat16, {}, {Float16(v)}); };
  Tensor r = run_one("Range", {h(1), h(5), h(1.5f)}, 27);
  ASSERT_EQ(r.dtype(), DType::kFloat16);
  ASSERT_EQ(r.shape(), (Shape{3}));
  EXPECT_EQ(static_cast<float>(r.data<Float16>()[2]), 4.0f);
  auto b = [](float v) {
    return Tensor::from_vector<BFloat16>(DType::kBFloat16, {}, {BFloat16(v)});
  };
  Tensor d = run_one("Range", {b(0), b(2), b(0.5f)}, 27, with_int("stash_type", 11));
  EXPECT_EQ(d.shape(), (Shape{4}));
  std::string e = run_error("Range", {h(0), h(1), h(1)}, 27, with_int("stash_type", 10));
  EXPECT_NE(e.find("stash_type 10 is not supported"), std::string::npos) << e;
}

TEST(Range, CountsAndTypes) {
  auto i32 = [](int32_t v) { return Tensor::from_vector<int32_t>(DType::kInt32, {}, {v}); };
  Tensor r = run_one("Range", {i32(10), i32(4), i32(-3)}, 11);
  EXPECT_EQ(values_of<int32_t>(r), (std::vector<int32_t>{10, 7}));
  EXPECT_EQ(run_one("Range", {i32(1), i32(5), i32(-1)}, 11).shape(), Shape{0});
  Tensor f = run_one("Range", {floats({}, {1}), floats({}, {2}), floats({}, {0.25f})}, 11);
  EXPECT_EQ(values_of<float>(f), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  auto i64s = [](int64_t v) { return int64s({}, {v}); };
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const int64_t hi = std::numeric_limits<int64_t>::max();
  Tensor big = run_one("Range", {i64s(lo), i64s(hi), i64s(hi)}, 11);
  EXPECT_EQ(values_of<int64_t>(big), (std::vector<int64_t>{lo, -1, hi - 1}));
  Tensor i16 = run_one("Range",
                       {Tensor::from_vector<int16_t>(DType::kInt16, {}, {-2}),
                        Tensor::from_vector<int16_t>(DType::kInt16, {}, {2}),
                        Tensor::from_vector<int16_t>(DType::kInt16, {}, {3})},
                       11);
  EXPECT_EQ(values_of<int16_t>(i16), (std::vector<int16_t>{-2, 1}));
  EXPECT_NE(run_error("Range", {i32(1), i32(5), i32(0)}, 11).find("delta must not be zero"),
            std::string::npos);
  EXPECT_NE(run_error("Range", {i32(1), i64s(5), i32(1)}, 11).find("input 1 has type int64"),
            std::string::npos);
}

TEST(Identity, SharesTensor) {
  Tensor x = iota({3});
  EXPECT_EQ(run_one("Identity", {x}, 16).raw_data(), x.raw_data());
}

// ---- ReverseSequence ----

SetAttributes axes(int64_t batch_axis, int64_t time_axis) {
  return [=](Node* n) {
    set_int(n, "batch_axis", batch_axis);
    set_int(n, "time_axis", time_axis);
  };
}
Tensor ramp(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return floats(std::move(shape), v);
}

TEST(ReverseSequence, SpecExamples) {
  // Example 1: time_axis 0, batch_axis 1 (the defaults).
  Tensor x = floats({4, 4}, {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15});
  Tensor out = run_one("ReverseSequence", {x, int64s({4}, {4, 3, 2, 1})}, 10);
  EXPECT_EQ(values_of<float>(out),
            (std::vector<float>{3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15}));
  // Example 2: batch_axis 0, time_axis 1.
  out = run_one("ReverseSequence", {ramp({4, 4}), int64s({4}, {1, 2, 3, 4})}, 10, axes(0, 1));
  EXPECT_EQ(values_of<float>(out),
            (std::vector<float>{0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12}));
}

TEST(ReverseSequence, InnerDimsMoveTogetherAndZeroLength) {
  // (batch 2, time 3, 2): batch 0 reverses all 3 steps, batch 1 none.
  Tensor out = run_one("ReverseSequence", {ramp({2, 3, 2}), int64s({2}, {3, 0})}, 10, axes(0, 1));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{4, 5, 2, 3, 0, 1, 6, 7, 8, 9, 10, 11}));
}

TEST(ReverseSequence, StringsAndEmptyTime) {
  Tensor s = Tensor::from_strings({2, 2}, {"a", "b", "c", "d"});
  Tensor out = run_one("ReverseSequence", {s, int64s({2}, {2, 1})}, 10, axes(0, 1));
  EXPECT_EQ(out.strings(), (std::vector<std::string>{"b", "a", "c", "d"}));
  out = run_one("ReverseSequence", {floats({0, 2}, {}), int64s({2}, {0, 0})}, 10);
  EXPECT_EQ(out.shape(), (Shape{0, 2}));
}

TEST(ReverseSequence, ErrorsNameTheProblem) {
  std::string message = error_of([] {
    run_one("ReverseSequence", {ramp({2, 3}), int64s({2}, {1, 4})}, 10, axes(0, 1));
  });
  EXPECT_NE(message.find("sequence_lens value 4 (batch 1) is out of range [0, 3]"),
            std::string::npos)
      << message;
  message = error_of([] { run_one("ReverseSequence", {ramp({2, 3}), int64s({2}, {1, 1})}, 10); });
  EXPECT_NE(message.find("sequence_lens must have shape [3]"), std::string::npos) << message;
  message = error_of([] {
    run_one("ReverseSequence", {ramp({2, 3}), int64s({3}, {1, 1, 1})}, 10, axes(1, 1));
  });
  EXPECT_NE(message.find("batch_axis 1 and time_axis 1"), std::string::npos) << message;
}

// Shape-vector rules, read from the op definitions as shape folding reads them: each value is
// an initializer or its producer's rule applied to its inputs' vectors.
namespace shape_vector_test {

std::optional<ShapeVector> evaluate(const Value* value, int64_t opset);

class InputsByRule : public ShapeVectorContext {
 public:
  using ShapeVectorContext::ShapeVectorContext;
  const ShapeVector* input(size_t index) const override {
    std::optional<ShapeVector> vec = evaluate(node().input(index), opset());
    return vec ? &inputs_.emplace_back(std::move(*vec)) : nullptr;
  }

 private:
  mutable std::deque<ShapeVector> inputs_;
};

std::optional<ShapeVector> evaluate(const Value* value, int64_t opset) {
  if (!value) return std::nullopt;
  if (value->has_initializer()) return ShapeVector::from_tensor(value->initializer());
  const Node* node = value->producer();
  const OpDefinition* definition = node ? builtin_registry().definition(*node, opset) : nullptr;
  if (!definition || !definition->shape_vector) return std::nullopt;
  return definition->shape_vector(InputsByRule(*node, opset));
}

TEST(ShapeVector, RulesFoldKnownDimsAndKeepNamedOnes) {
  Graph g;
  Value* x = g.add_input(
      "x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("batch"), Dim::known(3)}));
  Value* shape = g.add_node("Shape", {x}, {"shape"})->output(0);
  Value* one = g.add_initializer("one", Tensor::from_vector<int64_t>(DType::kInt64, {1}, {1}));
  Value* two = g.add_initializer("two", Tensor::from_vector<int64_t>(DType::kInt64, {}, {2}));
  Value* width = g.add_node("Gather", {shape, one}, {"width"})->output(0);
  Value* doubled = g.add_node("Mul", {width, two}, {"doubled"})->output(0);
  Node* concat = g.add_node("Concat", {shape, doubled}, {"target"});
  Attribute axis;
  axis.name = "axis";
  axis.type = AttrType::kInt;
  axis.i = 0;
  concat->set_attribute(std::move(axis));

  std::optional<ShapeVector> target = evaluate(concat->output(0), 13);
  ASSERT_TRUE(target);
  EXPECT_TRUE(target->from_shape);
  ASSERT_EQ(target->elems.size(), 3u);
  ASSERT_TRUE(target->elems[0].named_dim());
  EXPECT_EQ(*target->elems[0].named_dim(), "batch");
  EXPECT_TRUE(target->elems[1].is(3));
  EXPECT_TRUE(target->elems[2].is(6));
}

TEST(ShapeVector, RulesReadAxesAsTheOpsetDefines) {
  Graph g;
  Value* x =
      g.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("batch")}));
  Value* size = g.add_node("Size", {x}, {"size"})->output(0);
  Node* unsqueeze = g.add_node("Unsqueeze", {size}, {"unsqueezed"});
  Attribute axes;
  axes.name = "axes";
  axes.type = AttrType::kInts;
  axes.ints = {0};
  unsqueeze->set_attribute(std::move(axes));

  // Before opset 13 the axes are an attribute; from 13 they are input 1, which is missing.
  std::optional<ShapeVector> unsqueezed = evaluate(unsqueeze->output(0), 11);
  ASSERT_TRUE(unsqueezed);
  EXPECT_FALSE(unsqueezed->scalar);
  ASSERT_EQ(unsqueezed->elems.size(), 1u);
  EXPECT_EQ(*unsqueezed->elems[0].named_dim(), "batch");
  EXPECT_FALSE(evaluate(unsqueeze->output(0), 13));
}

}  // namespace shape_vector_test
}  // namespace
}  // namespace onnxkit
