// The int8 kernels (kernels/dnnl_int8.cc, kernels/fast_quantize.cc) against the reference
// kernels, bit for bit: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv and
// com.onnxkit MatMulIntegerToFloat / ConvIntegerToFloat over u8 / s8 operands, zero points
// per tensor and per channel, odd shapes, and extreme values (255 x 127 pairs saturate
// VPMADDUBSW without VNNI); each with weights split as below VNNI and not. The same for
// com.onnxkit ChannelsLastQLinearConv, and requantization ties next to a zero point.
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear at every SIMD level, ties and NaN
// included. CTest runs this file again under DNNL_MAX_CPU_ISA=AVX2 (kernels_int8_avx2).
#include "kernels/dnnl_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "../graph_test_util.h"
#include "kernels/int8_depthwise.h"
#include "kernels/vector_math.h"
#include "ops/channels_last_ops.h"

namespace onnxkit {
namespace {

using testing::GraphBuilder;
using testing::optimized;
using testing::run_model;

// Values of `dtype` (u8 / s8): random, or all at the type's extreme (`extreme`).
Tensor int8_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng, bool extreme = false) {
  Tensor t(dtype, shape);
  auto* data = static_cast<uint8_t*>(t.mutable_raw_data());
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) {
    data[i] = static_cast<uint8_t>(extreme ? (dtype == DType::kUInt8 ? 255 : 127) : byte(rng));
  }
  return t;
}

