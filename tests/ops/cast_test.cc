// Cast and CastLike: number conversions, 16-bit float rounding, string formatting/parsing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/half.h"
#include "op_test_util.h"
#include "ops/op_utils.h"
#include "type_rule_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor cast(const Tensor& input, DType to, int64_t opset = 13) {
  return run_one("Cast", {input}, opset,
                 [to](Node* n) { set_int(n, "to", static_cast<int64_t>(to)); });
}

Tensor floats(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>(DType::kFloat, {n}, v);
}
Tensor doubles(std::vector<double> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<double>(DType::kDouble, {n}, v);
}
Tensor strings(std::vector<std::string> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_strings({n}, std::move(v));
}

std::vector<uint16_t> half_bits(const Tensor& t) {
  std::vector<uint16_t> bits;
  for (int64_t i = 0; i < t.numel(); ++i) {
    bits.push_back(t.dtype() == DType::kFloat16 ? t.data<Float16>()[i].bits
                                                : t.data<BFloat16>()[i].bits);
  }
  return bits;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(Cast, FloatToIntegerTruncates) {
  Tensor out = cast(floats({1.9f, -1.9f, 0.5f, -0.5f, 2147483520.0f}), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{1, -1, 0, 0, 2147483520}));
  // Out of range for uint8: truncated to int64 first, then wrapped (numpy gives 44 too).
  EXPECT_EQ(values_of<uint8_t>(cast(floats({300.0f, -1.0f}), DType::kUInt8)),
            (std::vector<uint8_t>{44, 255}));
  EXPECT_EQ(values_of<uint64_t>(cast(doubles({1.8e19}), DType::kUInt64)),
            (std::vector<uint64_t>{18000000000000000000u}));
}

// Kernels that compute in float and store integers (PRelu, Resize, EyeLike, the ML ops...)
// convert with convert_element: NaN, infinities and out-of-range values must come out as
// Cast gives them, not as an undefined C++ cast does.
TEST(Cast, ConvertElementMatchesCast) {
  const std::vector<float> awkward = {kNaN, kInf, -kInf, 3e9f, -3e9f, 300.0f, -1.5f, 1e20f};
  const Tensor in = floats(awkward);
  auto check = [&](auto tag, DType to) {
    using T = decltype(tag);
    const std::vector<T> expected = values_of<T>(cast(in, to));
    for (size_t i = 0; i < awkward.size(); ++i) {
      EXPECT_EQ(convert_element<T>(awkward[i]), expected[i]) << "element " << i;
      EXPECT_EQ(convert_element<T>(static_cast<double>(awkward[i])), expected[i]) << i;
      EXPECT_EQ(convert_element<T>(Float16(awkward[i])),
                convert_element<T>(static_cast<float>(Float16(awkward[i]))))
          << i;
    }
  };
  check(int32_t{}, DType::kInt32);
  check(uint8_t{}, DType::kUInt8);
  check(int8_t{}, DType::kInt8);
  check(int64_t{}, DType::kInt64);
  check(uint64_t{}, DType::kUInt64);
  check(uint32_t{}, DType::kUInt32);
}

TEST(Cast, IntegersWrapAndWiden) {
  Tensor in = Tensor::from_vector<int64_t>(DType::kInt64, {3}, {-1, 256, 9007199254740993});
  EXPECT_EQ(values_of<uint8_t>(cast(in, DType::kUInt8)), (std::vector<uint8_t>{255, 0, 1}));
  EXPECT_EQ(values_of<double>(cast(in, DType::kDouble)),
            (std::vector<double>{-1.0, 256.0, 9007199254740992.0}));
}

