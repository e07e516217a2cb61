// com.microsoft QLinearAdd / QLinearMul: the SIMD kernels (kernels/fast_qlinear.cc) against
// the reference kernels (ops/quantization_microsoft.cc), bit for bit, at every SIMD level,
// over the broadcasts the kernels tell apart, lengths around the vector widths, both int8
// types and parameters far apart; and the errors bad parameters give. ORT's own outputs
// for these ops are compared in the int8_models tests (tests/data/models_int8/qop_*).
#include <array>
#include <random>

#include "fast_kernel_test_util.h"

namespace onnxkit::testing {
namespace {

Tensor random_int8(DType dtype, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  Tensor t(dtype, shape);
  auto* p = static_cast<uint8_t*>(t.mutable_raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>(byte(rng));
  return t;
}

Tensor zero_point(DType dtype, int value) {
  Tensor t(dtype, {});
  if (dtype == DType::kUInt8) {
    t.mutable_data<uint8_t>()[0] = static_cast<uint8_t>(value);
  } else {
    t.mutable_data<int8_t>()[0] = static_cast<int8_t>(value);
  }
  return t;
}

NodeCase binary_case(const std::string& op, DType dtype, const Shape& a, const Shape& b, float sa,
                     float sb, float sc, int za, int zb, int zc, uint32_t seed) {
  NodeCase c(op,
             {random_int8(dtype, a, seed), float_scalar(sa), zero_point(dtype, za),
              random_int8(dtype, b, seed + 1), float_scalar(sb), zero_point(dtype, zb),
              float_scalar(sc), zero_point(dtype, zc)},
             17);
  c.domain = "com.microsoft";
  c.constants = {1, 2, 4, 5, 6, 7};
  return c;
}

TEST(FastQLinear, AddAndMulMatchReferenceBitForBit) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{1000}, {1000}},
                                                       {{2, 3, 5, 7}, {2, 3, 5, 7}},
                                                       {{1, 16, 9, 9}, {1, 16, 1, 1}},
                                                       {{1, 16, 1, 1}, {1, 16, 9, 9}},
                                                       {{1}, {3, 37}},
                                                       {{3, 37}, {}},
                                                       {{2, 6, 33}, {33}},
                                                       {{4, 1}, {1, 19}},
                                                       {{65}, {65}},
                                                       {{2, 1, 17}, {2, 5, 1}},
                                                       {{1, 64, 56, 56}, {1, 64, 56, 56}}};
  const float params[][3] = {{0.02f, 0.03f, 0.05f}, {0.5f, 0.001f, 0.04f}, {1e-6f, 3.0f, 1e4f}};
  uint32_t seed = 1;
  for (const char* op : {"QLinearAdd", "QLinearMul"}) {
    for (DType dtype : {DType::kUInt8, DType::kInt8}) {
      const int lo = dtype == DType::kUInt8 ? 0 : -128;
      for (const auto& [a, b] : shapes) {
        for (const auto& p : params) {
          for (const int zp : {lo, lo + 255, lo + 100}) {
            const NodeCase c = binary_case(op, dtype, a, b, p[0], p[1], p[2], zp,
                                           lo + 255 - (zp - lo), zp, seed++);
            expect_fast_matches_reference(c, 0, 0,
                                          std::string(op) + " " + shape_to_string(a) + " x " +
                                              shape_to_string(b) + " " +
                                              std::string(dtype_name(dtype)));
          }
        }
      }
    }
  }
}

// A near-tie that ONNX Runtime's own output settles: the scales and zero points of a
// ResNet-50 residual Add as ORT's tool quantized it (QOperator, uint8), where
// 183 (+) 129 is 82.49999... or 82.50001 depending on how the zero-point constant is
// rounded. ORT 1.31.1 gives 82 (its constant comes from one fused multiply-add).
TEST(FastQLinear, AddRoundsANearTieAsOnnxRuntime) {
  Tensor a(DType::kUInt8, {64}), b(DType::kUInt8, {64});
  std::fill_n(static_cast<uint8_t*>(a.mutable_raw_data()), 64, uint8_t{183});
  std::fill_n(static_cast<uint8_t*>(b.mutable_raw_data()), 64, uint8_t{129});
  NodeCase c(
      "QLinearAdd",
      {a, float_scalar(0.04779181f), zero_point(DType::kUInt8, 131), b, float_scalar(0.046986196f),
       zero_point(DType::kUInt8, 129), float_scalar(0.030123325f), zero_point(DType::kUInt8, 0)},
      17);
  c.domain = "com.microsoft";
  c.constants = {1, 2, 4, 5, 6, 7};
  for (const SessionOptions& options : {SessionOptions::reference(), fast_options()}) {
    const std::vector<Tensor> out = run_node(c, options);
    ASSERT_EQ(out.size(), 1u);
    const auto* values = static_cast<const uint8_t*>(out[0].raw_data());
    for (int64_t i = 0; i < 64; ++i) ASSERT_EQ(values[i], 82) << "element " << i;
  }
}

