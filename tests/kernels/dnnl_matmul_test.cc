// The oneDNN MatMul, Gemm and FusedMatMul kernels against the reference kernels: the same
// graph through a reference session and through the optimized tier (level none, so the
// graph is unchanged), over shapes that exercise 1-D promotion, batch broadcasting, odd
// sizes, transposes, every Gemm C form, constant (prepacked) and fed weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/vector_math.h"
#include "ops/fused_ops.h"
#include "ops/registry.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

std::string describe(const Shape& a, const Shape& b) {
  return shape_to_string(a) + " x " + shape_to_string(b);
}

TEST(DnnlMatMul, IsRegisteredAsOptimized) {
  const OpRegistry& registry = builtin_registry();
  for (int64_t opset : {1, 9, 13, 21}) EXPECT_TRUE(registry.find_optimized("", "MatMul", opset));
  for (int64_t opset : {7, 11, 13}) EXPECT_TRUE(registry.find_optimized("", "Gemm", opset));
  EXPECT_FALSE(registry.find_optimized("", "Gemm", 6));  // `broadcast` attribute: reference
  EXPECT_TRUE(registry.find_optimized(kOnnxkitDomain, "FusedMatMul", 1));
}

// ---------------------------------------------------------------------------------------
// MatMul

struct MatMulCase {
  Shape a, b;
};

const std::vector<MatMulCase> kMatMulCases = {
    {{7}, {7}},
    {{7}, {7, 5}},
    {{3, 7}, {7}},
    {{2, 3, 7}, {7}},
    {{7}, {2, 7, 5}},
    {{1, 1}, {1, 1}},
    {{1, 17}, {17, 3}},
    {{3, 17}, {17, 129}},
    {{129, 3}, {3, 17}},
    {{64, 129}, {129, 65}},
    {{2, 1, 5, 7}, {3, 7, 4}},
    {{2, 3, 5, 7}, {7, 4}},
    {{5, 7}, {2, 3, 7, 4}},
    {{4, 1, 3, 17}, {1, 2, 17, 1}},
    {{2, 3, 5, 7}, {2, 3, 7, 4}},
    {{1, 3, 5, 7}, {2, 1, 7, 4}},
    {{2, 1, 2, 1, 3, 4}, {1, 2, 1, 3, 4, 5}},
    {{12, 33, 16}, {12, 16, 33}},
    {{2, 4, 0, 7}, {7, 3}},  // empty output
    {{3, 0}, {0, 4}},        // empty inner dimension: zeros (through the reference kernel)
    {{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3}, {2, 3, 4}},  // more dims than oneDNN takes
};

TEST(DnnlMatMul, MatchesReference) {
  std::mt19937_64 rng(1);
  for (const MatMulCase& c : kMatMulCases) {
    for (bool constant_b : {false, true}) {
      SCOPED_TRACE(describe(c.a, c.b) + (constant_b ? " (B constant)" : ""));
      const Tensor a = random_floats(c.a, rng), b = random_floats(c.b, rng);
      auto build = [&] {
        GraphBuilder g;
        Value* av = g.input(a);
        Value* bv = constant_b ? g.constant(b) : g.input(b);
        g.output(g.op("MatMul", {av, bv}));
        return g;
      };
      GraphBuilder actual = build(), expected = build();
      EXPECT_TRUE(matches(actual, expected));
    }
  }
}

TEST(DnnlMatMul, TwoThreads) {
  std::mt19937_64 rng(2);
  for (const MatMulCase& c :
       std::vector<MatMulCase>{{{2, 65, 33}, {33, 129}}, {{3, 1, 17, 9}, {4, 9, 31}}}) {
    SCOPED_TRACE(describe(c.a, c.b));
    const Tensor a = random_floats(c.a, rng), b = random_floats(c.b, rng);
    auto build = [&] {
      GraphBuilder g;
      g.output(g.op("MatMul", {g.input(a), g.constant(b)}));
      return g;
    };
    GraphBuilder actual = build(), expected = build();
    EXPECT_TRUE(matches(actual, expected, 2));
  }
}

