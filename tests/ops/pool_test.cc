// Unit tests of the pool op family (MaxPool, AveragePool, LpPool, Global*Pool).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

TEST(MaxPool, PadsAndIndicesInBothStorageOrders) {
  // Two channels of 3x3; kernel 2x2, stride 2, end pads 1 -> 2x2 windows.
  Tensor x = floats({1, 2, 3, 3}, {1, 5, 2, 4, 3, 9, 7, 8, 6, 1, 5, 2, 4, 3, 9, 7, 8, 6});
  auto make = [](int64_t order) {
    SetAttributes a = [=](Node* n) {
      set_ints(n, "kernel_shape", {2, 2});
      set_ints(n, "strides", {2, 2});
      set_ints(n, "pads", {0, 0, 1, 1});
      set_int(n, "storage_order", order);
    };
    return a;
  };
  auto out = run_op("MaxPool", {x}, 12, make(0), 2);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 2, 2}));
  expect_near(out[0], {5, 9, 8, 6, 5, 9, 8, 6});
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{1, 5, 7, 8, 10, 14, 16, 17}));
  out = run_op("MaxPool", {x}, 12, make(1), 2);
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{3, 7, 5, 8, 12, 16, 14, 17}));
}

TEST(MaxPool, CeilModeDropsWindowsStartingInPadding) {
  SetAttributes attrs = [=](Node* n) {
    set_ints(n, "kernel_shape", {2});
    set_ints(n, "strides", {2});
    set_int(n, "ceil_mode", 1);
  };
  Tensor y = run_one("MaxPool", {floats({1, 1, 5}, {1, 2, 3, 4, 5})}, 10, attrs);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3}));
  expect_near(y, {2, 4, 5});
  // in 3, kernel 1, stride 2, end pad 1: ceil gives 3 windows but the third starts at 4.
  SetAttributes b = [=](Node* n) {
    set_ints(n, "kernel_shape", {1});
    set_ints(n, "strides", {2});
    set_ints(n, "pads", {0, 1});
    set_int(n, "ceil_mode", 1);
  };
  y = run_one("MaxPool", {floats({1, 1, 3}, {1, 2, 3})}, 12, b);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2}));
  expect_near(y, {1, 3});
}

TEST(MaxPool, Dilations) {
  SetAttributes attrs = [=](Node* n) {
    set_ints(n, "kernel_shape", {2});
    set_ints(n, "dilations", {2});
  };
  auto out = run_op("MaxPool", {floats({1, 1, 6}, {1, 9, 2, 8, 3, 7})}, 12, attrs, 2);
  expect_near(out[0], {2, 9, 3, 8});
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{2, 1, 4, 3}));
}

TEST(MaxPool, AutoPadSameUpperAndLower) {
  auto run = [](const std::string& mode) {
    SetAttributes attrs = [=](Node* n) {
      set_ints(n, "kernel_shape", {2});
      set_string(n, "auto_pad", mode);
    };
    return run_one("MaxPool", {floats({1, 1, 5}, {1, 2, 3, 4, 5})}, 11, attrs);
  };
  expect_near(run("SAME_UPPER"), {2, 3, 4, 5, 5});
  expect_near(run("SAME_LOWER"), {1, 2, 3, 4, 5});
  Tensor valid = run("VALID");
  EXPECT_EQ(valid.shape(), (Shape{1, 1, 4}));
  expect_near(valid, {2, 3, 4, 5});
}

TEST(MaxPool, Uint8AndInt8FromOpset12) {
  Tensor x = Tensor::from_vector<uint8_t>(DType::kUInt8, {1, 1, 4}, {3, 250, 7, 1});
  SetAttributes attrs = [=](Node* n) {
    set_ints(n, "kernel_shape", {2});
    set_ints(n, "strides", {2});
  };
  EXPECT_EQ(values_of<uint8_t>(run_one("MaxPool", {x}, 12, attrs)), (std::vector<uint8_t>{250, 7}));
  Tensor s = Tensor::from_vector<int8_t>(DType::kInt8, {1, 1, 3}, {-5, -3, -128});
  SetAttributes b = [=](Node* n) {
    set_ints(n, "kernel_shape", {2});
    set_ints(n, "pads", {1, 1});
  };
  EXPECT_EQ(values_of<int8_t>(run_one("MaxPool", {s}, 12, b)),
            (std::vector<int8_t>{-5, -3, -3, -128}));
  SetAttributes c = [=](Node* n) { set_ints(n, "kernel_shape", {2}); };
  EXPECT_NE(error_of([&] { run_one("MaxPool", {x}, 11, c); }).find("opset 12"), std::string::npos);
}