Tensor floats(const Shape& shape, std::mt19937_64& rng, float lo = -1, float hi = 1) {
  Tensor t(DType::kFloat, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = dist(rng);
  return t;
}

Tensor int8_scalar(DType dtype, int value) {
  Tensor t(dtype, {});
  *static_cast<uint8_t*>(t.mutable_raw_data()) = static_cast<uint8_t>(value);
  return t;
}

// Runs the model built by `build` (twice: the builder is consumed) on the optimized kernels
// and on the reference ones and expects identical bytes in every output.
template <typename Build>
void expect_bit_exact(Build&& build) {
  // Whole weights only where oneDNN has VNNI: below it they saturate (the bug the split
  // avoids), which these tests show under DNNL_MAX_CPU_ISA=AVX2 if forced.
  const bool vnni = !int8_weights_split();
  for (bool split : {false, true}) {
    if (!split && !vnni) continue;
    SCOPED_TRACE(split ? "weights split (as without VNNI)" : "weights whole");
    Int8SplitOverride override_split(split);
    GraphBuilder fast(13), reference(13);
    build(fast);
    build(reference);
    const NamedValues feeds = fast.feeds();
    const NamedValues got = run_model(std::move(fast.model()), feeds, optimized(2));
    const NamedValues want =
        run_model(std::move(reference.model()), reference.feeds(), SessionOptions::reference());
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(got.empty());
    for (size_t i = 0; i < got.size(); ++i) {
      const Tensor& a = got[i].second.tensor();
      const Tensor& b = want[i].second.tensor();
      ASSERT_EQ(a.dtype(), b.dtype());
      ASSERT_EQ(a.shape(), b.shape());
      ASSERT_GT(a.numel(), 0);
      const size_t bytes = static_cast<size_t>(a.numel()) * dtype_size(a.dtype());
      if (std::memcmp(a.raw_data(), b.raw_data(), bytes) != 0) {
        for (int64_t j = 0; j < a.numel(); ++j) {
          if (a.dtype() == DType::kInt32 && a.data<int32_t>()[j] != b.data<int32_t>()[j]) {
            FAIL() << "element " << j << ": " << a.data<int32_t>()[j] << " vs "
                   << b.data<int32_t>()[j];
          }
        }
        FAIL() << "output " << i << " differs";
      }
    }
  }
}

struct MatMulCase {
  Shape a;
  int64_t n;
  DType a_type, b_type;
  int b_zp;  // -1 none, 0 per tensor, 1 per column
  bool a_zp;
  bool extreme = false;
};

std::vector<MatMulCase> matmul_cases() {
  std::vector<MatMulCase> cases;
  const std::vector<Shape> shapes{{1, 7}, {3, 64}, {17, 129}, {2, 5, 96}, {128, 48}};
  const std::vector<int64_t> ns{5, 33, 70, 64, 32};
  int i = 0;
  for (DType a : {DType::kUInt8, DType::kInt8}) {
    for (DType b : {DType::kInt8, DType::kUInt8}) {
      for (size_t s = 0; s < shapes.size(); ++s, ++i) {
        cases.push_back({shapes[s], ns[s], a, b, i % 3 - 1, i % 2 == 0});
      }
      cases.push_back({{9, 300}, 40, a, b, 1, true, /*extreme=*/true});
    }
  }
  return cases;
}

// Builds A x B with the case's zero points; returns the int32 product value.
Value* build_matmul_integer(GraphBuilder& g, const MatMulCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t k = c.a.back();
  Value* a = g.input("a", int8_tensor(c.a_type, c.a, rng, c.extreme));
  Value* b = g.constant(int8_tensor(c.b_type, {k, c.n}, rng, c.extreme));
  Value* a_zp = c.a_zp ? g.input("a_zp", int8_scalar(c.a_type, c.extreme ? 0 : 131)) : nullptr;
  Value* b_zp = nullptr;
  if (c.b_zp == 0) b_zp = g.constant(int8_scalar(c.b_type, 3));
  if (c.b_zp == 1) b_zp = g.constant(int8_tensor(c.b_type, {c.n}, rng));
  return g.op("MatMulInteger", {a, b, a_zp, b_zp});
}

TEST(Int8Kernels, MatMulIntegerMatchesReference) {
  uint64_t seed = 1;
  for (const MatMulCase& c : matmul_cases()) {
    SCOPED_TRACE(shape_to_string(c.a) + " x " + std::to_string(c.n));
    expect_bit_exact([&](GraphBuilder& g) { g.output(build_matmul_integer(g, c, seed)); });
    ++seed;
  }
}

// The zero point and float epilogue loops (kernels/integer_epilogue) at every SIMD level.
TEST(Int8Kernels, MatMulIntegerToFloatMatchesReference) {
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > detected_simd_level()) continue;
    SimdLevelOverride force(level);
    uint64_t seed = 100;
    for (const MatMulCase& c : matmul_cases()) {
      for (bool per_column : {false, true}) {
        SCOPED_TRACE(std::string(simd_level_name(level)) + " " + shape_to_string(c.a) + " x " +
                     std::to_string(c.n));
        expect_bit_exact([&](GraphBuilder& g) {
          std::mt19937_64 rng(seed + 7);
          Value* y = build_matmul_integer(g, c, seed);
          Node* product = y->producer();
          Value* scale =
              g.input("scale", floats(per_column ? Shape{c.n} : Shape{}, rng, 1e-4f, 1e-2f));
          Value* bias = g.constant(floats({c.n}, rng));
          std::vector<Value*> inputs = product->inputs();
          while (inputs.size() < 4) inputs.push_back(nullptr);
          inputs.push_back(scale);
          inputs.push_back(bias);
          g.output(g.op("MatMulIntegerToFloat", inputs, {}, std::string(kOnnxkitDomain)));
        });
        ++seed;
      }
    }
  }
}

TEST(Int8Kernels, QLinearMatMulMatchesReference) {
  uint64_t seed = 200;
  for (const MatMulCase& c : matmul_cases()) {
    for (DType y_type : {DType::kUInt8, DType::kInt8}) {
      SCOPED_TRACE(shape_to_string(c.a) + " x " + std::to_string(c.n));
      expect_bit_exact([&](GraphBuilder& g) {
        std::mt19937_64 rng(seed);
        const int64_t k = c.a.back();
        Value* a = g.input("a", int8_tensor(c.a_type, c.a, rng, c.extreme));
        Value* b = g.constant(int8_tensor(c.b_type, {k, c.n}, rng, c.extreme));
        const Shape param = c.b_zp == 1 ? Shape{c.n} : Shape{};
        Value* b_scale = g.constant(floats(param, rng, 1e-3f, 2e-2f));
        Value* b_zp =
            g.constant(c.b_zp == 1 ? int8_tensor(c.b_type, param, rng) : int8_scalar(c.b_type, 9));
        g.output(g.op("QLinearMatMul",
                      {a, g.scalar(0.05f), g.constant(int8_scalar(c.a_type, 128)), b, b_scale, b_zp,
                       g.scalar(c.extreme ? 30.0f : 0.2f), g.constant(int8_scalar(y_type, 7))}));
      });
      ++seed;
    }
  }
}

