// Reference kernels of onnxkit's transformer ops (ops/fused_ops.h), each compared with the
// unfused graph of standard ops it replaces, run on the reference kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "../graph_test_util.h"
#include "core/half.h"
#include "onnxkit/session.h"
#include "ops/fused_ops.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

const std::string kOnnxkit(kOnnxkitDomain);

Tensor randn(Shape shape, uint64_t seed, DType dtype = DType::kFloat) {
  std::mt19937_64 rng(seed);
  return random_tensor(dtype, shape, rng);
}

Tensor cast(const Tensor& t, DType dtype) {
  Tensor out(dtype, t.shape());
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kDouble) out.mutable_data<double>()[i] = p[i];
    if (dtype == DType::kFloat16) out.mutable_data<Float16>()[i] = Float16(p[i]);
  }
  return out;
}

Tensor bools(Shape shape, const std::function<bool(int64_t)>& at) {
  Tensor t(DType::kBool, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<bool>()[i] = at(i);
  return t;
}

void expect_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-4,
                  double atol = 1e-5) {
  Comparison c = compare_tensors(actual, expected, {rtol, atol, true});
  EXPECT_TRUE(c.ok) << c.message;
}

// ---- LayerNormalization ----

// The decomposition PyTorch exports, over the last `axes` dims.
Value* unfused_layer_norm(GraphBuilder& b, Value* x, Value* scale, Value* bias,
                          std::vector<int64_t> axes, float epsilon) {
  Value* mean = b.op("ReduceMean", {x}, {Attr::Ints("axes", axes)});
  Value* d = b.op("Sub", {x, mean});
  Value* var = b.op("ReduceMean", {b.op("Mul", {d, d})}, {Attr::Ints("axes", axes)});
  Value* std_dev = b.op("Sqrt", {b.op("Add", {var, b.scalar(epsilon)})});
  Value* y = b.op("Mul", {b.op("Div", {d, std_dev}), scale});
  return bias ? b.op("Add", {y, bias}) : y;
}

TEST(FusedLayerNormalization, MatchesDecompositionOverLastAxis) {
  const Tensor x = randn({2, 3, 7}, 1), scale = randn({7}, 2), bias = randn({7}, 3);
  GraphBuilder fused(17);
  Value* y = fused.op("LayerNormalization",
                      {fused.input("x", x), fused.constant(scale), fused.constant(bias)},
                      {Attr::Float("epsilon", 1e-3f)}, kOnnxkit);
  GraphBuilder plain(13);
  Value* expected = unfused_layer_norm(plain, plain.input("x", x), plain.constant(scale),
                                       plain.constant(bias), {-1}, 1e-3f);
  expect_close(fused.run({y})[0], plain.run({expected})[0]);
}

TEST(FusedLayerNormalization, TwoAxesBroadcastScaleNoBias) {
  const Tensor x = randn({3, 5, 7}, 4), scale = randn({7}, 5);
  GraphBuilder fused(17);
  Value* y = fused.op("LayerNormalization", {fused.input("x", x), fused.constant(scale)},
                      {Attr::Int("axis", 1)}, kOnnxkit);
  GraphBuilder plain(13);
  Value* expected =
      unfused_layer_norm(plain, plain.input("x", x), plain.constant(scale), nullptr, {1, 2}, 1e-5f);
  expect_close(fused.run({y})[0], plain.run({expected})[0]);
}

