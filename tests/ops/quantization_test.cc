// Quantization family: rounding ties, saturation, per-axis parameters, integer products.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor u8(Shape shape, std::vector<uint8_t> values) {
  return Tensor::from_vector<uint8_t>(DType::kUInt8, std::move(shape), values);
}
Tensor i8(Shape shape, std::vector<int8_t> values) {
  return Tensor::from_vector<int8_t>(DType::kInt8, std::move(shape), values);
}
Tensor i32(Shape shape, std::vector<int32_t> values) {
  return Tensor::from_vector<int32_t>(DType::kInt32, std::move(shape), values);
}

// ---- QuantizeLinear ------------------------------------------------------------------

TEST(QuantizeLinear, Uint8TiesRoundToEvenAndSaturate) {
  const Tensor x = floats({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 3.5f, 300.0f, -300.0f});
  for (int64_t opset : {10, 13}) {
    const Tensor y = run_one("QuantizeLinear", {x, floats({}, {1.0f}), u8({}, {10})}, opset);
    ASSERT_EQ(y.dtype(), DType::kUInt8);
    EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{10, 12, 12, 10, 8, 14, 255, 0}))
        << "opset " << opset;
  }
}

TEST(QuantizeLinear, Int8TiesRoundToEvenAndSaturate) {
  // x / 2 = 0.5, 1.5, 2.5, -0.5, -1.5, 500, -500, 127.5; zero point -1.
  const Tensor x = floats({8}, {1, 3, 5, -1, -3, 1000, -1000, 255});
  const Tensor y = run_one("QuantizeLinear", {x, floats({}, {2.0f}), i8({}, {-1})}, 13);
  ASSERT_EQ(y.dtype(), DType::kInt8);
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{-1, 1, 1, -1, -3, 127, -128, 127}));
}

TEST(QuantizeLinear, NoZeroPointGivesUint8) {
  const Tensor y =
      run_one("QuantizeLinear", {floats({3}, {-1.0f, 2.5f, 1000.0f}), floats({}, {1.0f})}, 13);
  ASSERT_EQ(y.dtype(), DType::kUInt8);
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{0, 2, 255}));
}

TEST(QuantizeLinear, Int32Input) {
  const Tensor y =
      run_one("QuantizeLinear", {i32({3}, {5, -5, 7}), floats({}, {2.0f}), i8({}, {0})}, 13);
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{2, -2, 4}));
}

TEST(QuantizeLinear, PerAxisNegativeAxis) {
  // Axis -1 of [2, 3]: scales [1, 2, 4], zero points [0, 1, -1].
  const Tensor x = floats({2, 3}, {2, 2, 2, -6, 5, 6});
  const Tensor y = run_one("QuantizeLinear", {x, floats({3}, {1, 2, 4}), i8({3}, {0, 1, -1})}, 13,
                           [](Node* n) { set_int(n, "axis", -1); });
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{2, 2, -1, -6, 3, 1}));
  // Axis -2 of [2, 3]: one scale per row.
  const Tensor y2 = run_one("QuantizeLinear", {x, floats({2}, {2, 0.5f}), u8({2}, {100, 0})}, 13,
                            [](Node* n) { set_int(n, "axis", -2); });
  EXPECT_EQ(values_of<uint8_t>(y2), (std::vector<uint8_t>{101, 101, 101, 0, 10, 12}));
}

TEST(QuantizeLinear, BadScaleShapes) {
  const Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_NE(error_of([&] {
              run_one("QuantizeLinear", {x, floats({2}, {1, 1}), u8({2}, {0, 0})}, 13);
            }).find("y_scale has 2 values but x has 3 along axis 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              run_one("QuantizeLinear", {x, floats({3}, {1, 1, 1}), u8({3}, {0, 0, 0})}, 10);
            }).find("must be a scalar in opset 10"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              run_one("QuantizeLinear", {x, floats({3}, {1, 1, 1}), u8({3}, {0, 0, 0})}, 13,
                      [](Node* n) { set_int(n, "axis", -3); });
            }).find("axis -3 is out of range for x of rank 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              run_one("QuantizeLinear", {x, floats({3}, {1, 1, 1}), u8({2}, {0, 0})}, 13);
            }).find("y_zero_point has shape [2] but y_scale has shape [3]"),
            std::string::npos);
}