TEST(FastQLinear, QGemmMatchesReferenceBitForBit) {
  uint32_t seed = 100;
  for (DType a_type : {DType::kUInt8, DType::kInt8}) {
    for (DType b_type : {DType::kUInt8, DType::kInt8}) {
      if (a_type == DType::kInt8 && b_type == DType::kUInt8) continue;  // as ORT's kernels
      for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
               {1, 2048, 1000}, {5, 33, 7}, {3, 64, 65}, {2, 1, 3}}) {
        // Variants 4-7: B - b_zp fits in s8 (zero point 0 for s8, 128 for u8, as ORT's tool
        // writes symmetric weights), which AVX-512 VNNI multiplies as bytes (int8_gemv).
        for (int variant = 0; variant < 8; ++variant) {
          const bool trans_a = variant & 1, trans_b = variant & 2, fits_s8 = variant & 4;
          const bool per_column = (variant + k) % 2 == 0;
          const Shape b_shape = trans_b ? Shape{n, k} : Shape{k, n};
          Tensor b_scale = per_column ? random_floats({n}, seed) : float_scalar(0.02f);
          for (int64_t j = 0; j < b_scale.numel(); ++j) {
            b_scale.mutable_data<float>()[j] = 0.01f + std::abs(b_scale.data<float>()[j]) * 0.01f;
          }
          Tensor b_zp(b_type, per_column ? Shape{n} : Shape{});
          for (int64_t j = 0; j < b_zp.numel(); ++j) {
            static_cast<uint8_t*>(b_zp.mutable_raw_data())[j] =
                fits_s8 ? (b_type == DType::kUInt8 ? 128 : 0) : static_cast<uint8_t>(j * 37 + 5);
          }
          Tensor bias(DType::kInt32, {n});
          for (int64_t j = 0; j < n; ++j)
            bias.mutable_data<int32_t>()[j] = static_cast<int32_t>(j * 97 % 5000) - 2500;
          const bool float_out = variant % 4 == 3;
          std::vector<Tensor> inputs{
              random_int8(a_type, trans_a ? Shape{k, m} : Shape{m, k}, seed + 1),
              float_scalar(0.03f),
              zero_point(a_type, 7),
              random_int8(b_type, b_shape, seed + 2),
              b_scale,
              b_zp,
              bias};
          if (!float_out) {
            inputs.push_back(float_scalar(0.7f));
            inputs.push_back(zero_point(a_type, -3));
          }
          NodeCase c("QGemm", inputs, 17, [=](Node* node) {
            set_int(node, "transA", trans_a);
            set_int(node, "transB", trans_b);
            set_float(node, "alpha", 0.75f);
          });
          c.domain = "com.microsoft";
          c.constants = {1, 2, 3, 4, 5, 6, 7, 8};
          seed += 3;
          expect_fast_matches_reference(c, 0, 0,
                                        "QGemm " + std::to_string(m) + "x" + std::to_string(k) +
                                            "x" + std::to_string(n) + " variant " +
                                            std::to_string(variant));
        }
      }
    }
  }
}