TEST(Cast, BoolConversions) {
  Tensor in = floats({0.0f, -0.0f, 2.5f, kNaN});
  Tensor b = cast(in, DType::kBool);
  EXPECT_EQ(std::vector<bool>(b.data<bool>(), b.data<bool>() + 4),
            (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(values_of<float>(cast(b, DType::kFloat)), (std::vector<float>{0, 0, 1, 1}));
  EXPECT_EQ(values_of<int64_t>(cast(b, DType::kInt64)), (std::vector<int64_t>{0, 0, 1, 1}));
}

TEST(Cast, FloatToFloat16RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between two halves: ties to the even 1.0; 1 + 3*2^-11 goes up.
  Tensor out =
      cast(floats({1.00048828125f, 1.00146484375f, 65520.0f, -kInf, kNaN}), DType::kFloat16);
  std::vector<uint16_t> bits = half_bits(out);
  EXPECT_EQ(bits[0], 0x3C00);
  EXPECT_EQ(bits[1], 0x3C02);
  EXPECT_EQ(bits[2], 0x7C00);  // 65520 ties up to 65536, which overflows to inf
  EXPECT_EQ(bits[3], 0xFC00);
  EXPECT_EQ(bits[4] & 0x7C00, 0x7C00);
  EXPECT_NE(bits[4] & 0x3FF, 0);
}

TEST(Cast, DoubleToFloat16RoundsOnce) {
  // Through float this would round twice (to 1 + 2^-11, then tie to 1.0); numpy gives 0x3C01.
  Tensor out = cast(doubles({1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)}), DType::kFloat16);
  EXPECT_EQ(half_bits(out), (std::vector<uint16_t>{0x3C01}));
  Tensor i = Tensor::from_vector<int64_t>(DType::kInt64, {2}, {65519, 65520});
  EXPECT_EQ(half_bits(cast(i, DType::kFloat16)), (std::vector<uint16_t>{0x7BFF, 0x7C00}));
}

TEST(Cast, FloatToBFloat16RoundsToNearestEven) {
  Tensor out = cast(floats({1.00390625f, 1.01171875f, kInf, kNaN}), DType::kBFloat16);
  std::vector<uint16_t> bits = half_bits(out);
  EXPECT_EQ(bits[0], 0x3F80);  // 1 + 2^-8: tie to even
  EXPECT_EQ(bits[1], 0x3F82);  // 1 + 3*2^-8: up to 1 + 2^-6
  EXPECT_EQ(bits[2], 0x7F80);
  EXPECT_EQ(bits[3] & 0x7F80, 0x7F80);
  EXPECT_NE(bits[3] & 0x7F, 0);
  // Back to float is exact.
  EXPECT_EQ(values_of<float>(cast(out, DType::kFloat))[1], 1.015625f);
}

TEST(Cast, Float16ToBFloat16AndInt) {
  Tensor h =
      Tensor::from_vector<Float16>(DType::kFloat16, {2}, {Float16(-2.75f), Float16(1000.0f)});
  EXPECT_EQ(values_of<int16_t>(cast(h, DType::kInt16)), (std::vector<int16_t>{-2, 1000}));
  EXPECT_EQ(half_bits(cast(h, DType::kBFloat16)),
            (std::vector<uint16_t>{BFloat16(-2.75f).bits, BFloat16(1000.0f).bits}));
}

TEST(Cast, FloatToStringLikeNumpy) {
  Tensor out = cast(floats({0.039187793f, 1.0f, 100.0f, 1e-5f, 1.5e16f, -0.0f, kNaN, -kInf,
                            123456.79f, 1e16f, 9.999999e15f, 3e-5f, 0.0001f}),
                    DType::kString);
  EXPECT_EQ(out.strings(),
            (std::vector<std::string>{"0.039187793", "1.0", "100.0", "1e-05", "1.5e+16", "-0.0",
                                      "nan", "-inf", "123456.79", "1e+16", "9999999000000000.0",
                                      "3e-05", "1e-04"}));
}

TEST(Cast, OtherNumbersToString) {
  EXPECT_EQ(cast(doubles({0.1, 1e100, 1.0 / 3}), DType::kString).strings(),
            (std::vector<std::string>{"0.1", "1e+100", "0.3333333333333333"}));
  Tensor h = Tensor::from_vector<Float16>(
      DType::kFloat16, {4}, {Float16(0.1f), Float16(65504.0f), Float16(-2.5f), Float16(6e-8f)});
  EXPECT_EQ(cast(h, DType::kString).strings(),
            (std::vector<std::string>{"0.1", "65500.0", "-2.5", "6e-08"}));
  Tensor i =
      Tensor::from_vector<int64_t>(DType::kInt64, {2}, {std::numeric_limits<int64_t>::min(), 42});
  EXPECT_EQ(cast(i, DType::kString).strings(),
            (std::vector<std::string>{"-9223372036854775808", "42"}));
  Tensor b(DType::kBool, {2});
  b.mutable_data<bool>()[0] = true;
  EXPECT_EQ(cast(b, DType::kString).strings(), (std::vector<std::string>{"True", "False"}));
}

TEST(Cast, StringToFloat) {
  std::vector<float> v = values_of<float>(
      cast(strings({"1e-5", "+INF", "-inf", "NaN", " 2.5", "1E8", "-0.47892547"}), DType::kFloat));
  EXPECT_EQ(v[0], 1e-5f);
  EXPECT_EQ(v[1], kInf);
  EXPECT_EQ(v[2], -kInf);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], 2.5f);
  EXPECT_EQ(v[5], 1e8f);
  EXPECT_EQ(v[6], -0.47892547f);
}