TEST(QuantizeLinear, EmptyInput) {
  const Tensor y =
      run_one("QuantizeLinear", {floats({0, 3}, {}), floats({}, {1.0f}), i8({}, {0})}, 13);
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  EXPECT_EQ(y.dtype(), DType::kInt8);
}

// ---- DequantizeLinear ----------------------------------------------------------------

TEST(DequantizeLinear, PerTensorInt8AndUint8) {
  const Tensor y = run_one("DequantizeLinear",
                           {i8({4}, {-128, -1, 0, 127}), floats({}, {0.5f}), i8({}, {-1})}, 10);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{-63.5f, 0.0f, 0.5f, 64.0f}));
  const Tensor y2 = run_one("DequantizeLinear", {u8({3}, {0, 3, 255}), floats({}, {2.0f})}, 13);
  EXPECT_EQ(values_of<float>(y2), (std::vector<float>{0.0f, 6.0f, 510.0f}));
}

TEST(DequantizeLinear, PerAxisNegativeAxis) {
  // Axis -2 of [2, 2, 2]: scales [1, 10], zero points [5, 0].
  const Tensor x = u8({2, 2, 2}, {5, 6, 1, 2, 0, 255, 3, 4});
  const Tensor y = run_one("DequantizeLinear", {x, floats({2}, {1, 10}), u8({2}, {5, 0})}, 13,
                           [](Node* n) { set_int(n, "axis", -2); });
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 1, 10, 20, -5, 250, 30, 40}));
}

TEST(DequantizeLinear, Int32WithoutZeroPoint) {
  const Tensor y = run_one("DequantizeLinear", {i32({3}, {-5, 100000, 0}), floats({}, {0.5f})}, 13);
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{-2.5f, 50000.0f, 0.0f}));
  EXPECT_NE(error_of([&] {
              run_one("DequantizeLinear", {i32({1}, {1}), floats({}, {1.0f}), i32({}, {3})}, 13);
            }).find("zero point must be 0"),
            std::string::npos);
}

TEST(DequantizeLinear, ZeroPointTypeMustMatch) {
  EXPECT_NE(error_of([&] {
              run_one("DequantizeLinear", {u8({1}, {1}), floats({}, {1.0f}), i8({}, {0})}, 13);
            }).find("x_zero_point has type int8 but x has type uint8"),
            std::string::npos);
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------

std::vector<Tensor> dynamic_quantize(Tensor x) {
  return run_op("DynamicQuantizeLinear", {std::move(x)}, 11, {}, 3);
}

TEST(DynamicQuantizeLinear, ScaleOneTies) {
  // Range [-100, 155] -> scale 1, zero point 100; halves round to even.
  auto out = dynamic_quantize(floats({5}, {-100, 155, 0.5f, 1.5f, -0.5f}));
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0, 255, 100, 102, 100}));
  EXPECT_EQ(out[1].data<float>()[0], 1.0f);
  EXPECT_EQ(out[2].data<uint8_t>()[0], 100);
}

TEST(DynamicQuantizeLinear, ZeroPointTieRoundsToEven) {
  // Range [-2.5, 252.5] -> scale 1, zero point round(2.5) = 2.
  auto out = dynamic_quantize(floats({2}, {-2.5f, 252.5f}));
  EXPECT_EQ(out[2].data<uint8_t>()[0], 2);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0, 254}));
}

TEST(DynamicQuantizeLinear, RangeIncludesZero) {
  // All positive: min becomes 0, so the zero point is 0 and scale = 510 / 255.
  auto out = dynamic_quantize(floats({3}, {10, 255, 510}));
  EXPECT_EQ(out[1].data<float>()[0], 2.0f);
  EXPECT_EQ(out[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{5, 128, 255}));
  // All negative: max becomes 0, so the zero point saturates at 255.
  auto neg = dynamic_quantize(floats({2}, {-510, -3}));
  EXPECT_EQ(neg[1].data<float>()[0], 2.0f);
  EXPECT_EQ(neg[2].data<uint8_t>()[0], 255);
  EXPECT_EQ(values_of<uint8_t>(neg[0]), (std::vector<uint8_t>{0, 253}));
}