// MaxPool on int8 / uint8 (between QLinearConvs in ORT's QOperator files) runs on oneDNN.
TEST(FastQLinear, Int8MaxPoolMatchesReference) {
  uint32_t seed = 500;
  for (DType dtype : {DType::kUInt8, DType::kInt8}) {
    for (const auto& [shape, pads] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{1, 8, 17, 17}, {1, 1, 1, 1}}, {{2, 3, 9, 12}, {0, 0, 0, 0}}}) {
      NodeCase c("MaxPool", {random_int8(dtype, shape, seed++)}, 12, [=](Node* node) {
        set_ints(node, "kernel_shape", {3, 3});
        set_ints(node, "strides", {2, 2});
        set_ints(node, "pads", pads);
      });
      expect_fast_matches_reference(c, 0, 0, "MaxPool " + shape_to_string(shape));
    }
  }
}

TEST(FastQLinear, BadParametersNameTheNodeAndInput) {
  NodeCase wrong_scale =
      binary_case("QLinearAdd", DType::kUInt8, {4}, {4}, 0.1f, 0.1f, 0.1f, 1, 2, 3, 7);
  wrong_scale.inputs[4] = float_scalar(0.1f, {3});
  for (const SessionOptions& options : {SessionOptions::reference(), fast_options()}) {
    expect_error([&] { run_node(wrong_scale, options); }, "node0");
    expect_error([&] { run_node(wrong_scale, options); },
                 "the scale of B (input 4) must be a scalar (per tensor), got shape [3]");
  }
  NodeCase wrong_zero_point =
      binary_case("QLinearMul", DType::kUInt8, {4}, {4}, 0.1f, 0.1f, 0.1f, 1, 2, 3, 8);
  wrong_zero_point.inputs[7] = zero_point(DType::kInt8, 3);
  expect_error([&] { run_node(wrong_zero_point, fast_options()); },
               "the zero point of C (input 7) has type int8 but the data has type uint8");
  NodeCase missing_scale =
      binary_case("QLinearAdd", DType::kInt8, {4}, {4}, 0.1f, 0.1f, 0.1f, 1, 2, 3, 9);
  missing_scale.inputs[6] = Tensor();
  expect_error([&] { run_node(missing_scale); }, "the scale of C is missing");
}

TEST(QLinearOps, BadInputsNameTheNode) {
  // QLinearConcat without a zero point for its one input: not (tensor, scale, zero point).
  NodeCase concat("QLinearConcat",
                  {float_scalar(0.1f), zero_point(DType::kUInt8, 0),
                   random_int8(DType::kUInt8, {2, 2}, 3), float_scalar(0.1f)},
                  17, with_int("axis", 0));
  concat.domain = "com.microsoft";
  expect_error([&] { run_node(concat); }, "node0");
  expect_error([&] { run_node(concat); }, "(tensor, scale, zero point) triple per input");
  // QLinearGlobalAveragePool on a matrix.
  NodeCase pool("QLinearGlobalAveragePool",
                {random_int8(DType::kInt8, {2, 8}, 4), float_scalar(0.1f),
                 zero_point(DType::kInt8, 0), float_scalar(0.1f), zero_point(DType::kInt8, 0)},
                17);
  pool.domain = "com.microsoft";
  expect_error([&] { run_node(pool); }, "X has shape [2,8] (needs rank 3 or more)");
  // QGemm with inner dims that differ and a per-column scale of the wrong length.
  NodeCase gemm(
      "QGemm",
      {random_int8(DType::kUInt8, {3, 5}, 5), float_scalar(0.1f), zero_point(DType::kUInt8, 0),
       random_int8(DType::kInt8, {4, 6}, 6), float_scalar(0.1f), zero_point(DType::kInt8, 0)},
      17);
  gemm.domain = "com.microsoft";
  expect_error([&] { run_node(gemm); }, "inner dims 5 and 4 differ");
  gemm.inputs[3] = random_int8(DType::kInt8, {5, 6}, 7);
  gemm.inputs[4] = float_scalar(0.1f, {4});
  gemm.inputs[5] = Tensor();
  expect_error(
      [&] { run_node(gemm); },
      "the scale of B (input 4) has shape [4] (needs a scalar or 6 values, one per column)");
  // Data of another type.
  NodeCase sigmoid("QLinearSigmoid",
                   {random_floats({4}, 1), float_scalar(0.1f), Tensor(), float_scalar(0.1f)}, 17);
  sigmoid.domain = "com.microsoft";
  expect_error([&] { run_node(sigmoid); }, "X has type float (needs uint8 or int8)");
}

}  // namespace
}  // namespace onnxkit::testing
