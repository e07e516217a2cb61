// Reference kernels of onnxkit's transformer ops (ops/fused_ops.h), each compared with the
// unfused graph of standard ops it replaces, run on the reference kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "core/half.h"
#include "onnxkit/session.h"
#include "ops/fused_ops.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit {
namespace {

// A copyable attribute description (Attribute itself is move-only).
struct Attr {
  std::string name;
  AttrType type = AttrType::kUndefined;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;

  Attribute make() const {
    Attribute a;
    a.name = name;
    a.type = type;
    a.i = i;
    a.f = f;
    a.s = s;
    a.ints = ints;
    return a;
  }
};

// Builds graphs by hand: inputs, constants and nodes, then runs them.
class Builder {
 public:
  explicit Builder(int64_t opset = 17) {
    model_.ir_version = 8;
    model_.opset_imports = {{"", opset}, {std::string(kOnnxkitDomain), 1}};
  }

  Value* input(const std::string& name, const Tensor& value) {
    feeds_.emplace_back(name, value);
    return graph().add_input(name, ValueType::tensor(value.dtype()));
  }
  Value* constant(const Tensor& value) {
    return graph().add_initializer(graph().unique_name("c"), value);
  }
  Value* scalar(float value, DType dtype = DType::kFloat) {
    Tensor t(dtype, {});
    dispatch_value(t, value);
    return constant(t);
  }
  Value* ints(std::vector<int64_t> values) {
    const auto n = static_cast<int64_t>(values.size());
    return constant(Tensor::from_vector(DType::kInt64, {n}, values));
  }
  // A node of `op` with one output per name in `outputs` (default: one).
  std::vector<Value*> node(const std::string& op, std::vector<Value*> inputs,
                           std::vector<Attr> attributes = {}, size_t outputs = 1,
                           const std::string& domain = "") {
    std::vector<std::string> names;
    const std::string base = op + std::to_string(next_id_++);
    for (size_t i = 0; i < outputs; ++i) names.push_back(base + "_" + std::to_string(i));
    Node* n = graph().add_node(op, std::move(inputs), names, domain, base);
    for (const Attr& a : attributes) n->set_attribute(a.make());
    return n->outputs();
  }
  Value* op(const std::string& op, std::vector<Value*> inputs, std::vector<Attr> attributes = {}) {
    return node(op, std::move(inputs), std::move(attributes))[0];
  }
  Value* fused(const std::string& op, std::vector<Value*> inputs,
               std::vector<Attr> attributes = {}) {
    return node(op, std::move(inputs), std::move(attributes), 1, std::string(kOnnxkitDomain))[0];
  }

  std::vector<Tensor> run(const std::vector<Value*>& outputs) {
    for (Value* v : outputs) graph().add_output(v);
    auto session = Session::create(std::move(model_), SessionOptions::reference());
    if (!session) throw Error(session.error());
    NamedValues feeds;
    for (auto& [name, t] : feeds_) feeds.emplace_back(name, t);
    auto result = session.value()->run(feeds);
    if (!result) throw Error(result.error());
    std::vector<Tensor> tensors;
    for (auto& [name, value] : result.value()) tensors.push_back(value.tensor());
    return tensors;
  }