TEST(DynamicQuantizeLinear, AllZeros) {
  auto out = dynamic_quantize(floats({2}, {0, 0}));
  EXPECT_EQ(out[1].data<float>()[0], 0.0f);
  EXPECT_EQ(out[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(values_of<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0}));
}

// ---- QLinearConv / ConvInteger -------------------------------------------------------

// x [1, 2, 3, 3] uint8 with zero point 2; w [2, 1, 2, 2] int8, per-channel zero points
// [1, -2]; two groups. Expected values from a direct numpy convolution.
const Tensor kConvX = u8({1, 2, 3, 3}, {3, 7, 1, 0, 9, 4, 2, 8, 5, 10, 1, 6, 2, 2, 9, 0, 4, 7});
const Tensor kConvW = i8({2, 1, 2, 2}, {2, -1, 0, 3, -4, 0, 5, 1});

TEST(QLinearConv, GroupedPerChannelZeroPointsAndTies) {
  // acc + bias = [10, 7, -1, 6 | -25, 24, -15, 36]; multipliers 1 * [0.5, 0.25] / 0.5 =
  // [1, 0.5]: channel 1 has ties -12.5 -> -12 and -7.5 -> -8; y zero point 10.
  const Tensor y =
      run_one("QLinearConv",
              {kConvX, floats({}, {1.0f}), u8({}, {2}), kConvW, floats({2}, {0.5f, 0.25f}),
               i8({2}, {1, -2}), floats({}, {0.5f}), i8({}, {10}), i32({2}, {3, -7})},
              10, [](Node* n) { set_int(n, "group", 2); });
  ASSERT_EQ(y.dtype(), DType::kInt8);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{20, 17, 9, 16, -2, 22, 2, 28}));
}

TEST(QLinearConv, SaturatesUint8AndInt8) {
  // Per-tensor 1x1 conv: y = x * 3 with x_scale 1, w_scale 1, y_scale 1.
  const Tensor x = u8({1, 1, 1, 4}, {0, 40, 90, 200});
  const Tensor w = u8({1, 1, 1, 1}, {3});
  const Tensor y = run_one("QLinearConv",
                           {x, floats({}, {1.0f}), u8({}, {0}), w, floats({}, {1.0f}), u8({}, {0}),
                            floats({}, {1.0f}), u8({}, {10})},
                           10);
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{10, 130, 255, 255}));
  // int8 out with zero point -100 and x zero point 100: (x - 100) * 3 - 100.
  const Tensor y2 = run_one("QLinearConv",
                            {x, floats({}, {1.0f}), u8({}, {100}), w, floats({}, {1.0f}),
                             u8({}, {0}), floats({}, {1.0f}), i8({}, {-100})},
                            10);
  EXPECT_EQ(values_of<int8_t>(y2), (std::vector<int8_t>{-128, -128, -128, 127}));
}

TEST(QLinearConv, BadWeightScaleShape) {
  EXPECT_NE(error_of([&] {
              run_one("QLinearConv",
                      {kConvX, floats({}, {1.0f}), u8({}, {2}), kConvW, floats({3}, {1, 1, 1}),
                       i8({2}, {1, -2}), floats({}, {0.5f}), i8({}, {10})},
                      10, [](Node* n) { set_int(n, "group", 2); });
            }).find("w_scale must be a scalar or 1-D with 2 values"),
            std::string::npos);
}

Tensor conv_integer(const SetAttributes& attrs) {
  return run_one("ConvInteger", {kConvX, kConvW, u8({}, {2}), i8({2}, {1, -2})}, 10, [&](Node* n) {
    set_int(n, "group", 2);
    attrs(n);
  });
}

TEST(ConvInteger, GroupedPadsStrides) {
  const Tensor y = conv_integer([](Node* n) {
    set_ints(n, "pads", {1, 1, 1, 1});
    set_ints(n, "strides", {2, 2});
  });
  ASSERT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{2, -7, 4, 3, 24, 5, -6, 43}));
}

