// Unit tests of the softmax op family (Softmax, LogSoftmax, Hardmax).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

const Tensor kCube = floats({2, 2, 2}, {0, 1, 2, 3, 1, 1, 1, 1});

TEST(Softmax, OldOpsetsCoerceTo2D) {
  // Opset 11, default axis 1: rows of 4 values.
  expect_near(run_one("Softmax", {kCube}, 11),
              {0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f, 0.25f, 0.25f, 0.25f, 0.25f});
  // axis 3 == rank (versions 1 to 10): every dim goes to the rows, so each row has one
  // element.
  SetAttributes attrs = [=](Node* n) { set_int(n, "axis", 3); };
  expect_near(run_one("Softmax", {kCube}, 10, attrs), std::vector<float>(8, 1.f));
  // Negative axis at opset 11: -2 is axis 1.
  SetAttributes neg = [=](Node* n) { set_int(n, "axis", -2); };
  expect_near(run_one("Softmax", {kCube}, 11, neg),
              {0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f, 0.25f, 0.25f, 0.25f, 0.25f});
}

TEST(Softmax, Opset13RunsAlongOneAxis) {
  SetAttributes attrs = [=](Node* n) { set_int(n, "axis", 1); };
  expect_near(run_one("Softmax", {kCube}, 13, attrs),
              {0.1192029f, 0.1192029f, 0.8807971f, 0.8807971f, 0.5f, 0.5f, 0.5f, 0.5f});
  // Default axis -1: pairs along the last dim.
  expect_near(run_one("Softmax", {kCube}, 13),
              {0.2689414f, 0.7310586f, 0.2689414f, 0.7310586f, 0.5f, 0.5f, 0.5f, 0.5f});
}

TEST(Softmax, LargeValuesStayFinite) {
  Tensor x = floats({2}, {1000, 1001});
  expect_near(run_one("Softmax", {x}, 13), {0.2689414f, 0.7310586f});
  expect_near(run_one("LogSoftmax", {x}, 13), {-1.3132617f, -0.3132617f});
  Tensor d = Tensor::from_vector<double>(DType::kDouble, {2}, {-1e5, -1e5 + 1});
  std::vector<double> y = values_of<double>(run_one("LogSoftmax", {d}, 13));
  EXPECT_NEAR(y[0], -1.3132616875182228, 1e-12);
  EXPECT_NEAR(y[1], -0.3132616875182228, 1e-12);
}

TEST(LogSoftmax, OldAndNewAxisSemantics) {
  expect_near(run_one("LogSoftmax", {kCube}, 1),
              {-3.4401897f, -2.4401897f, -1.4401897f, -0.4401897f, -1.3862944f, -1.3862944f,
               -1.3862944f, -1.3862944f});
  SetAttributes attrs = [=](Node* n) { set_int(n, "axis", 0); };
  expect_near(run_one("LogSoftmax", {kCube}, 13, attrs),
              {-1.3132617f, -0.6931472f, -0.3132617f, -0.126928f, -0.3132617f, -0.6931472f,
               -1.3132617f, -2.126928f});
}

TEST(Hardmax, FirstMaximumWinsAndOldCoercion) {
  Tensor x = floats({1, 4}, {1, 3, 3, 2});
  expect_near(run_one("Hardmax", {x}, 13), {0, 1, 0, 0});
  expect_near(run_one("Hardmax", {kCube}, 11), {0, 0, 0, 1, 1, 0, 0, 0});
  SetAttributes attrs = [=](Node* n) { set_int(n, "axis", 0); };
  expect_near(run_one("Hardmax", {kCube}, 13, attrs), {0, 1, 1, 1, 1, 0, 0, 0});
}

TEST(Softmax, HalfTypesAndEmptyTensors) {
  Tensor h = Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(0.f), Float16(0.f)});
  Tensor y = run_one("Softmax", {h}, 13);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(y.data<Float16>()[1]), 0.5f);
  Tensor b = Tensor::from_vector<BFloat16>(DType::kBFloat16, {2}, {BFloat16(1.f), BFloat16(1.f)});
  EXPECT_EQ(static_cast<float>(run_one("Hardmax", {b}, 13).data<BFloat16>()[0]), 1.f);
  Tensor empty = run_one("Softmax", {Tensor(DType::kFloat, {0, 3})}, 13);
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  Tensor zero_axis = run_one("LogSoftmax", {Tensor(DType::kFloat, {2, 0})}, 11);
  EXPECT_EQ(zero_axis.shape(), (Shape{2, 0}));
}

// The rule refuses a bad axis as the kernel does: libonnx would refuse it too, then hand the
// nodes after it an input without a type (its data propagation dereferenced it).
TEST(Softmax, TypeRuleRefusesTheKernelsBadAxes) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    for (const auto& [opset, axis, valid] : std::vector<std::tuple<int64_t, int64_t, bool>>{
             {13, 3, false}, {13, -4, false}, {13, 2, true}, {11, 3, false}, {10, 3, true}}) {
      NodeCase c{
          op, {floats({2, 2, 2}, std::vector<float>(8, 0.f))}, opset, [axis = axis](Node* n) {
            set_int(n, "axis", axis);
          }};
      const std::vector<SymbolicShape> shapes{std::vector<Dim>(3, Dim::known(2))};
      const std::string message = error_of([&] { infer_node_types(c, shapes); });
      EXPECT_EQ(message.empty(), valid)
          << op << "-" << opset << " axis " << axis << ": " << message;
    }
  }
}

TEST(Softmax, AxisOutOfRangeAndIntegerInputFail) {
  SetAttributes attrs = [=](Node* n) { set_int(n, "axis", 2); };
  std::string message = error_of([&] {
    run_one("Softmax", {floats({2, 2}, {1, 2, 3, 4})}, 13, attrs);
  });
  EXPECT_NE(message.find("axis 2 is out of range for rank 2"), std::string::npos) << message;
  SetAttributes old = [=](Node* n) { set_int(n, "axis", 3); };
  message = error_of([&] { run_one("Softmax", {floats({2, 2}, {1, 2, 3, 4})}, 11, old); });
  EXPECT_NE(message.find("axis 3 is out of range for rank 2"), std::string::npos) << message;
  // Version 11 documents [-r, r - 1]: axis == rank is refused there.
  message = error_of([&] { run_one("Softmax", {floats({2, 2}, {1, 2, 3, 4})}, 11, attrs); });
  EXPECT_NE(message.find("axis 2 is out of range for rank 2 (valid: [-2, 1])"), std::string::npos)
      << message;
  Tensor ints = Tensor::from_vector<int32_t>(DType::kInt32, {2}, {1, 2});
  message = error_of([&] { run_one("Softmax", {ints}, 13); });
  EXPECT_NE(message.find("int32"), std::string::npos) << message;
}

}  // namespace
}  // namespace onnxkit