 private:
  Graph& graph() { return model_.graph(); }
  static void dispatch_value(Tensor& t, float value) {
    switch (t.dtype()) {
      case DType::kFloat:
        *t.mutable_data<float>() = value;
        break;
      case DType::kDouble:
        *t.mutable_data<double>() = value;
        break;
      case DType::kFloat16:
        *t.mutable_data<Float16>() = Float16(value);
        break;
      default:
        throw Error("scalar: unsupported dtype");
    }
  }
  Model model_;
  std::vector<std::pair<std::string, Tensor>> feeds_;
  int next_id_ = 0;
};

Attr int_attr(const std::string& name, int64_t value) {
  Attr a;
  a.name = name;
  a.type = AttrType::kInt;
  a.i = value;
  return a;
}
Attr float_attr(const std::string& name, float value) {
  Attr a;
  a.name = name;
  a.type = AttrType::kFloat;
  a.f = value;
  return a;
}
Attr ints_attr(const std::string& name, std::vector<int64_t> values) {
  Attr a;
  a.name = name;
  a.type = AttrType::kInts;
  a.ints = std::move(values);
  return a;
}
Attr string_attr(const std::string& name, std::string value) {
  Attr a;
  a.name = name;
  a.type = AttrType::kString;
  a.s = std::move(value);
  return a;
}

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
Value* unfused_layer_norm(Builder& b, Value* x, Value* scale, Value* bias,
                          std::vector<int64_t> axes, float epsilon) {
  Value* mean = b.op("ReduceMean", {x}, {ints_attr("axes", axes)});
  Value* d = b.op("Sub", {x, mean});
  Value* var = b.op("ReduceMean", {b.op("Mul", {d, d})}, {ints_attr("axes", axes)});
  Value* std_dev = b.op("Sqrt", {b.op("Add", {var, b.scalar(epsilon)})});
  Value* y = b.op("Mul", {b.op("Div", {d, std_dev}), scale});
  return bias ? b.op("Add", {y, bias}) : y;
}

TEST(FusedLayerNormalization, MatchesDecompositionOverLastAxis) {
  const Tensor x = randn({2, 3, 7}, 1), scale = randn({7}, 2), bias = randn({7}, 3);
  Builder fused;
  Value* y = fused.fused("LayerNormalization",
                         {fused.input("x", x), fused.constant(scale), fused.constant(bias)},
                         {float_attr("epsilon", 1e-3f)});
  Builder plain(13);
  Value* expected = unfused_layer_norm(plain, plain.input("x", x), plain.constant(scale),
                                       plain.constant(bias), {-1}, 1e-3f);
  expect_close(fused.run({y})[0], plain.run({expected})[0]);
}

TEST(FusedLayerNormalization, TwoAxesBroadcastScaleNoBias) {
  const Tensor x = randn({3, 5, 7}, 4), scale = randn({7}, 5);
  Builder fused;
  Value* y = fused.fused("LayerNormalization", {fused.input("x", x), fused.constant(scale)},
                         {int_attr("axis", 1)});
  Builder plain(13);
  Value* expected =
      unfused_layer_norm(plain, plain.input("x", x), plain.constant(scale), nullptr, {1, 2}, 1e-5f);
  expect_close(fused.run({y})[0], plain.run({expected})[0]);
}

TEST(FusedLayerNormalization, DoubleAndFloat16) {
  const Tensor x = randn({4, 9}, 6), scale = randn({9}, 7), bias = randn({9}, 8);
  Builder plain(13);
  Value* expected = unfused_layer_norm(plain, plain.input("x", x), plain.constant(scale),
                                       plain.constant(bias), {-1}, 1e-5f);
  const Tensor want = plain.run({expected})[0];
  for (DType dtype : {DType::kDouble, DType::kFloat16}) {
    Builder fused;
    Value* y = fused.fused("LayerNormalization",
                           {fused.input("x", cast(x, dtype)), fused.constant(cast(scale, dtype)),
                            fused.constant(cast(bias, dtype))});
    const Tensor got = fused.run({y})[0];
    ASSERT_EQ(got.dtype(), dtype);
    Builder back;
    Value* as_float = back.op("Cast", {back.input("g", got)}, {int_attr("to", 1)});
    expect_close(back.run({as_float})[0], want, dtype == DType::kFloat16 ? 1e-2 : 1e-5,
                 dtype == DType::kFloat16 ? 1e-2 : 1e-6);
  }
}

TEST(FusedLayerNormalization, BadScaleNamesTheNode) {
  Builder fused;
  Value* y = fused.fused("LayerNormalization",
                         {fused.input("x", randn({2, 6}, 1)), fused.constant(randn({5}, 2))});
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
    Builder fused;
    std::vector<Value*> inputs{fused.input("x", x), fused.input("skip", skip),
                               fused.constant(gamma), with_beta ? fused.constant(beta) : nullptr};
    if (with_bias) inputs.push_back(fused.constant(bias));
    auto outs = fused.node("SkipLayerNormalization", inputs, {float_attr("epsilon", 1e-4f)}, 2,
                           std::string(kOnnxkitDomain));
    Builder plain;
    Value* sum = plain.op("Add", {plain.input("x", x), plain.input("skip", skip)});
    if (with_bias) sum = plain.op("Add", {sum, plain.constant(bias)});
    std::vector<Value*> ln_inputs{sum, plain.constant(gamma)};
    if (with_beta) ln_inputs.push_back(plain.constant(beta));
    Value* y = plain.op("LayerNormalization", ln_inputs, {float_attr("epsilon", 1e-4f)});
    const auto got = fused.run(outs);
    const auto want = plain.run({y, sum});
    SCOPED_TRACE(variant);
    expect_close(got[0], want[0]);
    expect_close(got[1], want[1]);
  }
}