struct ConvCase {
  Shape x;
  Shape w;
  std::vector<int64_t> pads, strides, dilations;
  int64_t group = 1;
  DType x_type = DType::kUInt8, w_type = DType::kInt8;
  int w_zp = -1;  // -1 none, 0 per tensor, 1 per channel
  bool extreme = false;
};

std::vector<ConvCase> conv_cases() {
  using D = DType;
  return {
      {{1, 3, 9, 9}, {8, 3, 3, 3}, {1, 1, 1, 1}, {}, {}},
      {{2, 16, 7, 6}, {24, 16, 1, 1}, {}, {}, {}, 1, D::kInt8, D::kInt8, 1},
      {{1, 8, 11, 13}, {16, 4, 3, 3}, {0, 1, 2, 1}, {2, 2}, {}, 2, D::kUInt8, D::kUInt8, 0},
      {{1, 12, 10, 10}, {12, 1, 3, 3}, {1, 1, 1, 1}, {1, 1}, {}, 12, D::kInt8, D::kUInt8, 1},
      {{1, 5, 12, 12}, {7, 5, 3, 3}, {2, 2, 2, 2}, {}, {2, 2}, 1, D::kUInt8, D::kInt8, 1},
      {{2, 6, 40}, {10, 6, 5}, {2, 2}, {3}, {}, 1, D::kInt8, D::kInt8, 0},
      {{1, 64, 5, 5}, {32, 64, 3, 3}, {1, 1, 1, 1}, {}, {}, 1, D::kUInt8, D::kInt8, 1, true},
      {{1, 64, 5, 5}, {32, 64, 3, 3}, {1, 1, 1, 1}, {}, {}, 1, D::kUInt8, D::kUInt8, 0, true},
      // A 28x30 output: channels-last convs this large take oneDNN's direct kernel.
      {{1, 16, 28, 30}, {32, 16, 3, 3}, {1, 1, 1, 1}, {}, {}},
  };
}

Node* build_conv(GraphBuilder& g, const std::string& op, const ConvCase& c,
                 std::vector<Value*> inputs) {
  std::vector<testing::Attr> list;
  if (!c.pads.empty()) list.push_back(testing::Attr::Ints("pads", c.pads));
  if (!c.strides.empty()) list.push_back(testing::Attr::Ints("strides", c.strides));
  if (!c.dilations.empty()) list.push_back(testing::Attr::Ints("dilations", c.dilations));
  if (c.group != 1) list.push_back(testing::Attr::Int("group", c.group));
  const testing::Attributes attrs(list);
  const std::string domain = op == "ConvIntegerToFloat" ? std::string(kOnnxkitDomain) : "";
  return g.node(op, std::move(inputs), attrs, 1, domain);
}

// x, w, x_zp, w_zp of a ConvInteger for the case.
std::vector<Value*> conv_integer_inputs(GraphBuilder& g, const ConvCase& c, std::mt19937_64& rng) {
  Value* x = g.input("x", int8_tensor(c.x_type, c.x, rng, c.extreme));
  Value* w = g.constant(int8_tensor(c.w_type, c.w, rng, c.extreme));
  Value* x_zp = g.input("x_zp", int8_scalar(c.x_type, c.extreme ? 0 : 140));
  Value* w_zp = nullptr;
  if (c.w_zp == 0) w_zp = g.constant(int8_scalar(c.w_type, 5));
  if (c.w_zp == 1) w_zp = g.constant(int8_tensor(c.w_type, {c.w[0]}, rng));
  return {x, w, x_zp, w_zp};
}

TEST(Int8Kernels, ConvIntegerMatchesReference) {
  uint64_t seed = 300;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w));
    expect_bit_exact([&](GraphBuilder& g) {
      std::mt19937_64 rng(seed);
      g.output(build_conv(g, "ConvInteger", c, conv_integer_inputs(g, c, rng))->output(0));
    });
    ++seed;
  }
}

TEST(Int8Kernels, ConvIntegerToFloatMatchesReference) {
  uint64_t seed = 400;
  for (const ConvCase& c : conv_cases()) {
    for (bool per_channel : {false, true}) {
      SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w));
      expect_bit_exact([&](GraphBuilder& g) {
        std::mt19937_64 rng(seed);
        std::vector<Value*> inputs = conv_integer_inputs(g, c, rng);
        inputs.push_back(
            g.input("scale", floats(per_channel ? Shape{c.w[0]} : Shape{}, rng, 1e-4f, 1e-2f)));
        inputs.push_back(g.constant(floats({c.w[0]}, rng)));
        g.output(build_conv(g, "ConvIntegerToFloat", c, inputs)->output(0));
      });
      ++seed;
    }
  }
}

