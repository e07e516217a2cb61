// Unit tests of the normalization op family (BatchNormalization, InstanceNormalization,
// LayerNormalization, MeanVarianceNormalization, LRN, Dropout).
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

TEST(BatchNormalization, InferenceWithMixedParameterTypes) {
  Tensor x = floats({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor scale = floats({2}, {1, 2});
  Tensor bias = floats({2}, {0, 1});
  Tensor mean = Tensor::from_vector<double>(DType::kDouble, {2}, {1.5, 3.5});
  Tensor var = Tensor::from_vector<double>(DType::kDouble, {2}, {0.25, 0.25});
  SetAttributes attrs = [=](Node* n) { set_float(n, "epsilon", 0); };
  Tensor y = run_one("BatchNormalization", {x, scale, bias, mean, var}, 15, attrs);
  ASSERT_EQ(y.dtype(), DType::kFloat);
  expect_near(y, {-1, 1, -1, 3});
  // Opset 9 is the same computation (no training outputs).
  SetAttributes old = [=](Node* n) { set_float(n, "epsilon", 0); };
  Tensor m32 = floats({2}, {1.5f, 3.5f}), v32 = floats({2}, {0.25f, 0.25f});
  expect_near(run_one("BatchNormalization", {x, scale, bias, m32, v32}, 9, old), {-1, 1, -1, 3});
}

TEST(BatchNormalization, TrainingModeOutputsRunningStatistics) {
  Tensor x = floats({2, 1, 2}, {1, 3, 5, 7});  // one channel: mean 4, variance 5
  Tensor one = floats({1}, {1}), zero = floats({1}, {0});
  SetAttributes attrs = [=](Node* n) {
    set_float(n, "epsilon", 0);
    set_int(n, "training_mode", 1);
  };
  auto out = run_op("BatchNormalization", {x, one, zero, zero, one}, 15, attrs, 3);
  expect_near(out[0], {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f});
  expect_near(out[1], {0.4f});  // 0 * 0.9 + 4 * 0.1
  expect_near(out[2], {1.4f});  // 1 * 0.9 + 5 * 0.1
}

TEST(BatchNormalization, Opset7PerActivationWhenNotSpatial) {
  Tensor x = floats({1, 1, 2}, {1, 2});
  SetAttributes attrs = [=](Node* n) {
    set_float(n, "epsilon", 0);
    set_int(n, "spatial", 0);
  };
  Tensor y = run_one("BatchNormalization",
                     {x, floats({1, 2}, {1, 1}), floats({1, 2}, {0, 10}), floats({1, 2}, {1, 0}),
                      floats({1, 2}, {1, 4})},
                     7, attrs);
  expect_near(y, {0, 11});
}

TEST(BatchNormalization, Version1IsTestAndSpatial) {
  // spatial=0: statistics per (C, D1, ...) activation, as at 6 and 7.
  Tensor x = floats({1, 1, 2}, {1, 2});
  SetAttributes per_activation = [=](Node* n) {
    set_ints(n, "consumed_inputs", {0, 0, 0, 1, 1});
    set_float(n, "epsilon", 0);
    set_int(n, "spatial", 0);
    set_int(n, "is_test", 1);
  };
  expect_near(run_one("BatchNormalization",
                      {x, floats({1, 2}, {1, 1}), floats({1, 2}, {0, 10}), floats({1, 2}, {1, 0}),
                       floats({1, 2}, {1, 4})},
                      1, per_activation),
              {0, 11});
  // is_test=0 with the statistics outputs asked for: this batch's statistics.
  Tensor batch = floats({2, 1, 2}, {1, 3, 5, 7});  // mean 4, variance 5
  Tensor one = floats({1}, {1}), zero = floats({1}, {0});
  SetAttributes train = [=](Node* n) {
    set_ints(n, "consumed_inputs", {0, 0, 0, 1, 1});
    set_float(n, "epsilon", 0);
  };
  auto out = run_op("BatchNormalization", {batch, one, zero, zero, one}, 1, train, 5);
  expect_near(out[0], {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f});
  expect_near(out[1], {0.4f});
  expect_near(out[2], {1.4f});
  expect_near(out[3], {4.0f});
  expect_near(out[4], {5.0f});
}

TEST(BatchNormalization, WrongParameterSizeFails) {
  Tensor x = floats({1, 2, 1}, {1, 2});
  Tensor p = floats({3}, {1, 1, 1});
  std::string message = error_of([&] { run_one("BatchNormalization", {x, p, p, p, p}, 15); });
  EXPECT_NE(message.find("needs 2 values"), std::string::npos) << message;
}

TEST(InstanceNormalization, PerSampleAndChannel) {
  Tensor x = floats({2, 2, 2}, {1, 3, 2, 6, 0, 4, 5, 5});
  Tensor y = run_one("InstanceNormalization", {x, floats({2}, {1, 2}), floats({2}, {0, 1})}, 6);
  // The last channel has variance 0: (x - mean) = 0, so y = B.
  expect_near(y, {-1, 1, -1, 3, -1, 1, 1, 1}, 1e-4f);
}

TEST(LayerNormalization, LastAxisWithStatistics) {
  Tensor x = floats({2, 3}, {1, 2, 3, 2, 4, 6});
  SetAttributes attrs = [=](Node* n) { set_float(n, "epsilon", 0); };
  auto out = run_op("LayerNormalization", {x, floats({3}, {1, 1, 2}), floats({3}, {0, 0, 1})}, 17,
                    attrs, 3);
  expect_near(out[0], {-1.2247449f, 0, 3.4494897f, -1.2247449f, 0, 3.4494897f});
  EXPECT_EQ(out[1].shape(), (Shape{2, 1}));
  expect_near(out[1], {2, 4});
  expect_near(out[2], {1.2247449f, 0.6123724f});
}

TEST(LayerNormalization, AxisZeroBroadcastScaleNoBias) {
  Tensor x = floats({2, 2}, {1, 2, 3, 6});  // mean 3, variance 3.5
  NodeCase c("LayerNormalization", {x, floats({2}, {1, 2})}, 17, [](Node* n) {
    set_int(n, "axis", 0);
    set_float(n, "epsilon", 0);
  });
  c.outputs = {"y", "", "inv_std"};
  auto out = run_node(c);
  const float s = 1 / std::sqrt(3.5f);
  expect_near(out[0], {-2 * s, -2 * s, 0, 6 * s});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1}));
  expect_near(out[1], {s});
}