TEST(FusedLayerNormalization, DoubleAndFloat16) {
  const Tensor x = randn({4, 9}, 6), scale = randn({9}, 7), bias = randn({9}, 8);
  GraphBuilder plain(13);
  Value* expected = unfused_layer_norm(plain, plain.input("x", x), plain.constant(scale),
                                       plain.constant(bias), {-1}, 1e-5f);
  const Tensor want = plain.run({expected})[0];
  for (DType dtype : {DType::kDouble, DType::kFloat16}) {
    GraphBuilder fused(17);
    Value* y = fused.op("LayerNormalization",
                        {fused.input("x", cast(x, dtype)), fused.constant(cast(scale, dtype)),
                         fused.constant(cast(bias, dtype))},
                        {}, kOnnxkit);
    const Tensor got = fused.run({y})[0];
    ASSERT_EQ(got.dtype(), dtype);
    GraphBuilder back(17);
    Value* as_float = back.op("Cast", {back.input("g", got)}, {Attr::Int("to", 1)});
    expect_close(back.run({as_float})[0], want, dtype == DType::kFloat16 ? 1e-2 : 1e-5,
                 dtype == DType::kFloat16 ? 1e-2 : 1e-6);
  }
}

TEST(FusedLayerNormalization, BadScaleNamesTheNode) {
  GraphBuilder fused(17);
  Value* y =
      fused.op("LayerNormalization",
               {fused.input("x", randn({2, 6}, 1)), fused.constant(randn({5}, 2))}, {}, kOnnxkit);
  try {
    fused.run({y});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LayerNormalization"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Scale"), std::string::npos) << e.what();
  }
}

// ---- SkipLayerNormalization ----

TEST(FusedSkipLayerNormalization, MatchesAddsThenLayerNorm) {
  const Tensor x = randn({2, 5, 11}, 1), skip = randn({2, 5, 11}, 2);
  const Tensor gamma = randn({11}, 3), beta = randn({11}, 4), bias = randn({11}, 5);
  for (int variant = 0; variant < 3; ++variant) {
    const bool with_beta = variant != 1, with_bias = variant != 2;
    GraphBuilder fused(17);
    std::vector<Value*> inputs{fused.input("x", x), fused.input("skip", skip),
                               fused.constant(gamma), with_beta ? fused.constant(beta) : nullptr};
    if (with_bias) inputs.push_back(fused.constant(bias));
    auto outs =
        fused.node("SkipLayerNormalization", inputs, {Attr::Float("epsilon", 1e-4f)}, 2, kOnnxkit)
            ->outputs();
    GraphBuilder plain(17);
    Value* sum = plain.op("Add", {plain.input("x", x), plain.input("skip", skip)});
    if (with_bias) sum = plain.op("Add", {sum, plain.constant(bias)});
    std::vector<Value*> ln_inputs{sum, plain.constant(gamma)};
    if (with_beta) ln_inputs.push_back(plain.constant(beta));
    Value* y = plain.op("LayerNormalization", ln_inputs, {Attr::Float("epsilon", 1e-4f)});
    const auto got = fused.run(outs);
    const auto want = plain.run({y, sum});
    SCOPED_TRACE(variant);
    expect_close(got[0], want[0]);
    expect_close(got[1], want[1]);
  }
}

TEST(FusedSkipLayerNormalization, SumOutputIsOptional) {
  const Tensor x = randn({3, 8}, 1), skip = randn({3, 8}, 2), gamma = randn({8}, 3);
  GraphBuilder fused(17);
  Value* y = fused.op("SkipLayerNormalization",
                      {fused.input("x", x), fused.input("skip", skip), fused.constant(gamma)}, {},
                      kOnnxkit);
  GraphBuilder plain(17);
  Value* want = plain.op(
      "LayerNormalization",
      {plain.op("Add", {plain.input("x", x), plain.input("skip", skip)}), plain.constant(gamma)});
  expect_close(fused.run({y})[0], plain.run({want})[0]);
}

TEST(FusedSkipLayerNormalization, SkipOfAnotherShapeIsAnError) {
  GraphBuilder fused(17);
  Value* y = fused.op("SkipLayerNormalization",
                      {fused.input("x", randn({2, 3, 4}, 1)),
                       fused.input("skip", randn({1, 3, 4}, 2)), fused.constant(randn({4}, 3))},
                      {}, kOnnxkit);
  EXPECT_THROW(fused.run({y}), Error);
}