TEST(MaxPool, ThreeDimensionalWithIndices) {
  std::vector<float> v(8);
  for (int i = 0; i < 8; ++i) v[i] = static_cast<float>((i * 5) % 8);  // 0 5 2 7 4 1 6 3
  SetAttributes attrs = [=](Node* n) { set_ints(n, "kernel_shape", {2, 2, 2}); };
  auto out = run_op("MaxPool", {floats({1, 1, 2, 2, 2}, v)}, 12, attrs, 2);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 1, 1, 1}));
  expect_near(out[0], {7});
  EXPECT_EQ(values_of<int64_t>(out[1]), (std::vector<int64_t>{3}));
}

TEST(MaxPool, EmptyBatchAndFloat16) {
  SetAttributes attrs = [=](Node* n) { set_ints(n, "kernel_shape", {2}); };
  Tensor y = run_one("MaxPool", {Tensor(DType::kFloat, {0, 3, 4})}, 12, attrs);
  EXPECT_EQ(y.shape(), (Shape{0, 3, 3}));
  Tensor h = Tensor::from_vector<Float16>(DType::kFloat16, {1, 1, 3},
                                          {Float16(1.5f), Float16(-2.f), Float16(4.25f)});
  SetAttributes b = [=](Node* n) { set_ints(n, "kernel_shape", {2}); };
  Tensor hy = run_one("MaxPool", {h}, 12, b);
  ASSERT_EQ(hy.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(hy.data<Float16>()[0]), 1.5f);
  EXPECT_EQ(static_cast<float>(hy.data<Float16>()[1]), 4.25f);
}

TEST(MaxPool, ErrorsNameTheProblem) {
  SetAttributes attrs = [=](Node* n) { set_ints(n, "kernel_shape", {2, 2}); };
  std::string message = error_of([&] {
    run_one("MaxPool", {floats({1, 1, 4}, {1, 2, 3, 4})}, 12, attrs);
  });
  EXPECT_NE(message.find("input has rank 3"), std::string::npos) << message;
  SetAttributes b = [=](Node* n) {
    set_ints(n, "kernel_shape", {2});
    set_string(n, "auto_pad", "SAME");
  };
  message = error_of([&] { run_one("MaxPool", {floats({1, 1, 2}, {1, 2})}, 12, b); });
  EXPECT_NE(message.find("auto_pad 'SAME'"), std::string::npos) << message;
  SetAttributes c = [=](Node* n) { set_ints(n, "kernel_shape", {5}); };
  message = error_of([&] { run_one("MaxPool", {floats({1, 1, 2}, {1, 2})}, 12, c); });
  EXPECT_NE(message.find("kernel extent 5"), std::string::npos) << message;
}