TEST(ConvInteger, AutoPadSameUpperAndLower) {
  const Tensor upper = conv_integer([](Node* n) { set_string(n, "auto_pad", "SAME_UPPER"); });
  EXPECT_EQ(upper.shape(), (Shape{1, 2, 3, 3}));
  EXPECT_EQ(values_of<int32_t>(upper), (std::vector<int32_t>{7, 4, -3, -4, 3, -1, -12, 0, 3, -18,
                                                             31, 41, -8, 43, 21, 8, 6, -10}));
  const Tensor lower = conv_integer([](Node* n) { set_string(n, "auto_pad", "SAME_LOWER"); });
  EXPECT_EQ(values_of<int32_t>(lower), (std::vector<int32_t>{2, 9, -7, -6, 7, 4, 4, -4, 3, 24, 53,
                                                             5, 16, -18, 31, -6, -8, 43}));
}

TEST(ConvInteger, Dilations) {
  const Tensor y = conv_integer([](Node* n) {
    set_ints(n, "pads", {1, 1, 1, 1});
    set_ints(n, "dilations", {2, 2});
  });
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3, 3}));
  EXPECT_EQ(values_of<int32_t>(y),
            (std::vector<int32_t>{14, 6, -7, 2, 9, -1, -14, -6, 7, 0, 21, 0, 4, -7, 16, 0, 14, 0}));
}

TEST(ConvInteger, NoZeroPoints) {
  const Tensor y = run_one("ConvInteger",
                           {u8({1, 1, 2, 2}, {1, 2, 3, 200}), i8({1, 1, 2, 2}, {1, 1, 1, -1})}, 10);
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{-194}));
}

// ---- MatMulInteger / QLinearMatMul ---------------------------------------------------

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  // (A - [10, 35, 250] per row) x (B - [1, -1] per column).
  const Tensor a = u8({3, 2}, {10, 20, 30, 40, 250, 0});
  const Tensor b = i8({2, 2}, {1, -2, 3, 127});
  const std::vector<int32_t> want{20, 1280, 10, 645, -500, -32000};
  const Tensor y = run_one("MatMulInteger", {a, b, u8({3}, {10, 35, 250}), i8({2}, {1, -1})}, 10);
  ASSERT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<int32_t>(y), want);
  // The same as [M, 1] and [1, N] shaped zero points.
  const Tensor y2 =
      run_one("MatMulInteger", {a, b, u8({3, 1}, {10, 35, 250}), i8({1, 2}, {1, -1})}, 10);
  EXPECT_EQ(values_of<int32_t>(y2), want);
}

TEST(MatMulInteger, BatchedPerRowZeroPointsBroadcastB) {
  // A [2, 1, 2] with zero points [2, 1, 1]: batch 0 subtracts 1, batch 1 subtracts 5.
  const Tensor a = u8({2, 1, 2}, {3, 4, 5, 9});
  const Tensor b = u8({2, 1}, {2, 3});
  const Tensor y = run_one("MatMulInteger", {a, b, u8({2, 1, 1}, {1, 5})}, 10);
  EXPECT_EQ(y.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{2 * 2 + 3 * 3, 0 * 2 + 4 * 3}));
}

TEST(MatMulInteger, VectorOperandsAndNoZeroPoints) {
  const Tensor y = run_one("MatMulInteger", {i8({3}, {-128, 1, 2}), i8({3}, {-128, 5, -1})}, 10);
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_EQ(values_of<int32_t>(y), (std::vector<int32_t>{16384 + 5 - 2}));
}

TEST(MatMulInteger, BadZeroPointShape) {
  EXPECT_NE(error_of([&] {
              run_one("MatMulInteger",
                      {u8({3, 2}, {1, 2, 3, 4, 5, 6}), u8({2, 2}, {1, 2, 3, 4}), u8({2}, {1, 2})},
                      10);
            }).find("a_zero_point has shape [2], which does not broadcast to [3]"),
            std::string::npos);
}