// ---- Gelu ----

TEST(FusedGelu, ErfFormMatchesDecomposition) {
  Tensor x = randn({3, 17}, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] *= 3;
  GraphBuilder fused(17);
  Value* y = fused.op("Gelu", {fused.input("x", x)}, {}, kOnnxkit);
  GraphBuilder plain(17);
  Value* in = plain.input("x", x);
  Value* erf = plain.op("Erf", {plain.op("Div", {in, plain.scalar(std::sqrt(2.0f))})});
  Value* want = plain.op(
      "Mul", {plain.op("Mul", {in, plain.op("Add", {erf, plain.scalar(1)})}), plain.scalar(0.5f)});
  expect_close(fused.run({y})[0], plain.run({want})[0]);
}

TEST(FusedGelu, TanhFormMatchesDecomposition) {
  Tensor x = randn({5, 13}, 2);
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] *= 3;
  GraphBuilder fused(17);
  Value* y =
      fused.op("Gelu", {fused.input("x", x)}, {Attr::String("approximate", "tanh")}, kOnnxkit);
  GraphBuilder plain(17);
  Value* in = plain.input("x", x);
  Value* cube = plain.op("Pow", {in, plain.scalar(3)});
  Value* inner = plain.op("Add", {in, plain.op("Mul", {cube, plain.scalar(0.044715f)})});
  Value* t = plain.op("Tanh", {plain.op("Mul", {inner, plain.scalar(0.7978845608f)})});
  Value* want = plain.op(
      "Mul", {plain.op("Mul", {in, plain.scalar(0.5f)}), plain.op("Add", {t, plain.scalar(1)})});
  expect_close(fused.run({y})[0], plain.run({want})[0]);
}

TEST(FusedGelu, Float16AndUnknownApproximation) {
  const Tensor x = randn({7}, 3);
  GraphBuilder fused(17);
  Value* y = fused.op("Gelu", {fused.input("x", cast(x, DType::kFloat16))}, {}, kOnnxkit);
  const Tensor got = fused.run({y})[0];
  ASSERT_EQ(got.dtype(), DType::kFloat16);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data<float>()[i];
    EXPECT_NEAR(static_cast<float>(got.data<Float16>()[i]),
                0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 2e-3);
  }
  GraphBuilder bad(17);
  Value* z = bad.op("Gelu", {bad.input("x", x)}, {Attr::String("approximate", "fast")}, kOnnxkit);
  EXPECT_THROW(bad.run({z}), Error);
}

// ---- BiasSoftmax ----

TEST(FusedBiasSoftmax, MatchesSoftmaxOfAddWithBroadcasting) {
  const Tensor x = randn({2, 3, 5, 7}, 1);
  for (Shape bias_shape : {Shape{2, 3, 5, 7}, Shape{2, 1, 1, 7}, Shape{7}, Shape{3, 1, 7}}) {
    const Tensor bias = randn(bias_shape, 2);
    for (int64_t axis : {-1, 1}) {
      GraphBuilder fused(17);
      Value* y = fused.op("BiasSoftmax", {fused.input("x", x), fused.input("b", bias)},
                          {Attr::Int("axis", axis)}, kOnnxkit);
      GraphBuilder plain(17);
      Value* want =
          plain.op("Softmax", {plain.op("Add", {plain.input("x", x), plain.input("b", bias)})},
                   {Attr::Int("axis", axis)});
      SCOPED_TRACE(shape_to_string(bias_shape) + " axis " + std::to_string(axis));
      expect_close(fused.run({y})[0], plain.run({want})[0]);
    }
  }
}

TEST(FusedBiasSoftmax, BiasLargerThanXIsAnError) {
  GraphBuilder fused(17);
  Value* y = fused.op("BiasSoftmax",
                      {fused.input("x", randn({1, 4}, 1)), fused.input("b", randn({3, 4}, 2))}, {},
                      kOnnxkit);
  EXPECT_THROW(fused.run({y}), Error);
}