// X's and Y's zero points: a zero point of 0 leaves oneDNN's zero-point attributes and the
// rounding post-op out (another implementation for kernels larger than 1x1).
// A conv case's constant W, its scale and zero point (per channel or per tensor) and an
// int32 bias, drawn from `rng` in that order.
struct ConvWeights {
  Value* w;
  Value* scale;
  Value* zero_point;
  Value* bias;
};
ConvWeights conv_weights(GraphBuilder& g, const ConvCase& c, std::mt19937_64& rng) {
  const int64_t maps = c.w[0];
  Value* w = g.constant(int8_tensor(c.w_type, c.w, rng, c.extreme));
  const Shape param = c.w_zp == 1 ? Shape{maps} : Shape{};
  Value* scale = g.constant(floats(param, rng, 1e-3f, 2e-2f));
  Value* zero_point = g.constant(c.w_zp == 1 ? int8_tensor(c.w_type, param, rng)
                                             : int8_scalar(c.w_type, c.w_zp == 0 ? 4 : 0));
  Tensor bias(DType::kInt32, {maps});
  std::uniform_int_distribution<int32_t> dist(-5000, 5000);
  for (int64_t m = 0; m < maps; ++m) bias.mutable_data<int32_t>()[m] = dist(rng);
  return {w, scale, zero_point, g.constant(bias)};
}

constexpr std::pair<int, int> kConvZeroPoints[] = {{120, 250}, {0, 0}, {0, 250}, {120, 0}};

TEST(Int8Kernels, QLinearConvMatchesReference) {
  uint64_t seed = 500;
  for (const ConvCase& c : conv_cases()) {
    for (auto [x_zp, y_zp] : kConvZeroPoints) {
      for (DType y_type : {DType::kUInt8, DType::kInt8}) {
        SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w) + " zero points " +
                     std::to_string(x_zp) + ", " + std::to_string(y_zp));
        expect_bit_exact([&](GraphBuilder& g) {
          std::mt19937_64 rng(seed);
          Value* x = g.input("x", int8_tensor(c.x_type, c.x, rng, c.extreme));
          const ConvWeights weights = conv_weights(g, c, rng);
          g.output(
              build_conv(g, "QLinearConv", c,
                         {x, g.scalar(0.03f), g.constant(int8_scalar(c.x_type, x_zp)), weights.w,
                          weights.scale, weights.zero_point, g.scalar(c.extreme ? 40.0f : 0.1f),
                          g.constant(int8_scalar(y_type, y_zp)), weights.bias})
                  ->output(0));
        });
        ++seed;
      }
    }
  }
}

// [N, C, spatial...] -> [N, spatial..., C] of a shape, and of int8 bytes.
Shape channels_last_shape(const Shape& s) {
  Shape out{s[0]};
  out.insert(out.end(), s.begin() + 2, s.end());
  out.push_back(s[1]);
  return out;
}

// The oneDNN kernels a channels-last int8 conv may ask for, with a name for traces.
constexpr std::pair<Int8ConvKernel, const char*> kConvKernels[] = {
    {Int8ConvKernel::kByOutputSize, "kernel by output size"},
    {Int8ConvKernel::kBrgemm, "brgemm kernel"},
    {Int8ConvKernel::kDirect, "direct kernel"}};