TEST(QLinearMatMul, PerColumnScaleTiesAndSaturation) {
  // acc = (A - 1) x B = [[1, 2], [3, 514]]; multipliers 1 * [0.5, 1] / 1.
  const Tensor a = u8({2, 2}, {2, 1, 4, 5});
  const Tensor b = i8({2, 2}, {1, 2, 0, 127});
  const Tensor y = run_one("QLinearMatMul",
                           {a, floats({}, {1.0f}), u8({}, {1}), b, floats({2}, {0.5f, 1.0f}),
                            i8({2}, {0, 0}), floats({}, {1.0f}), i8({}, {0})},
                           10);
  ASSERT_EQ(y.dtype(), DType::kInt8);
  // 0.5 -> 0, 2, 1.5 -> 2, 514 -> 127.
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{0, 2, 2, 127}));
}

TEST(QLinearMatMul, BatchBroadcast) {
  // A [2, 1, 2] x B [2, 1]: y = 2 * (A x B) + 3 as uint8.
  const Tensor y =
      run_one("QLinearMatMul",
              {u8({2, 1, 2}, {1, 2, 0, 0}), floats({}, {2.0f}), u8({}, {0}), u8({2, 1}, {3, 4}),
               floats({}, {0.25f}), u8({}, {0}), floats({}, {0.25f}), u8({}, {3})},
              10);
  EXPECT_EQ(y.shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{25, 3}));
}

// ---- the newer versions: blocked, 16- and 4-bit, float8, 16-bit float scales ----

Tensor codes(DType dtype, Shape shape, std::vector<uint8_t> values) {
  return Tensor::from_vector<uint8_t>(dtype, std::move(shape), values);
}
Tensor halfs(Shape shape, const std::vector<float>& values) {
  std::vector<Float16> h;
  for (float v : values) h.push_back(Float16(v));
  return Tensor::from_vector<Float16>(DType::kFloat16, std::move(shape), h);
}

TEST(QuantizeLinear, BlockedScalesAlongAnAxis) {
  // x [2, 3], axis 1, blocks of 2: scale [2, 2] (the last block holds one column).
  const Tensor x = floats({2, 3}, {2, 4, 6, -2, -4, -6});
  const Tensor scale = floats({2, 2}, {2, 3, 1, 0.5f});
  const Tensor y = run_one("QuantizeLinear", {x, scale, i8({2, 2}, {0, 1, 0, -1})}, 21,
                           with_int("axis", 1, with_int("block_size", 2)));
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{1, 2, 3, -2, -4, -13}));
  const Tensor back = run_one("DequantizeLinear", {y, scale, i8({2, 2}, {0, 1, 0, -1})}, 21,
                              with_int("axis", 1, with_int("block_size", 2)));
  expect_floats(back, {2, 4, 6, -2, -4, -6});
  expect_error(
      [&] {
        run_one("QuantizeLinear", {x, floats({2, 1}, {1, 1})}, 21,
                with_int("axis", 1, with_int("block_size", 2)));
      },
      "blocked quantization");
}

TEST(QuantizeLinear, Int4AndInt16SaturateToTheirRanges) {
  const Tensor x = floats({4}, {-20, -7.5f, 6.5f, 20});
  const Tensor y =
      run_one("QuantizeLinear", {x, floats({}, {1}), codes(DType::kInt4, {}, {0})}, 21);
  ASSERT_EQ(y.dtype(), DType::kInt4);
  EXPECT_EQ(values_of<int8_t>(y), (std::vector<int8_t>{-8, -8, 6, 7}));
  const Tensor u4 = run_one("QuantizeLinear", {x, floats({}, {1})}, 21,
                            with_int("output_dtype", static_cast<int64_t>(DType::kUInt4)));
  EXPECT_EQ(values_of<uint8_t>(u4), (std::vector<uint8_t>{0, 0, 6, 15}));
  const Tensor i16 =
      run_one("QuantizeLinear",
              {floats({2}, {1e6f, -3.5f}), floats({}, {1}), Tensor(DType::kInt16, {})}, 21);
  EXPECT_EQ(values_of<int16_t>(i16), (std::vector<int16_t>{32767, -4}));
  const Tensor deq =
      run_one("DequantizeLinear", {y, floats({}, {2}), codes(DType::kInt4, {}, {0xff})}, 21);
  expect_floats(deq, {-14, -14, 14, 16});
  expect_error(
      [&] {
        run_one("QuantizeLinear", {x, floats({}, {1}), codes(DType::kInt4, {}, {0})}, 19);
      },
      "y_zero_point has type int4");
  expect_error(
      [&] {
        run_one("QuantizeLinear", {x, floats({}, {1}), u8({}, {0})}, 21,
                with_int("output_dtype", static_cast<int64_t>(DType::kInt8)));
      },
      "output_dtype is int8 but y_zero_point has type uint8");
}