TEST(AveragePool, CountIncludePad) {
  auto run = [](int64_t include) {
    SetAttributes attrs = [=](Node* n) {
      set_ints(n, "kernel_shape", {2, 2});
      set_ints(n, "pads", {1, 1, 1, 1});
      set_int(n, "count_include_pad", include);
    };
    return run_one("AveragePool", {floats({1, 1, 2, 2}, {1, 2, 3, 4})}, 11, attrs);
  };
  expect_near(run(1), {0.25f, 0.75f, 0.5f, 1.f, 2.5f, 1.5f, 0.75f, 1.75f, 1.f});
  expect_near(run(0), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
}

TEST(AveragePool, SameLowerWithAndWithoutPadCount) {
  auto run = [](int64_t include) {
    SetAttributes attrs = [=](Node* n) {
      set_ints(n, "kernel_shape", {2});
      set_string(n, "auto_pad", "SAME_LOWER");
      set_int(n, "count_include_pad", include);
    };
    return run_one("AveragePool", {floats({1, 1, 5}, {1, 2, 3, 4, 5})}, 11, attrs);
  };
  expect_near(run(0), {1, 1.5f, 2.5f, 3.5f, 4.5f});
  expect_near(run(1), {0.5f, 1.5f, 2.5f, 3.5f, 4.5f});
}

TEST(AveragePool, DoubleAndCeilMode) {
  Tensor x = Tensor::from_vector<double>(DType::kDouble, {1, 1, 5}, {1, 2, 3, 4, 6});
  SetAttributes attrs = [=](Node* n) {
    set_ints(n, "kernel_shape", {2});
    set_ints(n, "strides", {2});
    set_int(n, "ceil_mode", 1);
  };
  Tensor y = run_one("AveragePool", {x}, 11, attrs);
  EXPECT_EQ(values_of<double>(y), (std::vector<double>{1.5, 3.5, 6}));
}

TEST(LpPool, PowersOneTwoThree) {
  auto run = [](int64_t p) {
    SetAttributes attrs = [=](Node* n) {
      set_ints(n, "kernel_shape", {2});
      set_ints(n, "strides", {2});
      set_int(n, "p", p);
    };
    return run_one("LpPool", {floats({1, 1, 4}, {3, 4, -6, 8})}, 11, attrs);
  };
  expect_near(run(2), {5, 10});
  expect_near(run(1), {7, 14});
  expect_near(run(3), {std::cbrt(91.f), std::cbrt(728.f)});
}

TEST(GlobalPool, AverageMaxLp) {
  Tensor x = floats({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, 2});
  Tensor avg = run_one("GlobalAveragePool", {x}, 1);
  EXPECT_EQ(avg.shape(), (Shape{1, 2, 1, 1}));
  expect_near(avg, {2.5f, -1});
  expect_near(run_one("GlobalMaxPool", {x}, 1), {4, 2});
  expect_near(run_one("GlobalLpPool", {x}, 2), {std::sqrt(30.f), std::sqrt(18.f)});
  SetAttributes attrs = [=](Node* n) { set_int(n, "p", 1); };
  expect_near(run_one("GlobalLpPool", {x}, 2, attrs), {10, 8});
}

TEST(GlobalPool, EmptyChannelsAndRankErrors) {
  Tensor y = run_one("GlobalAveragePool", {Tensor(DType::kFloat, {2, 0, 3})}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 0, 1}));
  std::string message = error_of([] { run_one("GlobalMaxPool", {floats({3}, {1, 2, 3})}, 1); });
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
}

// ---- MaxUnpool ----

SetAttributes unpool_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                           std::vector<int64_t> pads = {}) {
  return [=](Node* n) {
    set_ints(n, "kernel_shape", kernel);
    set_ints(n, "strides", strides);
    if (!pads.empty()) set_ints(n, "pads", pads);
  };
}

TEST(MaxUnpool, OneDimensionalScatter) {
  // Length (2 - 1) * 2 + 2 = 4; indices are offsets into the whole output.
  Tensor out =
      run_one("MaxUnpool", {floats({1, 2, 2}, {5, 7, 1, 2}), int64s({1, 2, 2}, {1, 2, 4, 7})}, 11,
              unpool_attrs({2}, {2}));
  EXPECT_EQ(out.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 5, 7, 0, 1, 0, 0, 2}));
}

TEST(MaxUnpool, PadsShrinkTheInferredShape) {
  // (3 - 1) * 1 - (1 + 1) + 3 = 3 per axis.
  Tensor out = run_one("MaxUnpool", {floats({1, 1, 3}, {4, 4, 9}), int64s({1, 1, 3}, {0, 0, 2})}, 9,
                       unpool_attrs({3}, {1}, {1, 1}));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{4, 0, 9}));
}

TEST(MaxUnpool, OutputShapePlacesTheResultAtTheOrigin) {
  // Indices refer to the inferred 1 x 1 x 4 layout; output_shape adds a zero at the end.
  Tensor out = run_one(
      "MaxUnpool", {floats({1, 1, 2}, {5, 7}), int64s({1, 1, 2}, {1, 3}), int64s({3}, {1, 1, 5})},
      11, unpool_attrs({2}, {2}));
  EXPECT_EQ(out.shape(), (Shape{1, 1, 5}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 5, 0, 7, 0}));
  // In 2-D the rows move with the wider row length.
  out = run_one("MaxUnpool",
                {floats({1, 1, 1, 1}, {3}), int64s({1, 1, 1, 1}, {3}), int64s({4}, {1, 1, 3, 3})},
                11, unpool_attrs({2, 2}, {2, 2}));
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{0, 0, 0, 0, 3, 0, 0, 0, 0}));
}