TEST(Cast, StringToIntegersAndBool) {
  EXPECT_EQ(
      values_of<int64_t>(cast(strings({"9007199254740993", "-5", "100.5", "+7"}), DType::kInt64)),
      (std::vector<int64_t>{9007199254740993, -5, 100, 7}));
  Tensor b = cast(strings({"True", "0", "false", "2.5"}), DType::kBool);
  EXPECT_EQ(std::vector<bool>(b.data<bool>(), b.data<bool>() + 4),
            (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(half_bits(cast(strings({"0.1"}), DType::kFloat16)),
            (std::vector<uint16_t>{Float16(0.1f).bits}));
}

TEST(Cast, StringRoundTrip) {
  Tensor in = floats({0.1f, 3.4028235e38f, 1.17549435e-38f, 1e-45f, -7.0f});
  Tensor back = cast(cast(in, DType::kString), DType::kFloat);
  EXPECT_EQ(values_of<float>(back), values_of<float>(in));
}

TEST(Cast, BadStringFails) {
  std::string error = error_of([] { cast(strings({"1.5", "hello"}), DType::kFloat); });
  EXPECT_NE(error.find("cannot parse \"hello\" as float"), std::string::npos) << error;
  error = error_of([] { cast(strings({"--1"}), DType::kFloat); });
  EXPECT_NE(error.find("cannot parse"), std::string::npos) << error;
}

TEST(Cast, SameTypeAndEmpty) {
  Tensor in = floats({1.5f, 2.5f});
  EXPECT_EQ(values_of<float>(cast(in, DType::kFloat)), (std::vector<float>{1.5f, 2.5f}));
  Tensor empty(DType::kFloat, {0, 2});
  Tensor out = cast(empty, DType::kInt8);
  EXPECT_EQ(out.dtype(), DType::kInt8);
  EXPECT_EQ(out.shape(), (Shape{0, 2}));
}

TEST(Cast, Opset1NamesTheType) {
  Tensor out =
      run_one("Cast", {floats({2.7f, -2.7f})}, 1, [](Node* n) { set_string(n, "to", "INT32"); });
  EXPECT_EQ(values_of<int32_t>(out), (std::vector<int32_t>{2, -2}));
}

TEST(Cast, UnknownTargetFails) {
  std::string error = error_of([] { cast(floats({1.0f}), static_cast<DType>(99)); });
  EXPECT_NE(error.find("'to' is 99"), std::string::npos) << error;
}

TEST(CastLike, TakesTheTypeOfInputOne) {
  Tensor like = Tensor::from_vector<int8_t>(DType::kInt8, {1}, {0});
  Tensor out = run_one("CastLike", {floats({-3.9f, 127.0f}), like}, 15);
  ASSERT_EQ(out.dtype(), DType::kInt8);
  EXPECT_EQ(values_of<int8_t>(out), (std::vector<int8_t>{-3, 127}));
  Tensor s = run_one("CastLike", {doubles({0.25}), strings({""})}, 15);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"0.25"}));
}