TEST(QuantizeLinear, Float8FollowsSaturate) {
  const Tensor x = floats({3}, {1000, 1, NAN});
  const Tensor zp = codes(DType::kFloat8E4M3FN, {}, {0});
  const Tensor y = run_one("QuantizeLinear", {x, floats({}, {2}), zp}, 19);
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{0x7e, 0x30, 0x7f}));
  const Tensor raw =
      run_one("QuantizeLinear", {x, floats({}, {2}), zp}, 19, with_int("saturate", 0));
  EXPECT_EQ(values_of<uint8_t>(raw), (std::vector<uint8_t>{0x7f, 0x30, 0x7f}));
  const Tensor back = run_one("DequantizeLinear", {y, floats({}, {2}), zp}, 19);
  expect_floats(back, {896, 1, NAN});
}

TEST(QuantizeLinear, Float16DivisionRoundsInFloat16) {
  // float16 x and scale: the quotient is float16; the output type follows the zero point.
  const Tensor y = run_one(
      "QuantizeLinear", {halfs({2}, {1000, 2.5f}), halfs({}, {1}), Tensor(DType::kInt16, {})}, 21);
  EXPECT_EQ(values_of<int16_t>(y), (std::vector<int16_t>{1000, 2}));
  const Tensor d = run_one("DequantizeLinear", {i8({2}, {3, -1}), halfs({}, {0.1f})}, 19);
  ASSERT_EQ(d.dtype(), DType::kFloat16);
  EXPECT_EQ(static_cast<float>(d.data<Float16>()[0]),
            static_cast<float>(Float16(3 * 0.0999755859375f)));
  const Tensor as_float = run_one("DequantizeLinear", {i8({1}, {3}), halfs({}, {0.5f})}, 23,
                                  with_int("output_dtype", static_cast<int64_t>(DType::kFloat)));
  expect_floats(as_float, {1.5f});
}

TEST(QuantizeLinear, PrecisionPicksTheDivisionType) {
  // 2049 / 1 in float16 is 2048.
  const Tensor x = floats({1}, {2049});
  const Tensor plain =
      run_one("QuantizeLinear", {x, floats({}, {1}), Tensor(DType::kInt16, {})}, 23);
  EXPECT_EQ(values_of<int16_t>(plain), (std::vector<int16_t>{2049}));
  const Tensor half = run_one("QuantizeLinear", {x, floats({}, {1}), Tensor(DType::kInt16, {})}, 23,
                              with_int("precision", static_cast<int64_t>(DType::kFloat16)));
  EXPECT_EQ(values_of<int16_t>(half), (std::vector<int16_t>{2048}));
}

TEST(QLinearMatMul, Float16ScalesFromOpset21) {
  const Tensor a = u8({1, 2}, {3, 4});
  const Tensor b = u8({2, 1}, {1, 1});
  const std::vector<Tensor> inputs{a,           halfs({}, {0.5f}), u8({}, {0}), b, halfs({}, {1}),
                                   u8({}, {0}), halfs({}, {1}),    u8({}, {1})};
  const Tensor y = run_one("QLinearMatMul", inputs, 21);
  EXPECT_EQ(values_of<uint8_t>(y), (std::vector<uint8_t>{5}));  // 7 * 0.5 = 3.5 -> 4, + 1
  expect_error([&] { run_one("QLinearMatMul", inputs, 10); }, "a_scale has type float16");
}