// com.onnxkit ChannelsLastQLinearConv on the conv cases (X given channels-last), u8 and s8
// out, on each oneDNN kernel: against its reference (QLinearConv's between transposes).
TEST(Int8Kernels, ChannelsLastQLinearConvMatchesReference) {
  for (auto [kernel, kernel_name] : kConvKernels) {
    Int8ConvKernelOverride force(kernel);
    uint64_t seed = 550;
    for (const ConvCase& c : conv_cases()) {
      for (auto [x_zp, y_zp] : kConvZeroPoints) {
        for (DType y_type : {DType::kUInt8, DType::kInt8}) {
          SCOPED_TRACE(std::string(kernel_name) + ": " + shape_to_string(c.x) + " * " +
                       shape_to_string(c.w) + " zero points " + std::to_string(x_zp) + ", " +
                       std::to_string(y_zp));
          expect_bit_exact([&](GraphBuilder& g) {
            std::mt19937_64 rng(seed);
            Value* x =
                g.input("x", int8_tensor(c.x_type, channels_last_shape(c.x), rng, c.extreme));
            const ConvWeights weights = conv_weights(g, c, rng);
            std::vector<testing::Attr> list;
            if (!c.pads.empty()) list.push_back(testing::Attr::Ints("pads", c.pads));
            if (!c.strides.empty()) list.push_back(testing::Attr::Ints("strides", c.strides));
            if (!c.dilations.empty()) list.push_back(testing::Attr::Ints("dilations", c.dilations));
            if (c.group != 1) list.push_back(testing::Attr::Int("group", c.group));
            g.output(g.node(std::string(kChannelsLastQLinearConv),
                            {x, g.scalar(0.03f), g.constant(int8_scalar(c.x_type, x_zp)), weights.w,
                             weights.scale, weights.zero_point, g.scalar(c.extreme ? 40.0f : 0.1f),
                             g.constant(int8_scalar(y_type, y_zp)), weights.bias},
                            testing::Attributes(list), 1, std::string(kOnnxkitDomain))
                         ->output(0));
          });
          ++seed;
        }
      }
    }
  }
}

// Depthwise ChannelsLastQLinearConv (kernels/int8_depthwise.cc): kernels 3x3 and 5x5,
// strides 1 and 2, scales that leave most outputs unsaturated, symmetric, asymmetric and no
// padding, channel counts with and without a tail below 16, u8 / s8 activations, weights and
// outputs, zero points per tensor and per channel, at every SIMD level this CPU has.
struct DepthwiseCase {
  Shape x;  // [N, C, H, W]
  int64_t kernel, stride;
  std::vector<int64_t> pads;
  DType x_type, w_type, y_type;
  bool per_channel, bias;
  int x_zp;
};

std::vector<DepthwiseCase> depthwise_cases() {
  using D = DType;
  return {
      {{1, 32, 9, 9}, 3, 1, {1, 1, 1, 1}, D::kUInt8, D::kInt8, D::kUInt8, true, true, 120},
      {{2, 96, 8, 7}, 3, 2, {0, 1, 1, 0}, D::kUInt8, D::kInt8, D::kUInt8, false, true, 3},
      {{1, 83, 7, 9}, 3, 2, {1, 1, 1, 1}, D::kInt8, D::kInt8, D::kInt8, true, false, -7},
      {{1, 144, 6, 6}, 5, 1, {2, 2, 2, 2}, D::kUInt8, D::kUInt8, D::kInt8, true, true, 255},
      {{1, 40, 11, 10}, 5, 2, {2, 1, 2, 1}, D::kInt8, D::kUInt8, D::kUInt8, false, true, 127},
      {{1, 16, 5, 5}, 3, 1, {}, D::kUInt8, D::kInt8, D::kUInt8, true, true, 0},
      {{1, 7, 6, 6}, 5, 1, {0, 0, 4, 4}, D::kInt8, D::kInt8, D::kUInt8, false, false, -128},
      {{1, 200, 4, 4}, 3, 1, {1, 1, 1, 1}, D::kUInt8, D::kInt8, D::kUInt8, true, true, 128},
      // 15 columns: 8, 4, 2 and 1 at a time.
      {{1, 48, 3, 15}, 3, 1, {1, 1, 1, 1}, D::kInt8, D::kInt8, D::kInt8, true, true, 5},
  };
}