// ---- Attention ----

struct AttentionCase {
  int64_t batch = 2, heads = 3, sq = 5, sk = 7, depth = 4, dv = 6;
  bool k_transposed = false;
  std::optional<float> scale;
  std::optional<Shape> mask_shape;  // additive mask
  std::optional<Shape> keep_shape;  // bool keep mask
  std::optional<float> masked_value;
  std::function<bool(int64_t)> keep_at;   // default: causal-like pattern
  std::function<float(int64_t)> mask_at;  // default: random
};

std::pair<Tensor, Tensor> run_attention(const AttentionCase& c) {
  const Tensor q = randn({c.batch, c.heads, c.sq, c.depth}, 11);
  const Tensor k = randn({c.batch, c.heads, c.sk, c.depth}, 12);
  const Tensor v = randn({c.batch, c.heads, c.sk, c.dv}, 13);
  Tensor mask, keep;
  if (c.mask_shape) {
    mask = randn(*c.mask_shape, 14);
    if (c.mask_at) {
      for (int64_t i = 0; i < mask.numel(); ++i) mask.mutable_data<float>()[i] = c.mask_at(i);
    }
  }
  if (c.keep_shape) {
    keep = bools(
        *c.keep_shape, c.keep_at ? c.keep_at : [](int64_t i) { return i % 3 != 1; });
  }
  GraphBuilder fused(17);
  Value* kt = nullptr;
  {
    GraphBuilder& b = fused;
    Value* k_in = b.input("k", k);
    if (c.k_transposed) k_in = b.op("Transpose", {k_in}, {Attr::Ints("perm", {0, 1, 3, 2})});
    kt = k_in;
  }
  std::vector<Value*> inputs{fused.input("q", q), kt, fused.input("v", v),
                             c.mask_shape ? fused.input("mask", mask) : nullptr};
  if (c.keep_shape) inputs.push_back(fused.input("keep", keep));
  std::vector<Attr> attributes;
  if (c.scale) attributes.push_back(Attr::Float("scale", *c.scale));
  if (c.masked_value) attributes.push_back(Attr::Float("masked_value", *c.masked_value));
  if (c.k_transposed) attributes.push_back(Attr::Int("k_transposed", 1));
  Value* y = fused.op("Attention", inputs, std::move(attributes), kOnnxkit);

  GraphBuilder plain(17);
  Value* k_t = plain.op("Transpose", {plain.input("k", k)}, {Attr::Ints("perm", {0, 1, 3, 2})});
  Value* s = plain.op("MatMul", {plain.input("q", q), k_t});
  const float scale = c.scale ? *c.scale : 1.0f / std::sqrt(static_cast<float>(c.depth));
  s = plain.op("Mul", {s, plain.scalar(scale)});
  if (c.mask_shape) s = plain.op("Add", {s, plain.input("mask", mask)});
  if (c.keep_shape) {
    const float fill = c.masked_value ? *c.masked_value : -std::numeric_limits<float>::infinity();
    s = plain.op("Where", {plain.input("keep", keep), s, plain.scalar(fill)});
  }
  Value* want =
      plain.op("MatMul", {plain.op("Softmax", {s}, {Attr::Int("axis", -1)}), plain.input("v", v)});
  return {fused.run({y})[0], plain.run({want})[0]};
}

TEST(FusedAttention, NoMaskDefaultScale) {
  auto [got, want] = run_attention({});
  expect_close(got, want);
}

TEST(FusedAttention, AdditiveMaskBroadcastOverHeadsAndRows) {
  AttentionCase c;
  c.scale = 0.3f;
  c.mask_shape = Shape{2, 1, 1, 7};
  c.mask_at = [](int64_t i) { return i % 4 == 3 ? -10000.0f : 0.0f; };
  auto [got, want] = run_attention(c);
  expect_close(got, want);
}