TEST(QLinearMatMul, Float8OperandsFromOpset21) {
  const Tensor a = codes(DType::kFloat8E4M3FN, {1, 2}, {0x38, 0x40});  // 1, 2
  const Tensor b = codes(DType::kFloat8E4M3FN, {2, 1}, {0x38, 0x30});  // 1, 0.5
  const Tensor zp = codes(DType::kFloat8E4M3FN, {}, {0});
  auto run = [&](float y_scale, int64_t opset) {
    return run_one("QLinearMatMul",
                   {a, floats({}, {1}), zp, b, floats({}, {2}), zp, floats({}, {y_scale}), zp},
                   opset);
  };
  // (1 * 1 + 2 * 0.5) * 1 * 2 / y_scale.
  EXPECT_EQ(values_of<uint8_t>(run(1.0f, 21)), (std::vector<uint8_t>{0x48}));    // 4
  EXPECT_EQ(values_of<uint8_t>(run(0.001f, 21)), (std::vector<uint8_t>{0x7e}));  // saturates
  expect_error([&] { run(1.0f, 10); }, "a has type float8e4m3fn");
}

TEST(QuantizationTypes, RulesFollowZeroPointOutputDtypeAndScale) {
  const SymbolicShape x = std::vector<Dim>{Dim::symbol("n"), Dim::known(4)};
  auto q = NodeCase("QuantizeLinear",
                    {floats({1}, {0}), floats({}, {1}), codes(DType::kInt4, {}, {0})}, 21);
  EXPECT_EQ(infer_node_types(q, {x})[0], ValueType::tensor(DType::kInt4, x));
  auto q_dtype = NodeCase("QuantizeLinear", {floats({1}, {0}), floats({}, {1})}, 21,
                          with_int("output_dtype", static_cast<int64_t>(DType::kInt16)));
  EXPECT_EQ(infer_node_types(q_dtype, {x})[0].elem_type, DType::kInt16);
  auto q_default = NodeCase("QuantizeLinear", {floats({1}, {0}), floats({}, {1})}, 13);
  EXPECT_EQ(infer_node_types(q_default, {x})[0].elem_type, DType::kUInt8);
  auto dq = NodeCase("DequantizeLinear", {i8({1}, {0}), halfs({}, {1})}, 21);
  EXPECT_EQ(infer_node_types(dq, {x})[0], ValueType::tensor(DType::kFloat16, x));
  auto dq_dtype = NodeCase("DequantizeLinear", {i8({1}, {0}), halfs({}, {1})}, 23,
                           with_int("output_dtype", static_cast<int64_t>(DType::kFloat)));
  EXPECT_EQ(infer_node_types(dq_dtype, {x})[0].elem_type, DType::kFloat);
  auto dyn = NodeCase("DynamicQuantizeLinear", {floats({1}, {0})}, 11);
  dyn.outputs = {"y", "scale", "zp"};
  const std::vector<ValueType> dyn_types = infer_node_types(dyn, {x});
  EXPECT_EQ(dyn_types[0], ValueType::tensor(DType::kUInt8, x));
  EXPECT_EQ(dyn_types[1], ValueType::tensor(DType::kFloat, std::vector<Dim>{}));
  EXPECT_EQ(dyn_types[2], ValueType::tensor(DType::kUInt8, std::vector<Dim>{}));
  auto mm = NodeCase("QLinearMatMul",
                     {u8({1}, {0}), floats({}, {1}), u8({}, {0}), u8({1}, {0}), floats({}, {1}),
                      u8({}, {0}), floats({}, {1}), i8({}, {0})},
                     21);
  const SymbolicShape a = std::vector<Dim>{Dim::symbol("b"), Dim::known(2), Dim::known(5)};
  const SymbolicShape b = dims({5, 7});
  EXPECT_EQ(infer_node_types(mm, {a, {}, {}, b})[0],
            ValueType::tensor(DType::kInt8,
                              std::vector<Dim>{Dim::symbol("b"), Dim::known(2), Dim::known(7)}));
}

}  // namespace
}  // namespace onnxkit