// A static A shape, or one of known rank whose batch and sequence dims are unknown (packed
// for a probe of 1 row), prepacks at creation; later runs bring other row counts and reuse
// (or fall back from) the packed layout.
TEST(DnnlMatMul, PackedWeightsServeEveryRowCount) {
  std::mt19937_64 rng(3);
  const Tensor b = random_floats({48, 40}, rng);
  // Packed for many rows (32-column blocks) when the rows are unknown or many, in oneDNN's
  // own layout for a static few.
  for (const char* form :
       {"unknown shape", "symbolic batch and sequence", "static", "static, few rows"}) {
    SCOPED_TRACE(form);
    const bool static_shape = std::string_view(form).starts_with("static");
    const Shape first =
        std::string_view(form) == "static, few rows" ? Shape{1, 3, 48} : Shape{2, 8, 48};
    GraphBuilder g;
    Value* a = g.input(random_floats(first, rng), static_shape);
    if (std::string_view(form) == "symbolic batch and sequence") {
      a->set_type(ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim{}, Dim{}, Dim::known(48)}));
    }
    g.output(g.op("MatMul", {a, g.constant(b)}));
    SessionOptions options = optimized();
    options.validate_inputs = false;  // later runs feed other shapes than declared
    auto session = Session::create(std::move(g.model()), options);
    ASSERT_TRUE(session) << session.error();
    for (const Shape& shape :
         std::vector<Shape>{first, {1, 1, 48}, {3, 129, 48}, {5, 48}, {2, 8, 48}, {48}}) {
      SCOPED_TRACE(shape_to_string(shape));
      const Tensor x = random_floats(shape, rng);
      auto got = session.value()->run({{"x0", x}});
      ASSERT_TRUE(got) << got.error();
      GraphBuilder r;
      r.output(r.op("MatMul", {r.input(x), r.constant(b)}));
      NamedValues want = run_model(std::move(r.model()), r.feeds(), SessionOptions::reference());
      Comparison c = compare_values(got.value()[0].second, want[0].second, kTolerance);
      EXPECT_TRUE(c.ok) << c.message;
    }
  }
}

// A graph input with an initializer is a default the caller may override: the packed
// copy must not serve a fed B.
TEST(DnnlMatMul, OverriddenConstantIsNotPacked) {
  std::mt19937_64 rng(4);
  GraphBuilder g;
  Value* a = g.input(random_floats({4, 6}, rng));
  Value* b = g.constant(random_floats({6, 5}, rng));
  g.model().graph().add_input(b);
  g.output(g.op("MatMul", {a, b}));
  auto session = Session::create(std::move(g.model()), optimized());
  ASSERT_TRUE(session) << session.error();
  const Tensor x = random_floats({4, 6}, rng);
  const Tensor w = random_floats({6, 5}, rng);
  auto got = session.value()->run({{"x0", x}});  // packs B
  ASSERT_TRUE(got) << got.error();
  got = session.value()->run({{"x0", x}, {b->name(), w}});
  ASSERT_TRUE(got) << got.error();
  GraphBuilder r;
  r.output(r.op("MatMul", {r.input(x), r.input(w)}));
  NamedValues want = run_model(std::move(r.model()), r.feeds(), SessionOptions::reference());
  Comparison c = compare_values(got.value()[0].second, want[0].second, kTolerance);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(DnnlMatMul, OtherTypesUseTheReferenceKernel) {
  std::mt19937_64 rng(5);
  for (DType dtype : {DType::kDouble, DType::kInt32, DType::kInt64, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor a = random_tensor(dtype, {2, 3, 4}, rng), b = random_tensor(dtype, {4, 5}, rng);
    auto build = [&] {
      GraphBuilder g;
      g.output(g.op("MatMul", {g.input(a), g.constant(b)}));
      return g;
    };
    GraphBuilder actual = build(), expected = build();
    EXPECT_TRUE(matches(actual, expected));
  }
}

TEST(DnnlMatMul, BadShapesFailNamingTheNode) {
  std::mt19937_64 rng(6);
  for (const MatMulCase& c : std::vector<MatMulCase>{{{3, 4}, {5, 6}}, {{2, 3, 4}, {3, 4, 5}}}) {
    GraphBuilder g;
    g.output(g.op("MatMul", {g.input(random_floats(c.a, rng)), g.input(random_floats(c.b, rng))}));
    auto session = Session::create(std::move(g.model()), optimized());
    ASSERT_TRUE(session) << session.error();
    auto result = session.value()->run(g.feeds());
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find("'MatMul_0'"), std::string::npos) << result.error();
  }
}

// ---------------------------------------------------------------------------------------
// Gemm

TEST(DnnlGemm, MatchesReferenceForEveryCForm) {
  std::mt19937_64 rng(7);
  const int64_t m = 17, n = 33, k = 9;
  const std::vector<Shape> c_shapes = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}, {1, 1}};
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (bool constant_b : {false, true}) {
        for (auto [alpha, beta] : {std::pair{1.0f, 1.0f}, {0.5f, 2.0f}, {-1.5f, 0.0f}}) {
          for (int c_form = -1; c_form < static_cast<int>(c_shapes.size()); ++c_form) {
            SCOPED_TRACE(fmt::format("transA={} transB={} constant_b={} alpha={} beta={} C={}",
                                     trans_a, trans_b, constant_b, alpha, beta,
                                     c_form < 0 ? "none" : shape_to_string(c_shapes[c_form])));
            const Tensor a = random_floats(trans_a ? Shape{k, m} : Shape{m, k}, rng);
            const Tensor b = random_floats(trans_b ? Shape{n, k} : Shape{k, n}, rng);
            const Tensor c = c_form < 0 ? Tensor() : random_floats(c_shapes[c_form], rng);
            auto build = [&] {
              GraphBuilder g(13);
              std::vector<Value*> inputs{g.input(a), constant_b ? g.constant(b) : g.input(b)};
              if (c.defined()) inputs.push_back(g.input(c));
              g.output(g.op("Gemm", inputs, [&](Node* node) {
                set_int(node, "transA", trans_a);
                set_int(node, "transB", trans_b);
                set_float(node, "alpha", alpha);
                set_float(node, "beta", beta);
              }));
              return g;
            };
            GraphBuilder actual = build(), expected = build();
            EXPECT_TRUE(matches(actual, expected));
          }
        }
      }
    }
  }
}

