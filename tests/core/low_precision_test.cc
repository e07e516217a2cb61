// Low-precision conversions (core/low_precision.h) at their boundaries, against values
// ml_dtypes (ONNX's reference) gives, and the sub-byte packing.
#include "core/low_precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace onnxkit {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

uint8_t encode(DType type, double value, bool saturate = true) {
  return double_to_small_float(type, value, saturate);
}

TEST(LowPrecision, Float8E4M3FnRoundsToNearestEvenAndSaturates) {
  const DType t = DType::kFloat8E4M3FN;
  EXPECT_EQ(encode(t, 1.0), 0x38);
  EXPECT_EQ(encode(t, 448.0), 0x7e);         // the largest finite value
  EXPECT_EQ(encode(t, 464.0), 0x7e);         // halfway to 480: even mantissa, 448
  EXPECT_EQ(encode(t, 480.0, false), 0x7f);  // beyond: NaN without saturation
  EXPECT_EQ(encode(t, 480.0, true), 0x7e);
  EXPECT_EQ(encode(t, -1e6, true), 0xfe);
  EXPECT_EQ(encode(t, -1e6, false), 0xff);
  EXPECT_EQ(encode(t, kInf, true), 0x7e);
  EXPECT_EQ(encode(t, kInf, false), 0x7f);
  EXPECT_EQ(encode(t, kNaN), 0x7f);
  EXPECT_EQ(encode(t, -0.0), 0x80);
  EXPECT_EQ(encode(t, std::ldexp(1.0, -9)), 0x01);   // the smallest subnormal
  EXPECT_EQ(encode(t, std::ldexp(1.0, -10)), 0x00);  // half of it: ties to even (0)
  EXPECT_EQ(encode(t, std::ldexp(3.0, -10)), 0x02);  // 1.5 steps: ties to even (2)
  EXPECT_EQ(small_float_to_float(t, 0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(small_float_to_float(t, 0xff)));
  EXPECT_EQ(small_float_to_float(t, 0x01), std::ldexp(1.0f, -9));
}

TEST(LowPrecision, Float8E5M2HasInfinity) {
  const DType t = DType::kFloat8E5M2;
  EXPECT_EQ(encode(t, 57344.0), 0x7b);
  EXPECT_EQ(encode(t, 1e6, false), 0x7c);  // overflow: infinity
  EXPECT_EQ(encode(t, 1e6, true), 0x7b);
  EXPECT_EQ(encode(t, -kInf, false), 0xfc);
  EXPECT_EQ(encode(t, -kInf, true), 0xfb);
  EXPECT_EQ(encode(t, kNaN), 0x7e);
  EXPECT_EQ(encode(t, 464.0), 0x5f);
  EXPECT_TRUE(std::isinf(small_float_to_float(t, 0x7c)));
  EXPECT_TRUE(std::isnan(small_float_to_float(t, 0x7d)));
}

TEST(LowPrecision, FnuzFormatsHaveOneNaNAndNoNegativeZero) {
  for (DType t : {DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2FNUZ}) {
    EXPECT_EQ(encode(t, -0.0), 0x00);
    EXPECT_EQ(encode(t, -1e-7), 0x00);
    EXPECT_EQ(encode(t, kNaN), 0x80);
    EXPECT_EQ(encode(t, kInf, false), 0x80);
    EXPECT_EQ(encode(t, 1e6, false), 0x80);
    EXPECT_TRUE(std::isnan(small_float_to_float(t, 0x80)));
  }
  EXPECT_EQ(encode(DType::kFloat8E4M3FNUZ, kInf, true), 0x7f);
  EXPECT_EQ(small_float_to_float(DType::kFloat8E4M3FNUZ, 0x7f), 240.0f);
  EXPECT_EQ(small_float_to_float(DType::kFloat8E5M2FNUZ, 0x7f), 57344.0f);
}

TEST(LowPrecision, Float4AndFloat6AlwaysSaturate) {
  const DType t = DType::kFloat4E2M1;
  EXPECT_EQ(encode(t, 0.25), 0x0);  // tie between 0 and 0.5: even
  EXPECT_EQ(encode(t, 0.75), 0x2);  // tie between 0.5 and 1: even (1)
  EXPECT_EQ(encode(t, 5.0), 0x6);   // tie between 4 and 6: even (4)
  EXPECT_EQ(encode(t, 1e6, false), 0x7);
  EXPECT_EQ(encode(t, -kInf, false), 0xf);
  EXPECT_EQ(encode(t, kNaN), 0x8);  // no NaN: a zero, as ml_dtypes
  EXPECT_EQ(small_float_to_float(t, 0x7), 6.0f);
  EXPECT_EQ(small_float_to_float(t, 0x1), 0.5f);
  EXPECT_EQ(small_float_to_float(DType::kFloat6E2M3, 0x1f), 7.5f);
  EXPECT_EQ(small_float_to_float(DType::kFloat6E3M2, 0x1f), 28.0f);
  EXPECT_EQ(encode(DType::kFloat6E2M3, 100.0), 0x1f);
}

TEST(LowPrecision, E8M0RoundingModes) {
  EXPECT_EQ(float_to_e8m0(1.0f, true, E8M0Rounding::kUp), 127);
  EXPECT_EQ(float_to_e8m0(1.5f, true, E8M0Rounding::kUp), 128);
  EXPECT_EQ(float_to_e8m0(1.5f, true, E8M0Rounding::kDown), 127);
  EXPECT_EQ(float_to_e8m0(1.5f, true, E8M0Rounding::kNearest), 128);
  EXPECT_EQ(float_to_e8m0(1.25f, true, E8M0Rounding::kNearest), 127);
  EXPECT_EQ(float_to_e8m0(-4.0f, true, E8M0Rounding::kUp), 129);  // the sign is ignored
  EXPECT_EQ(float_to_e8m0(std::numeric_limits<float>::max(), true, E8M0Rounding::kUp), 0xfe);
  EXPECT_EQ(float_to_e8m0(std::numeric_limits<float>::max(), false, E8M0Rounding::kUp), 0xff);
  EXPECT_EQ(float_to_e8m0(std::numeric_limits<float>::infinity(), true, E8M0Rounding::kUp), 0xff);
  EXPECT_EQ(float_to_e8m0(0.0f, true, E8M0Rounding::kUp), 0);
  EXPECT_EQ(small_float_to_float(DType::kFloat8E8M0, 127), 1.0f);
  EXPECT_EQ(small_float_to_float(DType::kFloat8E8M0, 0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(small_float_to_float(DType::kFloat8E8M0, 0xff)));
}

TEST(LowPrecision, SmallIntegers) {
  EXPECT_EQ(wrap_to_small_int(DType::kInt4, 17), 1);
  EXPECT_EQ(small_int_value(DType::kInt4, wrap_to_small_int(DType::kInt4, -9)), 7);
  EXPECT_EQ(small_int_value(DType::kInt4, wrap_to_small_int(DType::kInt4, 8)), -8);
  EXPECT_EQ(wrap_to_small_int(DType::kUInt4, 300), 12);
  EXPECT_EQ(small_int_value(DType::kInt2, wrap_to_small_int(DType::kInt2, 3)), -1);
  // Floats truncate; out of range or NaN gives 0.
  EXPECT_EQ(small_int_value(DType::kInt4, float_to_small_int(DType::kInt4, -8.6)), -8);
  EXPECT_EQ(float_to_small_int(DType::kInt4, 7.6), 7);
  EXPECT_EQ(float_to_small_int(DType::kInt4, 8.0), 0);
  EXPECT_EQ(float_to_small_int(DType::kInt4, -9.0), 0);
  EXPECT_EQ(float_to_small_int(DType::kUInt4, -1.0), 0);
  EXPECT_EQ(float_to_small_int(DType::kUInt2, kNaN), 0);
}

TEST(LowPrecision, PackingIsLowBitsFirstAndRoundTrips) {
  const std::vector<uint8_t> int4{small_int_byte(-8), small_int_byte(-1), 0, 7, 3};
  std::vector<uint8_t> packed(serialized_size(DType::kInt4, 5));
  ASSERT_EQ(packed.size(), 3u);
  pack_elements(DType::kInt4, int4.data(), 5, packed.data());
  EXPECT_EQ(packed, (std::vector<uint8_t>{0xf8, 0x70, 0x03}));
  std::vector<uint8_t> back(5);
  unpack_elements(DType::kInt4, packed.data(), 5, back.data());
  EXPECT_EQ(back, int4);

  const std::vector<uint8_t> uint2{1, 2, 3, 0, 3};
  packed.assign(serialized_size(DType::kUInt2, 5), 0);
  ASSERT_EQ(packed.size(), 2u);
  pack_elements(DType::kUInt2, uint2.data(), 5, packed.data());
  EXPECT_EQ(packed, (std::vector<uint8_t>{0x39, 0x03}));
  back.assign(5, 0);
  unpack_elements(DType::kUInt2, packed.data(), 5, back.data());
  EXPECT_EQ(back, uint2);

  // float6: four codes in three bytes.
  const std::vector<uint8_t> f6{0x3f, 0x01, 0x20, 0x15, 0x2a};
  packed.assign(serialized_size(DType::kFloat6E2M3, 5), 0);
  ASSERT_EQ(packed.size(), 4u);
  pack_elements(DType::kFloat6E2M3, f6.data(), 5, packed.data());
  EXPECT_EQ(packed[0], 0x7f);  // 0x3f | (0x01 & 3) << 6
  back.assign(5, 0);
  unpack_elements(DType::kFloat6E2M3, packed.data(), 5, back.data());
  EXPECT_EQ(back, f6);
}

TEST(LowPrecision, DtypeTable) {
  EXPECT_TRUE(dtype_is_known(28));
  EXPECT_FALSE(dtype_is_known(29));
  EXPECT_EQ(dtype_name(DType::kFloat8E4M3FN), "float8e4m3fn");
  EXPECT_EQ(dtype_size(DType::kInt4), 1u);
  EXPECT_EQ(dtype_bits(DType::kInt4), 4u);
  EXPECT_EQ(dtype_bits(DType::kFloat6E3M2), 6u);
  EXPECT_EQ(dtype_bits(DType::kFloat8E8M0), 8u);
  EXPECT_TRUE(dtype_is_packed(DType::kUInt2));
  EXPECT_FALSE(dtype_is_packed(DType::kFloat8E5M2));
  EXPECT_FALSE(dtype_is_float(DType::kFloat8E5M2));  // no C++ arithmetic type
  EXPECT_TRUE(dtype_is_small_float(DType::kFloat8E5M2));
}

}  // namespace
}  // namespace onnxkit