// The depthwise case's node on channels-last X, with seeded random operands.
void build_depthwise(GraphBuilder& g, const DepthwiseCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t channels = c.x[1];
  Value* x = g.input("x", int8_tensor(c.x_type, channels_last_shape(c.x), rng));
  Value* w = g.constant(int8_tensor(c.w_type, {channels, 1, c.kernel, c.kernel}, rng));
  const Shape param = c.per_channel ? Shape{channels} : Shape{};
  Value* w_scale = g.constant(floats(param, rng, 1e-3f, 2e-2f));
  Value* w_zp =
      g.constant(c.per_channel ? int8_tensor(c.w_type, param, rng)
                               : int8_scalar(c.w_type, c.w_type == DType::kInt8 ? 0 : 131));
  std::vector<Value*> inputs{
      x,
      g.scalar(0.05f),
      g.constant(int8_scalar(c.x_type, c.x_zp)),
      w,
      w_scale,
      w_zp,
      g.scalar(2.0f),
      g.constant(int8_scalar(c.y_type, c.y_type == DType::kUInt8 ? 128 : 0))};
  if (c.bias) {
    Tensor bias(DType::kInt32, {channels});
    std::uniform_int_distribution<int32_t> dist(-20000, 20000);
    for (int64_t m = 0; m < channels; ++m) bias.mutable_data<int32_t>()[m] = dist(rng);
    inputs.push_back(g.constant(bias));
  }
  std::vector<testing::Attr> list{testing::Attr::Int("group", channels),
                                  testing::Attr::Ints("strides", {c.stride, c.stride})};
  if (!c.pads.empty()) list.push_back(testing::Attr::Ints("pads", c.pads));
  g.output(g.node(std::string(kChannelsLastQLinearConv), inputs, testing::Attributes(list), 1,
                  std::string(kOnnxkitDomain))
               ->output(0));
}

TEST(Int8Kernels, ChannelsLastDepthwiseMatchesReferenceAtEveryLevel) {
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > detected_simd_level()) continue;
    SimdLevelOverride force(level);
    SCOPED_TRACE(std::string(simd_level_name(level)));
    uint64_t seed = 900;
    for (const DepthwiseCase& c : depthwise_cases()) {
      SCOPED_TRACE(shape_to_string(c.x) + " kernel " + std::to_string(c.kernel) + " stride " +
                   std::to_string(c.stride));
      expect_bit_exact([&](GraphBuilder& g) { build_depthwise(g, c, seed); });
      ++seed;
    }
  }
}

// Each code path of the kernel, called directly (AVX-512 without VNNI is not reachable
// through the SIMD level on a CPU that has VNNI), against the scalar one. With weight zero
// points of 0 every (w - w_zp) fits in s8 and the VNNI path multiplies byte quads
// (VPDPBUSD); with random ones it multiplies int16 pairs. Multipliers of 0.01-1 make many
// outputs saturate (the quad path lets its packs saturate them), of 10-1e6 most (the quad
// path clamps before rounding, as |acc * multiplier| may pass 2^30).
TEST(Int8Kernels, DepthwiseCodePathsAgree) {
  std::mt19937_64 rng(31);
  for (const int variant : {0, 1, 2, 3})
    for (const DepthwiseCase& c : depthwise_cases()) {
      const int64_t channels = c.x[1], taps = c.kernel * c.kernel;
      const bool x_signed = c.x_type == DType::kInt8;
      std::vector<int32_t> weights(static_cast<size_t>(channels * taps)), zero_points(channels);
      std::uniform_int_distribution<int> value(-128, 127);
      for (int32_t& w : weights) w = value(rng);
      const bool s8_weights = variant > 0;
      for (int32_t& zp : zero_points) zp = s8_weights ? 0 : value(rng);
      // The extremes of the s8 range, in the first channel.
      if (s8_weights) weights[0] = -128, weights[1] = 127;
      const Int8DepthwiseConv conv(channels, c.kernel, c.kernel, c.stride, c.stride, weights,
                                   zero_points);
      std::vector<float> multipliers(static_cast<size_t>(channels));
      const float low_scale[] = {1e-5f, 1e-5f, 1e-2f, 10.0f},
                  high_scale[] = {1e-3f, 1e-3f, 1, 1e6f};
      std::uniform_real_distribution<float> scale(low_scale[variant], high_scale[variant]);
      for (float& m : multipliers) m = scale(rng);
      std::vector<int32_t> biases(static_cast<size_t>(channels));
      for (int32_t& b : biases) b = value(rng) * 50;
      const Tensor x = int8_tensor(c.x_type, channels_last_shape(c.x), rng);
      const int64_t pad = c.kernel / 2;
      const int64_t out_h = (c.x[2] + 2 * pad - c.kernel) / c.stride + 1;
      const int64_t out_w = (c.x[3] + 2 * pad - c.kernel) / c.stride + 1;
      const Int8DepthwiseConv::Geometry geometry{c.x[0], c.x[2], c.x[3], out_h, out_w, pad, pad};
      const Int8DepthwiseConv::Requantization requantization{
          multipliers.data(), c.bias ? biases.data() : nullptr, c.y_type == DType::kInt8 ? -3 : 130,
          c.y_type == DType::kInt8};
      const size_t out_bytes = static_cast<size_t>(c.x[0] * out_h * out_w * channels);
      std::vector<uint8_t> want(out_bytes);
      conv.run(x.raw_data(), x_signed, c.x_zp, geometry, requantization, want.data(),
               DepthwiseIsa::kScalar);
      for (DepthwiseIsa isa :
           {DepthwiseIsa::kAvx2, DepthwiseIsa::kAvx512, DepthwiseIsa::kAvx512Vnni}) {
        if (!cpu_runs(isa)) continue;
        SCOPED_TRACE("variant " + std::to_string(variant) + " path " +
                     std::to_string(static_cast<int>(isa)) + " on " + shape_to_string(c.x));
        std::vector<uint8_t> got(out_bytes, 0xAB);
        conv.run(x.raw_data(), x_signed, c.x_zp, geometry, requantization, got.data(), isa);
        EXPECT_EQ(got, want);
      }
    }
}