TEST(LayerNormalization, BadScaleShapeAndAxisFail) {
  Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string message = error_of([&] {
    run_one("LayerNormalization", {x, floats({2}, {1, 1})}, 17);
  });
  EXPECT_NE(message.find("does not broadcast"), std::string::npos) << message;
  SetAttributes attrs = [=](Node* n) { set_int(n, "axis", -3); };
  message = error_of([&] {
    run_one("LayerNormalization", {x, floats({3}, {1, 1, 1})}, 17, attrs);
  });
  EXPECT_NE(message.find("axis -3 is out of range for rank 2"), std::string::npos) << message;
}

TEST(MeanVarianceNormalization, DefaultAndExplicitAxes) {
  Tensor x = floats({1, 2, 1, 2}, {1, 3, 2, 2});
  // Channel 1 is constant: 0 / (0 + 1e-9) = 0.
  expect_near(run_one("MeanVarianceNormalization", {x}, 13), {-1, 1, 0, 0});
  SetAttributes attrs = [=](Node* n) { set_ints(n, "axes", {-1}); };
  expect_near(run_one("MeanVarianceNormalization", {floats({2, 2}, {1, 3, 0, 4})}, 9, attrs),
              {-1, 1, -1, 1});
}

TEST(Lrn, OddAndEvenSizes) {
  Tensor x = floats({1, 3, 1, 1}, {1, 2, 3});
  auto run = [&](int64_t size, float alpha) {
    SetAttributes attrs = [=](Node* n) {
      set_int(n, "size", size);
      set_float(n, "alpha", alpha);
      set_float(n, "beta", 1);
      set_float(n, "bias", 1);
    };
    return run_one("LRN", {x}, 13, attrs);
  };
  expect_near(run(3, 3), {1.f / 6, 2.f / 15, 3.f / 14});
  // size 2 looks at the channel itself and the next one.
  expect_near(run(2, 2), {1.f / 6, 2.f / 14, 3.f / 10});
  std::string message = error_of([&] { run_one("LRN", {x}, 13); });
  EXPECT_NE(message.find("'size'"), std::string::npos) << message;
}

TEST(Dropout, InferenceAndZeroRatioPassThrough) {
  Tensor x = floats({2, 2}, {1, 2, 3, 4});
  auto out = run_op("Dropout", {x}, 13, {}, 2);
  expect_near(out[0], {1, 2, 3, 4});
  EXPECT_EQ(out[1].dtype(), DType::kBool);
  EXPECT_EQ(values_of<bool>(out[1]), (std::vector<bool>{true, true, true, true}));
  Tensor on = bool_scalar(true);
  out = run_op("Dropout", {x, floats({}, {0}), on}, 12, {}, 2);
  expect_near(out[0], {1, 2, 3, 4});
  EXPECT_EQ(values_of<bool>(out[1]), (std::vector<bool>{true, true, true, true}));
  // Before opset 10 the mask has the data type.
  out = run_op("Dropout", {x}, 7, {}, 2);
  EXPECT_EQ(out[1].dtype(), DType::kFloat);
  expect_near(out[1], {1, 1, 1, 1});
  out = run_op("Dropout", {x}, 10, {}, 2);
  EXPECT_EQ(out[1].dtype(), DType::kBool);
}