// Static shapes and constant weights and bias: the primitive is built at creation.
TEST(DnnlGemm, StaticShapesAndOlderOpsets) {
  std::mt19937_64 rng(8);
  for (int64_t opset : {7, 9, 11, 13}) {
    for (int64_t m : {1, 3, 129}) {
      SCOPED_TRACE(fmt::format("opset {} M={}", opset, m));
      const Tensor a = random_floats({m, 65}, rng), b = random_floats({31, 65}, rng);
      const Tensor c = random_floats({31}, rng);
      auto build = [&] {
        GraphBuilder g(opset);
        g.output(g.op("Gemm", {g.input(a, true), g.constant(b), g.constant(c)},
                      [](Node* node) { set_int(node, "transB", 1); }));
        return g;
      };
      GraphBuilder actual = build(), expected = build();
      EXPECT_TRUE(matches(actual, expected));
    }
  }
}

TEST(DnnlGemm, EmptyAndBadShapes) {
  std::mt19937_64 rng(9);
  {  // K = 0: Y = beta * C
    auto build = [&] {
      GraphBuilder g(13);
      g.output(g.op(
          "Gemm",
          {g.input(Tensor(DType::kFloat, {3, 0})), g.input(Tensor(DType::kFloat, {0, 4})),
           g.constant(Tensor::from_vector(DType::kFloat, {4}, std::vector<float>{1, 2, 3, 4}))},
          [](Node* node) { set_float(node, "beta", 2.0f); }));
      return g;
    };
    GraphBuilder actual = build(), expected = build();
    EXPECT_TRUE(matches(actual, expected));
  }
  {  // C that does not broadcast
    GraphBuilder g(13);
    g.output(g.op("Gemm", {g.input(random_floats({3, 4}, rng)), g.input(random_floats({4, 5}, rng)),
                           g.input(random_floats({2, 5}, rng))}));
    auto session = Session::create(std::move(g.model()), optimized());
    ASSERT_TRUE(session) << session.error();
    auto result = session.value()->run(g.feeds());
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find("'Gemm_0'"), std::string::npos) << result.error();
  }
}

// ---------------------------------------------------------------------------------------
// FusedMatMul against MatMul (+ Transpose) + Mul + Add + the activation's ONNX ops.

struct ActivationCase {
  std::string name;
  std::vector<float> params;
};

const std::vector<ActivationCase> kActivationCases = {
    {"", {}},
    {"Relu", {}},
    {"LeakyRelu", {0.2f}},
    {"LeakyRelu", {}},
    {"Clip", {-0.5f, 0.75f}},
    {"Sigmoid", {}},
    {"Tanh", {}},
    {"HardSigmoid", {0.3f, 0.4f}},
    {"HardSigmoid", {}},
    {"HardSwish", {}},
    {"Silu", {}},
    {"Gelu", {}},
    {"GeluTanh", {}},
};