TEST(FusedAttention, FullAdditiveMaskAndKTransposed) {
  AttentionCase c;
  c.k_transposed = true;
  c.mask_shape = Shape{2, 3, 5, 7};
  auto [got, want] = run_attention(c);
  expect_close(got, want);
}

TEST(FusedAttention, KeepMaskCausal) {
  AttentionCase c;
  c.sq = c.sk = 6;
  c.keep_shape = Shape{1, 1, 6, 6};
  c.keep_at = [](int64_t i) { return i % 6 <= i / 6; };
  c.masked_value = -3.4028234663852886e+38f;
  auto [got, want] = run_attention(c);
  expect_close(got, want);
}

TEST(FusedAttention, BothMasksOddSizes) {
  AttentionCase c;
  c.batch = 3, c.heads = 1, c.sq = 1, c.sk = 9, c.depth = 5, c.dv = 3;
  c.mask_shape = Shape{3, 1, 1, 9};
  c.keep_shape = Shape{9};
  c.masked_value = -1e9f;
  auto [got, want] = run_attention(c);
  expect_close(got, want);
}

TEST(FusedAttention, FullyMaskedRowsGiveNaNAsUnfused) {
  AttentionCase c;
  c.keep_shape = Shape{1, 1, 5, 7};
  c.keep_at = [](int64_t i) { return i / 7 != 2 && i % 7 != 0; };  // row 2 masked out
  auto [got, want] = run_attention(c);
  expect_close(got, want);
  // Row 2 of every batch and head is NaN in both.
  EXPECT_TRUE(std::isnan(got.data<float>()[2 * 6]));
  EXPECT_TRUE(std::isnan(want.data<float>()[2 * 6]));
  EXPECT_FALSE(std::isnan(got.data<float>()[0]));
}

TEST(FusedAttention, FullyMaskedRowsWithFiniteFillAreUniform) {
  AttentionCase c;
  c.keep_shape = Shape{1, 1, 5, 7};
  c.keep_at = [](int64_t i) { return i / 7 != 4; };
  c.masked_value = -3.4028234663852886e+38f;
  c.mask_shape = Shape{2, 1, 1, 7};
  c.mask_at = [](int64_t i) { return i == 7 ? -3.4028234663852886e+38f : 0.0f; };
  auto [got, want] = run_attention(c);
  expect_close(got, want);
}

TEST(FusedAttention, ShapeMismatchNamesTheNode) {
  GraphBuilder fused(17);
  Value* y =
      fused.op("Attention",
               {fused.input("q", randn({1, 2, 3, 4}, 1)), fused.input("k", randn({1, 2, 5, 3}, 2)),
                fused.input("v", randn({1, 2, 5, 4}, 3))},
               {}, kOnnxkit);
  try {
    fused.run({y});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Attention]"), std::string::npos) << e.what();
  }
}

TEST(FusedAttention, Float16) {
  const Tensor q = randn({1, 2, 3, 4}, 1), k = randn({1, 2, 5, 4}, 2), v = randn({1, 2, 5, 4}, 3);
  GraphBuilder f32(17);
  Value* y32 =
      f32.op("Attention", {f32.input("q", q), f32.input("k", k), f32.input("v", v)}, {}, kOnnxkit);
  GraphBuilder f16(17);
  Value* y16 =
      f16.op("Attention",
             {f16.input("q", cast(q, DType::kFloat16)), f16.input("k", cast(k, DType::kFloat16)),
              f16.input("v", cast(v, DType::kFloat16))},
             {}, kOnnxkit);
  const Tensor want = f32.run({y32})[0];
  const Tensor got = f16.run({y16})[0];
  ASSERT_EQ(got.dtype(), DType::kFloat16);
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_NEAR(static_cast<float>(got.data<Float16>()[i]), want.data<float>()[i], 1e-2);
  }
}

}  // namespace
}  // namespace onnxkit