// ---- the low-precision types ----

Tensor bytes_of(DType dtype, std::vector<uint8_t> codes) {
  const auto n = static_cast<int64_t>(codes.size());
  return Tensor::from_vector<uint8_t>(dtype, {n}, codes);
}

Tensor cast_at(const Tensor& input, DType to, int64_t opset, SetAttributes more = {}) {
  return run_one("Cast", {input}, opset, with_int("to", static_cast<int64_t>(to), more));
}

TEST(Cast, FloatToFloat8SaturatesByDefaultFrom19) {
  const Tensor in = floats({1.0f, 1e6f, -INFINITY, NAN, 0.4f});
  const Tensor out = cast_at(in, DType::kFloat8E4M3FN, 19);
  ASSERT_EQ(out.dtype(), DType::kFloat8E4M3FN);
  EXPECT_EQ(values_of<uint8_t>(out), (std::vector<uint8_t>{0x38, 0x7e, 0xfe, 0x7f, 0x2d}));
  const Tensor raw = cast_at(in, DType::kFloat8E4M3FN, 19, with_int("saturate", 0));
  EXPECT_EQ(values_of<uint8_t>(raw), (std::vector<uint8_t>{0x38, 0x7f, 0xff, 0x7f, 0x2d}));
  const Tensor e5m2 = cast_at(in, DType::kFloat8E5M2, 21, with_int("saturate", 0));
  EXPECT_EQ(values_of<uint8_t>(e5m2), (std::vector<uint8_t>{0x3c, 0x7c, 0xfc, 0x7e, 0x36}));
}

TEST(Cast, Float8ToFloatAndFloat16AreExact) {
  const Tensor in = bytes_of(DType::kFloat8E5M2FNUZ, {0x40, 0x80, 0x7f, 0x01});
  expect_floats(cast_at(in, DType::kFloat, 19), {1.0f, NAN, 57344.0f, std::ldexp(1.0f, -17)});
  const Tensor half = cast_at(in, DType::kFloat16, 19);
  EXPECT_EQ(half_bits(half)[0], 0x3c00);
  EXPECT_EQ(half_bits(half)[2], 0x7b00);  // 57344
}

TEST(Cast, Int4FromFloatsTruncatesAndFromIntegersWraps) {
  const Tensor out = cast_at(floats({-9, -8.6f, 7.6f, 8, NAN}), DType::kInt4, 21);
  ASSERT_EQ(out.dtype(), DType::kInt4);
  EXPECT_EQ(values_of<int8_t>(out), (std::vector<int8_t>{0, -8, 7, 0, 0}));
  const Tensor ints = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {17, -9, 300});
  EXPECT_EQ(values_of<int8_t>(cast_at(ints, DType::kInt4, 21)), (std::vector<int8_t>{1, 7, -4}));
  EXPECT_EQ(values_of<uint8_t>(cast_at(ints, DType::kUInt4, 21)), (std::vector<uint8_t>{1, 7, 12}));
  const Tensor back = cast_at(bytes_of(DType::kInt4, {0xf8, 0x07}), DType::kFloat, 21);
  expect_floats(back, {-8.0f, 7.0f});
  const Tensor to_int2 = cast_at(floats({-3, -2, 1, 2}), DType::kInt2, 25);
  EXPECT_EQ(values_of<int8_t>(to_int2), (std::vector<int8_t>{0, -2, 1, 0}));
}