// The activation of `x` as standard ONNX ops (opset 14).
Value* unfused_activation(GraphBuilder& g, const ActivationCase& act, Value* x) {
  auto param = [&](size_t i, float fallback) {
    return act.params.empty() ? fallback : act.params[i];
  };
  if (act.name.empty()) return x;
  if (act.name == "Relu" || act.name == "Sigmoid" || act.name == "Tanh" ||
      act.name == "HardSwish") {
    return g.op(act.name, {x});
  }
  if (act.name == "LeakyRelu") {
    return g.op("LeakyRelu", {x}, [&](Node* n) { set_float(n, "alpha", param(0, 0.01f)); });
  }
  if (act.name == "HardSigmoid") {
    return g.op("HardSigmoid", {x}, [&](Node* n) {
      set_float(n, "alpha", param(0, 0.2f));
      set_float(n, "beta", param(1, 0.5f));
    });
  }
  if (act.name == "Clip")
    return g.op("Clip", {x, g.scalar(act.params[0]), g.scalar(act.params[1])});
  if (act.name == "Silu") return g.op("Mul", {x, g.op("Sigmoid", {x})});
  if (act.name == "Gelu") {
    Value* erf = g.op("Erf", {g.op("Div", {x, g.scalar(std::sqrt(2.0f))})});
    return g.op("Mul", {g.op("Mul", {x, g.scalar(0.5f)}), g.op("Add", {erf, g.scalar(1.0f)})});
  }
  // GeluTanh: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
  Value* cube = g.op("Mul", {g.op("Mul", {x, x}), x});
  Value* inner = g.op("Add", {x, g.op("Mul", {cube, g.scalar(0.044715f)})});
  Value* t = g.op("Tanh", {g.op("Mul", {inner, g.scalar(std::sqrt(2.0f / 3.14159265358979f))})});
  return g.op("Mul", {g.op("Mul", {x, g.scalar(0.5f)}), g.op("Add", {t, g.scalar(1.0f)})});
}

// op(X): X with its last two dims swapped.
Value* transposed(GraphBuilder& g, Value* x, size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return g.op("Transpose", {x}, [&](Node* n) { set_ints(n, "perm", perm); });
}

struct FusedCase {
  Shape a, b;  // as stored (before op())
  bool trans_a, trans_b;
};

// `symbolic_rows`: A declared [?, K] (or [?, ?, K]), so constant B is packed at creation
// for rows not yet known.
void check_fused(const FusedCase& c, const ActivationCase& act, float alpha, bool with_bias,
                 bool constant_b, std::mt19937_64& rng, bool symbolic_rows = false) {
  const Tensor a = random_floats(c.a, rng), b = random_floats(c.b, rng);
  const int64_t n = c.b.size() == 1 ? 1 : (c.trans_b ? c.b[c.b.size() - 2] : c.b.back());
  const Tensor bias = random_floats({n}, rng);
  GraphBuilder fused;
  {
    Value* a_value = fused.input(a);
    if (symbolic_rows) {
      std::vector<Dim> dims(c.a.size(), Dim{});
      dims.back() = Dim::known(c.a.back());
      a_value->set_type(ValueType::tensor(DType::kFloat, dims));
    }
    std::vector<Value*> inputs{a_value, constant_b ? fused.constant(b) : fused.input(b)};
    if (with_bias) inputs.push_back(fused.constant(bias));
    fused.output(fused.op(
        "FusedMatMul", inputs,
        [&](Node* node) {
          set_int(node, "trans_a", c.trans_a);
          set_int(node, "trans_b", c.trans_b);
          set_float(node, "alpha", alpha);
          if (!act.name.empty()) set_string(node, "activation", act.name);
          if (!act.params.empty()) set_floats(node, "activation_params", act.params);
        },
        std::string(kOnnxkitDomain)));
  }
  GraphBuilder unfused;
  {
    Value* av = unfused.input(a);
    Value* bv = unfused.input(b);
    if (c.trans_a && c.a.size() >= 2) av = transposed(unfused, av, c.a.size());
    if (c.trans_b && c.b.size() >= 2) bv = transposed(unfused, bv, c.b.size());
    Value* y = unfused.op("MatMul", {av, bv});
    if (alpha != 1.0f) y = unfused.op("Mul", {y, unfused.scalar(alpha)});
    if (with_bias) y = unfused.op("Add", {y, unfused.constant(bias)});
    unfused.output(unfused_activation(unfused, act, y));
  }
  EXPECT_TRUE(matches(fused, unfused));
}