// com.onnxkit ChannelsLastMaxPool (kernels/dnnl_pool.cc) against its reference: channel
// counts around the vector widths, strides, pads, ceil_mode, u8 and s8, every SIMD level.
TEST(Int8Kernels, ChannelsLastMaxPoolMatchesReferenceAtEveryLevel) {
  struct PoolCase {
    Shape x;  // [N, H, W, C]
    int64_t kernel, stride;
    std::vector<int64_t> pads;
    bool ceil;
  };
  const std::vector<PoolCase> cases{{{1, 9, 9, 64}, 3, 2, {1, 1, 1, 1}, false},
                                    {{2, 8, 7, 70}, 3, 2, {0, 0, 1, 1}, true},
                                    {{1, 6, 6, 3}, 2, 2, {}, false},
                                    {{1, 5, 7, 130}, 3, 1, {1, 1, 1, 1}, false},
                                    {{1, 7, 7, 33}, 5, 2, {2, 2, 2, 2}, true}};
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > detected_simd_level()) continue;
    SimdLevelOverride force(level);
    SCOPED_TRACE(std::string(simd_level_name(level)));
    uint64_t seed = 1200;
    for (const PoolCase& c : cases) {
      for (DType type : {DType::kUInt8, DType::kInt8}) {
        SCOPED_TRACE(shape_to_string(c.x));
        expect_bit_exact([&](GraphBuilder& g) {
          std::mt19937_64 rng(seed);
          std::vector<testing::Attr> list{testing::Attr::Ints("kernel_shape", {c.kernel, c.kernel}),
                                          testing::Attr::Ints("strides", {c.stride, c.stride})};
          if (!c.pads.empty()) list.push_back(testing::Attr::Ints("pads", c.pads));
          if (c.ceil) list.push_back(testing::Attr::Int("ceil_mode", 1));
          g.output(g.node(std::string(kChannelsLastMaxPool),
                          {g.input("x", int8_tensor(type, c.x, rng))}, testing::Attributes(list), 1,
                          std::string(kOnnxkitDomain))
                       ->output(0));
        });
        ++seed;
      }
    }
  }
}