TEST(FusedSkipLayerNormalization, SumOutputIsOptional) {
  const Tensor x = randn({3, 8}, 1), skip = randn({3, 8}, 2), gamma = randn({8}, 3);
  Builder fused;
  Value* y = fused.fused("SkipLayerNormalization",
                         {fused.input("x", x), fused.input("skip", skip), fused.constant(gamma)});
  Builder plain;
  Value* want = plain.op(
      "LayerNormalization",
      {plain.op("Add", {plain.input("x", x), plain.input("skip", skip)}), plain.constant(gamma)});
  expect_close(fused.run({y})[0], plain.run({want})[0]);
}

TEST(FusedSkipLayerNormalization, SkipOfAnotherShapeIsAnError) {
  Builder fused;
  Value* y = fused.fused("SkipLayerNormalization",
                         {fused.input("x", randn({2, 3, 4}, 1)),
                          fused.input("skip", randn({1, 3, 4}, 2)), fused.constant(randn({4}, 3))});
  EXPECT_THROW(fused.run({y}), Error);
}

// ---- Gelu ----

TEST(FusedGelu, ErfFormMatchesDecomposition) {
  Tensor x = randn({3, 17}, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] *= 3;
  Builder fused;
  Value* y = fused.fused("Gelu", {fused.input("x", x)});
  Builder plain;
  Value* in = plain.input("x", x);
  Value* erf = plain.op("Erf", {plain.op("Div", {in, plain.scalar(std::sqrt(2.0f))})});
  Value* want = plain.op(
      "Mul", {plain.op("Mul", {in, plain.op("Add", {erf, plain.scalar(1)})}), plain.scalar(0.5f)});
  expect_close(fused.run({y})[0], plain.run({want})[0]);
}

TEST(FusedGelu, TanhFormMatchesDecomposition) {
  Tensor x = randn({5, 13}, 2);
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] *= 3;
  Builder fused;
  Value* y = fused.fused("Gelu", {fused.input("x", x)}, {string_attr("approximate", "tanh")});
  Builder plain;
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
  Builder fused;
  Value* y = fused.fused("Gelu", {fused.input("x", cast(x, DType::kFloat16))});
  const Tensor got = fused.run({y})[0];
  ASSERT_EQ(got.dtype(), DType::kFloat16);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data<float>()[i];
    EXPECT_NEAR(static_cast<float>(got.data<Float16>()[i]),
                0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 2e-3);
  }
  Builder bad;
  Value* z = bad.fused("Gelu", {bad.input("x", x)}, {string_attr("approximate", "fast")});
  EXPECT_THROW(bad.run({z}), Error);
}

// ---- BiasSoftmax ----