TEST(DnnlFusedMatMul, EveryActivationMatchesTheUnfusedGraph) {
  std::mt19937_64 rng(10);
  for (const ActivationCase& act : kActivationCases) {
    for (float alpha : {1.0f, 0.125f}) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(fmt::format("activation='{}' params={} alpha={} bias={}", act.name,
                                 act.params.size(), alpha, with_bias));
        check_fused({{2, 17, 33}, {33, 65}, false, false}, act, alpha, with_bias, true, rng);
      }
    }
  }
}

// One row against weights packed at creation for unknown rows: the one-row path (its own
// AVX-512 loop over the packed panels), with every epilogue; 65 and 70 columns leave a
// partial panel, 33 and 7 rows of K a remainder of its unrolled loop.
TEST(DnnlFusedMatMul, OneRowAgainstWeightsPackedForUnknownRows) {
  std::mt19937_64 rng(12);
  for (const ActivationCase& act : kActivationCases) {
    for (float alpha : {1.0f, 0.125f}) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(fmt::format("activation='{}' params={} alpha={} bias={}", act.name,
                                 act.params.size(), alpha, with_bias));
        check_fused({{1, 1, 33}, {33, 65}, false, false}, act, alpha, with_bias, true, rng, true);
        check_fused({{1, 7}, {70, 7}, false, true}, act, alpha, with_bias, true, rng, true);
      }
    }
  }
  // Below AVX-512 the row goes to oneDNN, from the same packed layout.
  const SimdLevelOverride avx2(SimdLevel::kAvx2);
  check_fused({{1, 1, 33}, {33, 65}, false, false}, {"Relu", {}}, 0.5f, true, true, rng, true);
}

TEST(DnnlFusedMatMul, TransposesAndBroadcasting) {
  std::mt19937_64 rng(11);
  const std::vector<FusedCase> cases = {
      {{3, 7}, {7, 5}, false, false},         {{7, 3}, {7, 5}, true, false},
      {{3, 7}, {5, 7}, false, true},          {{7, 3}, {5, 7}, true, true},
      {{2, 7, 3}, {5, 7}, true, true},        {{2, 1, 7, 3}, {3, 7, 5}, true, false},
      {{2, 1, 5, 7}, {3, 4, 7}, false, true}, {{7}, {5, 7}, true, true},
      {{2, 3, 7}, {7}, false, true},          {{1, 129}, {1, 129}, false, true},
      {{129, 17}, {129, 1}, true, false},
  };
  const ActivationCase relu{"Relu", {}}, gelu{"Gelu", {}};
  for (const FusedCase& c : cases) {
    for (bool constant_b : {false, true}) {
      SCOPED_TRACE(describe(c.a, c.b) + fmt::format(" trans_a={} trans_b={} constant_b={}",
                                                    c.trans_a, c.trans_b, constant_b));
      check_fused(c, gelu, 0.5f, true, constant_b, rng);
      check_fused(c, relu, 1.0f, false, constant_b, rng);
    }
  }
}

TEST(DnnlFusedMatMul, RejectsBadAttributesAndBias) {
  std::mt19937_64 rng(12);
  auto build = [&](const std::string& activation, std::vector<float> params, Shape bias_shape) {
    GraphBuilder g;
    std::vector<Value*> inputs{g.input(random_floats({3, 4}, rng)),
                               g.input(random_floats({4, 5}, rng))};
    if (!bias_shape.empty()) inputs.push_back(g.input(random_floats(bias_shape, rng)));
    g.output(g.op(
        "FusedMatMul", inputs,
        [&](Node* node) {
          set_string(node, "activation", activation);
          if (!params.empty()) set_floats(node, "activation_params", params);
        },
        std::string(kOnnxkitDomain)));
    return g;
  };
  {
    GraphBuilder g = build("Swoosh", {}, {});
    auto session = Session::create(std::move(g.model()), optimized());
    ASSERT_FALSE(session);
    EXPECT_NE(session.error().find("Swoosh"), std::string::npos) << session.error();
  }
  {
    GraphBuilder g = build("Clip", {1.0f}, {});
    EXPECT_FALSE(Session::create(std::move(g.model()), optimized()));
  }
  {
    GraphBuilder g = build("Relu", {}, {3, 5});
    auto session = Session::create(std::move(g.model()), optimized());
    ASSERT_TRUE(session) << session.error();
    auto result = session.value()->run(g.feeds());
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find("FusedMatMul"), std::string::npos) << result.error();
  }
}

}  // namespace
}  // namespace onnxkit