TEST(Dropout, Versions1And6TrainUnlessIsTest) {
  std::vector<float> v(64, 1.f);
  Tensor x = floats({64}, v);
  for (int64_t opset : {1, 6}) {
    auto out = run_op("Dropout", {x}, opset, with_int("is_test", 1), 2);
    expect_near(out[0], v);
    EXPECT_EQ(out[1].dtype(), DType::kFloat);
    expect_near(out[1], v);
    // is_test defaults to 0: drops at `ratio`, scales the rest; the mask (data type) says
    // which were kept.
    out = run_op(
        "Dropout", {x}, opset, [](Node* n) { set_float(n, "ratio", 0.75f); }, 2);
    const std::vector<float> y = values_of<float>(out[0]);
    const std::vector<float> mask = values_of<float>(out[1]);
    size_t kept = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_TRUE(mask[i] == 0.f || mask[i] == 1.f) << i;
      EXPECT_EQ(y[i], mask[i] * 4.f) << i;
      kept += mask[i] == 1.f;
    }
    EXPECT_LT(kept, y.size()) << "opset " << opset;  // P(keeping all 64) = 0.25^64
  }
  // 7 to 11 never train.
  expect_near(run_op("Dropout", {x}, 7, {}, 1)[0], v);
}

TEST(Dropout, TrainingWithSeedMatchesNumpy) {
  // np.random.seed(0); np.random.uniform(0, 1, 6) =
  // [0.549, 0.715, 0.603, 0.545, 0.424, 0.646]; kept where >= 0.6, scaled by 2.5.
  Tensor x = floats({6}, {1, 2, 3, 4, 5, 6});
  Tensor on = bool_scalar(true);
  SetAttributes attrs = [=](Node* n) { set_int(n, "seed", 0); };
  auto out = run_op("Dropout", {x, floats({}, {0.6f}), on}, 13, attrs, 2);
  expect_near(out[0], {0, 5, 7.5f, 0, 0, 15});
  EXPECT_EQ(values_of<bool>(out[1]), (std::vector<bool>{false, true, true, false, false, true}));
}

TEST(Dropout, TrainingWithoutSeedDropsOrScales) {
  std::vector<float> v(64, 1.f);
  Tensor on = bool_scalar(true);
  auto out = run_op("Dropout", {floats({64}, v), floats({}, {0.5f}), on}, 13, {}, 2);
  const std::vector<float> y = values_of<float>(out[0]);
  const std::vector<bool> mask = values_of<bool>(out[1]);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], mask[i] ? 2.f : 0.f) << i;
}

// Values from the ONNX reference (onnx 1.23).
TEST(GroupNormalization, PerGroupAtOpset18PerChannelAtOpset21) {
  std::vector<float> v;
  const float factor[4] = {1, -1, 2, 0.5f};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<float>(c * 4 + i + 1) * factor[c]);
  }
  Tensor x = floats({1, 4, 2, 2}, v);
  Tensor y =
      run_one("GroupNormalization", {x, floats({4}, {1, 2, 0.5f, -1}), floats({4}, {0, 1, 2, 3})},
              21, with_int("num_groups", 2));
  expect_near(y,
              {0.6469965, 0.862662, 1.0783275, 1.293993, -0.293993, -0.725324, -1.156655, -1.587986,
               2.274218, 2.41575, 2.557282, 2.698814, 4.079181, 4.008415, 3.937649, 3.866883},
              1e-4f);
  y = run_one("GroupNormalization", {x, floats({2}, {1, 2}), floats({2}, {0, 1})}, 18,
              with_int("num_groups", 2));
  expect_near(
      y,
      {0.6469965, 0.862662, 1.0783275, 1.293993, -0.6469965, -0.862662, -1.0783275, -1.293993,
       2.0968728, 2.6630006, 3.2291284, 3.7952561, -1.1583624, -1.0168304, -0.8752984, -0.7337664},
      1e-4f);
  EXPECT_NE(run_error("GroupNormalization", {x, floats({2}, {1, 2}), floats({2}, {0, 1})}, 21,
                      with_int("num_groups", 2))
                .find("need 4 values each (one per channel)"),
            std::string::npos);
}

TEST(LpNormalization, L1AndL2AlongAnAxis) {
  Tensor x = floats({2, 3}, {3, -4, 0, 1, 2, 2});
  expect_near(run_one("LpNormalization", {x}, 22, with_int("axis", 1)),
              {0.6f, -0.8f, 0, 1.0f / 3, 2.0f / 3, 2.0f / 3});
  // L1 divides by the sum of magnitudes; an all-zero slice stays 0.
  expect_near(run_one("LpNormalization", {x}, 1, with_int("axis", 0, with_int("p", 1))),
              {0.75f, -2.0f / 3, 0, 0.25f, 1.0f / 3, 1});
  EXPECT_NE(run_error("LpNormalization", {x}, 1, with_int("p", 3)).find("p is 3"),
            std::string::npos);
}

TEST(TypeRules, GroupAndLpNormalizationKeepTheInputType) {
  const ValueType x = ValueType::tensor(DType::kFloat16, dims({2, 4, -1}));
  const ValueType p = ValueType::tensor(DType::kFloat16, dims({4}));
  EXPECT_EQ(type_text(infer_op_type("GroupNormalization", {x, p, p}, 21)), "float16[2,4,?]");
  EXPECT_EQ(type_text(infer_op_type("LpNormalization", {x}, 22)), "float16[2,4,?]");
}

}  // namespace
}  // namespace onnxkit