// Products whose requantized values fall just above a half (multiplier 0.5 + 2^-23, small
// odd accumulators) next to a zero point of 200: MLAS rounds v, then adds the zero point;
// adding it first in float (oneDNN's order) rounds 200 + k.5000001 to the tie and then to
// even. Also exact ties (multiplier 0.5), and both with a zero point of 0 (no rounding
// post-op: the conversion to u8 rounds). Plain and channels-last, with VNNI and split weights.
TEST(Int8Kernels, QLinearConvRoundsBeforeTheZeroPoint) {
  for (auto [kernel, kernel_name] : kConvKernels) {
    SCOPED_TRACE(kernel_name);
    Int8ConvKernelOverride force(kernel);
    for (auto [channels_last, y_zp, multiplier] :
         {std::tuple{false, 200, 0.5f + 0x1p-23f}, std::tuple{true, 200, 0.5f + 0x1p-23f},
          std::tuple{false, 0, 0.5f + 0x1p-23f}, std::tuple{true, 0, 0.5f + 0x1p-23f},
          std::tuple{true, 200, 0.5f}, std::tuple{true, 0, 0.5f}}) {
      SCOPED_TRACE(std::string(channels_last ? "channels-last" : "NCHW") + " zero point " +
                   std::to_string(y_zp) + " multiplier " + std::to_string(multiplier));
      expect_bit_exact([&](GraphBuilder& g) {
        std::mt19937_64 rng(77);
        const Shape x_shape{1, 16, 12, 12};
        Tensor x(DType::kUInt8, channels_last ? channels_last_shape(x_shape) : x_shape);
        std::uniform_int_distribution<int> small(0, 3);
        for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<uint8_t>()[i] = small(rng);
        Tensor w(DType::kInt8, {32, 16, 1, 1});
        std::uniform_int_distribution<int> weight(-2, 2);
        for (int64_t i = 0; i < w.numel(); ++i) w.mutable_data<int8_t>()[i] = weight(rng);
        Tensor w_scale(DType::kFloat, {32});
        for (int64_t m = 0; m < 32; ++m) w_scale.mutable_data<float>()[m] = multiplier;
        const std::string op =
            channels_last ? std::string(kChannelsLastQLinearConv) : "QLinearConv";
        g.output(g.node(op,
                        {g.input("x", x), g.scalar(1.0f), g.constant(int8_scalar(DType::kUInt8, 0)),
                         g.constant(w), g.constant(w_scale), g.constant(Tensor(DType::kInt8, {32})),
                         g.scalar(1.0f), g.constant(int8_scalar(DType::kUInt8, y_zp))},
                        {}, 1, channels_last ? std::string(kOnnxkitDomain) : std::string())
                     ->output(0));
      });
    }
  }
}

// Floats with the hard cases of x / scale: exact ties (round half to even), values past
// the type's range, NaN and infinities.
Tensor hard_floats(const Shape& shape, float scale, std::mt19937_64& rng) {
  Tensor t = floats(shape, rng, -200 * scale, 200 * scale);
  float* x = t.mutable_data<float>();
  const float specials[] = {0.5f * scale,
                            1.5f * scale,
                            2.5f * scale,
                            -2.5f * scale,
                            -0.5f * scale,
                            127.5f * scale,
                            1e30f,
                            -1e30f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nanf(""),
                            0.0f};
  for (int64_t i = 0; i < t.numel(); i += 7) x[i] = specials[(i / 7) % std::size(specials)];
  return t;
}

TEST(Int8Kernels, QuantizeDequantizeMatchReferenceAtEveryLevel) {
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > detected_simd_level()) continue;
    SimdLevelOverride force(level);
    SCOPED_TRACE(std::string(simd_level_name(level)));
    for (DType q_type : {DType::kUInt8, DType::kInt8}) {
      for (bool per_axis : {false, true}) {
        expect_bit_exact([&](GraphBuilder& g) {
          std::mt19937_64 rng(per_axis + 2 * static_cast<int>(q_type));
          const Shape shape{2, 3, 37};
          const Shape param = per_axis ? Shape{3} : Shape{};
          Tensor scale = floats(param, rng, 0.01f, 0.05f);
          Value* s = g.constant(scale);
          Value* zp =
              g.constant(per_axis ? int8_tensor(q_type, param, rng) : int8_scalar(q_type, 3));
          Value* x = g.input("x", hard_floats(shape, scale.data<float>()[0], rng));
          Value* q = g.op("QuantizeLinear", {x, s, zp});
          g.output(q);
          g.output(g.op("DequantizeLinear", {q, s, zp}));
        });
      }
    }
    expect_bit_exact([&](GraphBuilder& g) {
      std::mt19937_64 rng(9);
      Node* node =
          g.node("DynamicQuantizeLinear", {g.input("x", hard_floats({3, 41}, 0.02f, rng))}, {}, 3);
      for (Value* out : node->outputs()) g.output(out);
    });
  }
}

TEST(Int8Kernels, DynamicQuantizeLinearOfZerosAndOfPositives) {
  for (float shift : {0.0f, 3.0f}) {
    expect_bit_exact([&](GraphBuilder& g) {
      std::mt19937_64 rng(3);
      Tensor x = shift == 0.0f ? Tensor(DType::kFloat, {100}) : floats({100}, rng, 1, 1 + shift);
      Node* node = g.node("DynamicQuantizeLinear", {g.input("x", x)}, {}, 3);
      for (Value* out : node->outputs()) g.output(out);
    });
  }
}

}  // namespace
}  // namespace onnxkit