TEST(MaxUnpool, DoubleAndEmptyBatch) {
  Tensor x = Tensor::from_vector<double>(DType::kDouble, {1, 1, 1}, {2.5});
  Tensor out = run_one("MaxUnpool", {x, int64s({1, 1, 1}, {1})}, 11, unpool_attrs({2}, {2}));
  EXPECT_EQ(out.dtype(), DType::kDouble);
  EXPECT_EQ(values_of<double>(out), (std::vector<double>{0, 2.5}));
  out = run_one("MaxUnpool", {floats({0, 1, 2}, {}), int64s({0, 1, 2}, {})}, 11,
                unpool_attrs({2}, {2}));
  EXPECT_EQ(out.shape(), (Shape{0, 1, 4}));
}

TEST(MaxUnpool, ErrorsNameTheProblem) {
  std::string message = error_of([] {
    run_one("MaxUnpool", {floats({1, 1, 2}, {5, 7}), int64s({1, 1, 2}, {1, 4})}, 11,
            unpool_attrs({2}, {2}));
  });
  EXPECT_NE(message.find("I value 4 (element 1) is out of range for the unpooled shape"),
            std::string::npos)
      << message;
  message = error_of([] {
    run_one("MaxUnpool", {floats({1, 1, 2}, {5, 7}), int64s({1, 1, 1}, {1})}, 11,
            unpool_attrs({2}, {2}));
  });
  EXPECT_NE(message.find("differs from X shape"), std::string::npos) << message;
  message = error_of([] {
    run_one("MaxUnpool", {floats({1, 2}, {5, 7}), int64s({1, 2}, {1, 2})}, 11,
            unpool_attrs({2}, {2}));
  });
  EXPECT_NE(message.find("X has rank 2, kernel_shape needs rank 3"), std::string::npos) << message;
}

TEST(AveragePool, DilationsFromOpset19) {
  std::vector<float> v(25);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  Tensor x = floats({1, 1, 5, 5}, v);
  auto attrs = with_ints("kernel_shape", {2, 2}, with_ints("dilations", {2, 2}));
  Tensor y = run_one("AveragePool", {x}, 19, attrs);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  expect_near(y, {7, 8, 9, 12, 13, 14, 17, 18, 19});
  // AveragePool-11 has no dilations attribute: a dense 2x2 window.
  EXPECT_EQ(run_one("AveragePool", {x}, 11, attrs).shape(), (Shape{1, 1, 4, 4}));
  // The optimized kernel agrees.
  NodeCase c("AveragePool", {x}, 22, attrs);
  expect_near(run_node(c, optimized())[0], {7, 8, 9, 12, 13, 14, 17, 18, 19});
}

TEST(LpPool, DilationsFromOpset18) {
  std::vector<float> v(25);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  Tensor x = floats({1, 1, 5, 5}, v);
  auto attrs = with_ints("kernel_shape", {2, 2}, with_ints("dilations", {2, 2}, with_int("p", 2)));
  Tensor y = run_one("LpPool", {x}, 18, attrs);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
  expect_near(y,
              {17.320509, 18.973665, 20.688160, 26.076809, 27.928480, 29.799330, 35.496479,
               37.416573, 39.344631},
              1e-5f);
  EXPECT_EQ(run_one("LpPool", {x}, 11, attrs).shape(), (Shape{1, 1, 4, 4}));
}