TEST(FusedBiasSoftmax, MatchesSoftmaxOfAddWithBroadcasting) {
  const Tensor x = randn({2, 3, 5, 7}, 1);
  for (Shape bias_shape : {Shape{2, 3, 5, 7}, Shape{2, 1, 1, 7}, Shape{7}, Shape{3, 1, 7}}) {
    const Tensor bias = randn(bias_shape, 2);
    for (int64_t axis : {-1, 1}) {
      Builder fused;
      Value* y = fused.fused("BiasSoftmax", {fused.input("x", x), fused.input("b", bias)},
                             {int_attr("axis", axis)});
      Builder plain;
      Value* want =
          plain.op("Softmax", {plain.op("Add", {plain.input("x", x), plain.input("b", bias)})},
                   {int_attr("axis", axis)});
      SCOPED_TRACE(shape_to_string(bias_shape) + " axis " + std::to_string(axis));
      expect_close(fused.run({y})[0], plain.run({want})[0]);
    }
  }
}

TEST(FusedBiasSoftmax, BiasLargerThanXIsAnError) {
  Builder fused;
  Value* y = fused.fused("BiasSoftmax",
                         {fused.input("x", randn({1, 4}, 1)), fused.input("b", randn({3, 4}, 2))});
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
  Builder fused;
  Value* kt = nullptr;
  {
    Builder& b = fused;
    Value* k_in = b.input("k", k);
    if (c.k_transposed) k_in = b.op("Transpose", {k_in}, {ints_attr("perm", {0, 1, 3, 2})});
    kt = k_in;
  }
  std::vector<Value*> inputs{fused.input("q", q), kt, fused.input("v", v),
                             c.mask_shape ? fused.input("mask", mask) : nullptr};
  if (c.keep_shape) inputs.push_back(fused.input("keep", keep));
  std::vector<Attr> attributes;
  if (c.scale) attributes.push_back(float_attr("scale", *c.scale));
  if (c.masked_value) attributes.push_back(float_attr("masked_value", *c.masked_value));
  if (c.k_transposed) attributes.push_back(int_attr("k_transposed", 1));
  Value* y = fused.fused("Attention", inputs, std::move(attributes));

  Builder plain;
  Value* k_t = plain.op("Transpose", {plain.input("k", k)}, {ints_attr("perm", {0, 1, 3, 2})});
  Value* s = plain.op("MatMul", {plain.input("q", q), k_t});
  const float scale = c.scale ? *c.scale : 1.0f / std::sqrt(static_cast<float>(c.depth));
  s = plain.op("Mul", {s, plain.scalar(scale)});
  if (c.mask_shape) s = plain.op("Add", {s, plain.input("mask", mask)});
  if (c.keep_shape) {
    const float fill = c.masked_value ? *c.masked_value : -std::numeric_limits<float>::infinity();
    s = plain.op("Where", {plain.input("keep", keep), s, plain.scalar(fill)});
  }
  Value* want =
      plain.op("MatMul", {plain.op("Softmax", {s}, {int_attr("axis", -1)}), plain.input("v", v)});
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
  Builder fused;
  Value* y = fused.fused("Attention", {fused.input("q", randn({1, 2, 3, 4}, 1)),
                                       fused.input("k", randn({1, 2, 5, 3}, 2)),
                                       fused.input("v", randn({1, 2, 5, 4}, 3))});
  try {
    fused.run({y});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Attention]"), std::string::npos) << e.what();
  }
}

TEST(FusedAttention, Float16) {
  const Tensor q = randn({1, 2, 3, 4}, 1), k = randn({1, 2, 5, 4}, 2), v = randn({1, 2, 5, 4}, 3);
  Builder f32;
  Value* y32 = f32.fused("Attention", {f32.input("q", q), f32.input("k", k), f32.input("v", v)});
  Builder f16;
  Value* y16 = f16.fused("Attention", {f16.input("q", cast(q, DType::kFloat16)),
                                       f16.input("k", cast(k, DType::kFloat16)),
                                       f16.input("v", cast(v, DType::kFloat16))});
  const Tensor want = f32.run({y32})[0];
  const Tensor got = f16.run({y16})[0];
  ASSERT_EQ(got.dtype(), DType::kFloat16);
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_NEAR(static_cast<float>(got.data<Float16>()[i]), want.data<float>()[i], 1e-2);
  }
}

}  // namespace
}  // namespace onnxkit
