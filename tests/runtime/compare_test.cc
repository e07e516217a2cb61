#include "runtime/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onnxkit {
namespace {

Tensor floats(std::vector<float> values) {
  return Tensor::from_vector<float>(DType::kFloat, {static_cast<int64_t>(values.size())}, values);
}

TEST(Compare, FloatsWithinTolerance) {
  EXPECT_TRUE(compare_tensors(floats({1.0f, 100.0f}), floats({1.0005f, 100.05f})).ok);
  auto off = compare_tensors(floats({1.0f, 100.0f}), floats({1.0f, 100.5f}));
  EXPECT_FALSE(off.ok);
  EXPECT_NE(off.message.find("[1]"), std::string::npos) << off.message;
  EXPECT_NEAR(off.max_abs_error, 0.5, 1e-6);
}

TEST(Compare, NanEqualsNanAndInfinitiesMustMatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(compare_tensors(floats({nan, inf}), floats({nan, inf})).ok);
  EXPECT_FALSE(compare_tensors(floats({nan}), floats({1})).ok);
  EXPECT_FALSE(compare_tensors(floats({inf}), floats({-inf})).ok);
}

TEST(Compare, IntegersAreExactAndShapesMustMatch) {
  auto a = Tensor::from_vector<int64_t>(DType::kInt64, {2}, {1, 2});
  auto b = Tensor::from_vector<int64_t>(DType::kInt64, {2}, {1, 3});
  EXPECT_FALSE(compare_tensors(a, b).ok);
  auto c = Tensor::from_vector<int64_t>(DType::kInt64, {1, 2}, {1, 2});
  auto shape = compare_tensors(a, c);
  EXPECT_FALSE(shape.ok);
  EXPECT_NE(shape.message.find("shape"), std::string::npos);
  EXPECT_FALSE(compare_tensors(a, floats({1, 2})).ok);
}

TEST(Compare, StringsAndSequences) {
  auto s1 = Tensor::from_strings({2}, {"a", "b"});
  auto s2 = Tensor::from_strings({2}, {"a", "c"});
  EXPECT_TRUE(compare_tensors(s1, s1).ok);
  EXPECT_FALSE(compare_tensors(s1, s2).ok);
  auto q1 = RuntimeValue::sequence({floats({1}), floats({2})});
  auto q2 = RuntimeValue::sequence({floats({1}), floats({3})});
  EXPECT_TRUE(compare_values(q1, q1).ok);
  auto diff = compare_values(q1, q2);
  EXPECT_FALSE(diff.ok);
  EXPECT_NE(diff.message.find("item 1"), std::string::npos);
  EXPECT_FALSE(compare_values(q1, RuntimeValue(floats({1}))).ok);
}

}  // namespace
}  // namespace onnxkit