TEST(MaxRoiPool, BinsTakeTheMaximumAndEmptyBinsAreZero) {
  std::vector<float> v(16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor x = floats({1, 1, 4, 4}, v);
  // Region (x 0..3, y 0..3) in 2x2 bins; region (x 2..3, y 1..1) in 2x2 bins of a 1-row roi.
  Tensor rois = floats({2, 5}, {0, 0, 0, 3, 3, 0, 2, 1, 3, 1});
  Tensor y = run_one("MaxRoiPool", {x, rois}, 22, with_ints("pooled_shape", {2, 2}));
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2, 2}));
  expect_near(y, {5, 7, 13, 15, 6, 7, 6, 7});
  // spatial_scale halves the coordinates: (0..1.5 -> 0..2) rounded.
  y = run_one(
      "MaxRoiPool", {x, floats({1, 5}, {0, 0, 0, 3, 3})}, 1,
      with_ints("pooled_shape", {1, 1}, [](Node* n) { set_float(n, "spatial_scale", 0.5f); }));
  expect_near(y, {10});
  EXPECT_NE(run_error("MaxRoiPool", {x, floats({1, 5}, {3, 0, 0, 1, 1})}, 22,
                      with_ints("pooled_shape", {1, 1}))
                .find("names batch index 3"),
            std::string::npos);
}

TEST(TypeRules, MaxRoiPool) {
  const ValueType x = ValueType::tensor(DType::kFloat, dims({1, 16, 32, 32}));
  const ValueType rois = ValueType::tensor(DType::kFloat, dims({-1, 5}));
  EXPECT_EQ(type_text(infer_op_type("MaxRoiPool", {x, rois}, 22,
                                    [](Node* n) {
                                      set_ints(n, "pooled_shape", {7, 6});
                                    })),
            "float[?,16,7,6]");
}

// Version 22 of the conv, pool and normalization ops adds bfloat16: the reference kernels
// take it, and the oneDNN ones hand it back to them.
TEST(Opset22, BFloat16ThroughConvPoolsAndNorms) {
  auto bf16 = [](Shape shape, std::vector<float> values) {
    std::vector<BFloat16> v;
    for (float f : values) v.push_back(BFloat16(f));
    return Tensor::from_vector<BFloat16>(DType::kBFloat16, std::move(shape), v);
  };
  auto as_floats = [](const Tensor& t) {
    EXPECT_EQ(t.dtype(), DType::kBFloat16);
    std::vector<float> out;
    for (int64_t i = 0; i < t.numel(); ++i)
      out.push_back(static_cast<float>(t.data<BFloat16>()[i]));
    return out;
  };
  const Tensor x = bf16({1, 1, 2, 2}, {1, 2, 3, 4});
  const SetAttributes k2 = with_ints("kernel_shape", {2, 2});
  for (const SessionOptions& options : {SessionOptions::reference(), optimized()}) {
    NodeCase conv("Conv", {x, bf16({1, 1, 2, 2}, {1, 0.5f, 0.25f, 2})}, 22);
    EXPECT_EQ(as_floats(run_node(conv, options)[0]), (std::vector<float>{10.75f}));
    EXPECT_EQ(as_floats(run_node(NodeCase("AveragePool", {x}, 22, k2), options)[0]),
              (std::vector<float>{2.5f}));
    EXPECT_EQ(as_floats(run_node(NodeCase("MaxPool", {x}, 22, k2), options)[0]),
              (std::vector<float>{4}));
    EXPECT_EQ(as_floats(run_node(NodeCase("GlobalAveragePool", {x}, 22), options)[0]),
              (std::vector<float>{2.5f}));
  }
  const Tensor y = run_one("InstanceNormalization", {x, bf16({1}, {1}), bf16({1}, {0})}, 22);
  EXPECT_NEAR(as_floats(y)[3], 1.3416f, 1e-2f);
}

// Each version of the conv and pool ops that onnx 1.23 defines keeps the oneDNN kernels: an
// optimized registration serves an opset only when it is as new as the reference one.
TEST(OptimizedKernels, ServeTheNewestConvAndPoolVersions) {
  const OpRegistry& registry = builtin_registry();
  for (const char* op :
       {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    for (int64_t opset : {18, 19, 21, 22, 28}) {
      const OptimizedRegistration* optimized = registry.find_optimized("", op, opset);
      ASSERT_NE(optimized, nullptr) << op << " at opset " << opset;
      EXPECT_GE(optimized->since_version, registry.find("", op, opset)->since_version) << op;
    }
  }
}

}  // namespace
}  // namespace onnxkit