TEST(Cast, Float4AndE8M0) {
  const Tensor f4 = cast_at(floats({0.25f, 5.0f, 1e6f, -0.0f}), DType::kFloat4E2M1, 23);
  EXPECT_EQ(values_of<uint8_t>(f4), (std::vector<uint8_t>{0x0, 0x6, 0x7, 0x8}));
  const Tensor e8 = cast_at(floats({1.5f, 1.0f}), DType::kFloat8E8M0, 24);
  EXPECT_EQ(values_of<uint8_t>(e8), (std::vector<uint8_t>{128, 127}));
  const Tensor down =
      cast_at(floats({1.5f, 1.0f}), DType::kFloat8E8M0, 24, with_string("round_mode", "down"));
  EXPECT_EQ(values_of<uint8_t>(down), (std::vector<uint8_t>{127, 127}));
  expect_floats(cast_at(bytes_of(DType::kFloat8E8M0, {130, 0xff}), DType::kFloat, 24), {8.0f, NAN});
  expect_error([] { cast_at(floats({1}), DType::kFloat8E8M0, 24, with_string("round_mode", "x")); },
               "round_mode");
}

TEST(Cast, Float8ToStringAndBack) {
  const Tensor s = cast_at(bytes_of(DType::kFloat8E4M3FN, {0x38, 0x30}), DType::kString, 19);
  EXPECT_EQ(s.strings(), (std::vector<std::string>{"1.0", "0.5"}));
  const Tensor back = cast_at(strings({"448", "-inf"}), DType::kFloat8E4M3FN, 19);
  EXPECT_EQ(values_of<uint8_t>(back), (std::vector<uint8_t>{0x7e, 0xfe}));
}

TEST(CastLike, SaturateFollowsTheAttribute) {
  const Tensor like = bytes_of(DType::kFloat8E4M3FNUZ, {0});
  const Tensor out = run_one("CastLike", {floats({1e6f, 1.0f}), like}, 19, with_int("saturate", 0));
  ASSERT_EQ(out.dtype(), DType::kFloat8E4M3FNUZ);
  EXPECT_EQ(values_of<uint8_t>(out), (std::vector<uint8_t>{0x80, 0x40}));
}

TEST(BitCast, ReinterpretsBytesOfTheSameWidth) {
  const Tensor out = run_one("BitCast", {floats({1.0f, -2.0f})}, 26,
                             with_int("to", static_cast<int64_t>(DType::kInt32)));
  ASSERT_EQ(out.dtype(), DType::kInt32);
  EXPECT_EQ(values_of<int32_t>(out),
            (std::vector<int32_t>{0x3f800000, static_cast<int32_t>(0xc0000000)}));
  const Tensor u4 = run_one("BitCast", {bytes_of(DType::kInt4, {0xff, 0x07})}, 26,
                            with_int("to", static_cast<int64_t>(DType::kUInt4)));
  EXPECT_EQ(values_of<uint8_t>(u4), (std::vector<uint8_t>{15, 7}));
  expect_error(
      [] {
        run_one("BitCast", {floats({1.0f})}, 26,
                with_int("to", static_cast<int64_t>(DType::kInt64)));
      },
      "the widths differ");
}

TEST(CastTypes, RulesGiveTheTargetTypeAndTheInputShape) {
  const SymbolicShape shape = std::vector<Dim>{Dim::symbol("n"), Dim::known(3)};
  auto cast_case =
      NodeCase("Cast", {floats({1})}, 21, with_int("to", static_cast<int64_t>(DType::kFloat8E5M2)));
  EXPECT_EQ(infer_node_types(cast_case, {shape})[0], ValueType::tensor(DType::kFloat8E5M2, shape));
  auto named = NodeCase("Cast", {floats({1})}, 1, with_string("to", "INT4"));
  EXPECT_EQ(infer_node_types(named, {shape})[0].elem_type, DType::kInt4);
  auto like = NodeCase("CastLike", {floats({1}), bytes_of(DType::kUInt2, {0})}, 25);
  EXPECT_EQ(infer_node_types(like, {shape})[0], ValueType::tensor(DType::kUInt2, shape));
  auto bitcast =
      NodeCase("BitCast", {floats({1})}, 26, with_int("to", static_cast<int64_t>(DType::kInt32)));
  EXPECT_EQ(infer_node_types(bitcast, {shape})[0], ValueType::tensor(DType::kInt32, shape));
}

}  // namespace
}  // namespace onnxkit
