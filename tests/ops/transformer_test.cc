// Unit tests of the transformer op family (Attention 23-25, RMSNormalization, RotaryEmbedding,
// TensorScatter, LinearAttention, SwiGLU, FlexAttention). Expected values were computed with
// numpy from the ops' definitions (straight softmax, explicit masks and loops), not with
// onnx's reference implementation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"
#include "ops/registry.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Runs one node whose outputs are `outputs` ("" omits one) and returns those named.
std::vector<Tensor> run_outputs(const std::string& op, std::vector<Tensor> inputs, int64_t opset,
                                SetAttributes attributes, std::vector<std::string> outputs,
                                const SessionOptions& options = SessionOptions::reference()) {
  NodeCase c(op, std::move(inputs), opset, std::move(attributes));
  c.outputs = std::move(outputs);
  return run_node(c, options);
}

ValueType f32_type() {
  return ValueType::tensor(DType::kFloat);
}

// Case 1: Q [1, 2, 2, 2], K and V [1, 2, 3, 2].
Tensor q1() {
  return floats({1, 2, 2, 2}, {0.09983342f, 0.7173561f, 0.997495f, 0.8084964f, 0.2392493f,
                               -0.4425204f, -0.9161659f, -0.9589243f});
}
Tensor k1() {
  return floats({1, 2, 3, 2},
                {0.2955202f, 0.9320391f, 0.8632094f, 0.14112f, -0.6877662f, -0.9961646f,
                 -0.5506855f, 0.3115414f, 0.938f, 0.8545989f, 0.1244544f, -0.6998747f});
}
Tensor v1() {
  return floats({1, 2, 3, 2},
                {0.4794255f, 0.9738476f, 0.04158066f, -0.9516021f, -0.5506855f, 0.6569866f,
                 0.9021718f, -0.1743268f, -0.9954363f, -0.3582293f, 0.8037844f, 0.7882521f});
}

TEST(OnnxAttention, FourDimensionalMatchesSoftmaxOfScaledScores) {
  for (int64_t opset : {23, 24, 25}) {
    expect_near(run_one("Attention", {q1(), k1(), v1()}, opset),
                {0.153934f, 0.2642754f, 0.2020786f, 0.08474733f, 0.2920336f, 0.1792242f, 0.6560063f,
                 0.2913539f});
  }
}

TEST(OnnxAttention, PackedGroupedQueryCausalWithPast) {
  // Q [1, 2, 2 heads * 2], K/V [1, 2, 1 head * 2], one cached position: query i sees keys
  // j <= i + 1; both query heads read the one K/V head.
  Tensor q = floats({1, 2, 4}, {0.1986693f, 0.6442177f, 0.9320391f, 0.9916648f, 0.8084964f,
                                0.4273799f, -0.05837414f, -0.5298361f});
  Tensor k = floats({1, 2, 2}, {0.3894183f, 0.9320391f, 0.9092974f, 0.3349882f});
  Tensor v = floats({1, 2, 2}, {0.5646425f, 0.9916648f, 0.3349882f, -0.6877662f});
  Tensor past_key = floats({1, 1, 1, 2}, {0.841471f, 0.9635582f});
  Tensor past_value = floats({1, 1, 1, 2}, {0.997495f, 0.8632094f});
  SetAttributes attrs = [](Node* n) {
    set_int(n, "is_causal", 1);
    set_int(n, "q_num_heads", 2);
    set_int(n, "kv_num_heads", 1);
  };
  auto out = run_outputs("Attention", {q, k, v, Tensor(), past_key, past_value}, 23, attrs,
                         {"y", "present_key", "present_value"});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 4}));
  expect_near(out[0], {0.7894902f, 0.9249379f, 0.8154073f, 0.9172466f, 0.654339f, 0.392628f,
                       0.6080778f, 0.3090239f});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 3, 2}));
  expect_near(out[1], {0.841471f, 0.9635582f, 0.3894183f, 0.9320391f, 0.9092974f, 0.3349882f});
  EXPECT_EQ(out[2].shape(), (Shape{1, 1, 3, 2}));
}

TEST(OnnxAttention, SoftcapAppliesBeforeSoftmaxAndShowsInScores) {
  SetAttributes attrs = [](Node* n) {
    set_float(n, "scale", 0.25f);
    set_float(n, "softcap", 0.5f);
    set_int(n, "qk_matmul_output_mode", 1);
  };
  auto out = run_outputs("Attention", {q1(), k1(), v1()}, 23, attrs, {"y", "", "", "qk"});
  expect_near(out[0], {0.0501638f, 0.2286893f, 0.08004902f, 0.1611131f, 0.2545892f, 0.1171107f,
                       0.4002045f, 0.1599527f});
  EXPECT_EQ(out[1].shape(), (Shape{1, 2, 2, 3}));
  expect_near(out[1],
              {0.1677679f, 0.04671596f, -0.1863838f, 0.2404541f, 0.2261432f, -0.3162941f,
               -0.06699828f, -0.03836485f, 0.0840653f, 0.05126293f, -0.3427534f, 0.1357826f});
}

TEST(OnnxAttention, FullyMaskedRowGivesZerosAndPaddedMaskMasksTheRest) {
  // A bool mask of 2 keys for 3: key 2 is masked by the padding; query 0 masks keys 0 and 1
  // too, so it sees nothing: its output and probabilities are 0, not NaN.
  Tensor mask = Tensor::from_vector<bool>(DType::kBool, {2, 2}, {false, false, true, true});
  auto out = run_outputs("Attention", {q1(), k1(), v1(), mask}, 24,
                         with_int("qk_matmul_output_mode", 3), {"y", "", "", "p"});
  const std::vector<float> y = values_of<float>(out[0]);
  const std::vector<float> p = values_of<float>(out[1]);
  for (int h = 0; h < 2; ++h) {
    for (int c = 0; c < 2; ++c) EXPECT_EQ(y[h * 4 + c], 0.0f);  // query 0
    for (int j = 0; j < 3; ++j) EXPECT_EQ(p[h * 6 + j], 0.0f);  // query 0's row
    EXPECT_NEAR(p[h * 6 + 3] + p[h * 6 + 4], 1.0f, 1e-6f);      // query 1 sees keys 0, 1
    EXPECT_EQ(p[h * 6 + 5], 0.0f);
  }
}

TEST(OnnxAttention, SlidingWindowFromVersion25) {
  // left_window_size 0 with is_causal: each query sees only the key at its own position.
  SetAttributes attrs = [](Node* n) {
    set_int(n, "is_causal", 1);
    set_int(n, "left_window_size", 0);
  };
  Tensor y = run_one("Attention", {q1(), k1(), v1()}, 25, attrs);
  const std::vector<float> v = values_of<float>(v1());
  const std::vector<float> got = values_of<float>(y);
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 2; ++i) {
      for (int c = 0; c < 2; ++c)
        EXPECT_NEAR(got[(h * 2 + i) * 2 + c], v[(h * 3 + i) * 2 + c], 1e-6f);
    }
  }
}

TEST(OnnxAttention, BadInputsFailNamingTheNode) {
  Tensor q3 = floats({1, 2, 4}, std::vector<float>(8, 0.5f));
  EXPECT_NE(run_error("Attention", {q3, q3, q3}, 23).find("q_num_heads"), std::string::npos);
  Tensor k_bad = floats({1, 2, 3, 3}, std::vector<float>(18, 0.5f));
  EXPECT_NE(run_error("Attention", {q1(), k_bad, v1()}, 23).find("node0"), std::string::npos);
  Tensor nonpad = int64s({1}, {2});
  expect_error(
      [&] {
        run_one("Attention", {q1(), k1(), v1(), Tensor(), Tensor(), Tensor(), nonpad}, 23);
      },
      "nonpad_kv_seqlen");
}

TEST(OnnxAttention, HalfTypesRoundLikeTheirType) {
  // float16 in, float16 out, close to the float32 result.
  auto to_half = [](const Tensor& t) {
    std::vector<Float16> h;
    for (float x : values_of<float>(t)) h.emplace_back(x);
    return Tensor::from_vector<Float16>(DType::kFloat16, t.shape(), h);
  };
  Tensor y = run_one("Attention", {to_half(q1()), to_half(k1()), to_half(v1())}, 23);
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  const std::vector<float> expected{0.153934f,  0.2642754f, 0.2020786f, 0.08474733f,
                                    0.2920336f, 0.1792242f, 0.6560063f, 0.2913539f};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(static_cast<float>(y.data<Float16>()[i]), expected[i], 2e-3f) << i;
  }
}

// The optimized ai.onnx Attention (the fused kernel) against the reference kernel.
TEST(OnnxAttention, OptimizedKernelMatchesReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  auto random = [&](Shape shape) {
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (float& x : v) x = normal(rng);
    return floats(shape, v);
  };
  for (bool causal : {false, true}) {
    for (auto [sq, sk, d] : {std::tuple{5, 5, 8}, {7, 19, 16}, {1, 33, 64}, {20, 20, 3}}) {
      Tensor q = random({2, 3, sq, d}), k = random({2, 3, sk, d}), v = random({2, 3, sk, 5});
      SetAttributes attrs = with_int("is_causal", causal ? 1 : 0);
      const Tensor expected = run_one("Attention", {q, k, v}, 23, attrs);
      for (int64_t opset : {23, 24, 25}) {
        const Tensor got =
            run_outputs("Attention", {q, k, v}, opset, attrs, {"y"}, testing::optimized(2))[0];
        expect_near(got, values_of<float>(expected), 1e-5f);
      }
    }
  }
  // Cases the fast kernel declines (GQA, a mask, softcap) still run, on the reference.
  Tensor q = random({1, 4, 3, 8}), k = random({1, 2, 3, 8}), v = random({1, 2, 3, 8});
  const Tensor expected = run_one("Attention", {q, k, v}, 24);
  expect_near(run_outputs("Attention", {q, k, v}, 24, {}, {"y"}, testing::optimized())[0],
              values_of<float>(expected), 1e-6f);
}

// Which kernel the optimized tier gives an ai.onnx Attention node: the fused one where the
// semantics agree, the reference one otherwise.
TEST(OnnxAttention, OptimizedKernelServesPlainAndCausalNodesOnly) {
  auto kernel_types = [](int64_t opset, const SetAttributes& attributes, size_t inputs) {
    Graph graph;
    std::vector<Value*> values;
    for (size_t i = 0; i < inputs; ++i) {
      values.push_back(graph.add_input("in" + std::to_string(i), f32_type()));
    }
    Node* node = graph.add_node("Attention", values, {"y"}, "", "node0");
    if (attributes) attributes(node);
    const KernelCreateContext context(*node, opset, builtin_registry());
    auto chosen = builtin_registry().create_kernel(context, KernelTier::kOptimized);
    auto reference = builtin_registry().create_reference_kernel(context);
    return std::pair{std::string(typeid(*chosen).name()), std::string(typeid(*reference).name())};
  };
  for (int64_t opset : {23, 24, 25}) {
    auto [plain, reference] = kernel_types(opset, {}, 3);
    EXPECT_NE(plain, reference) << opset;
    EXPECT_NE(kernel_types(opset, with_int("is_causal", 1), 3).first, reference) << opset;
    auto softcap = kernel_types(
        opset, [](Node* n) { set_float(n, "softcap", 2.0f); }, 3);
    EXPECT_EQ(softcap.first, softcap.second) << opset;
    auto masked = kernel_types(opset, {}, 4);
    EXPECT_EQ(masked.first, masked.second) << opset;
  }
}

TEST(RMSNormalization, LastAxisAndWholeTensor) {
  Tensor x = floats({2, 3}, {0.596008f, 2.673622f, 2.727892f, 0.717748f, -1.835574f, -2.99977f});
  expect_near(run_one("RMSNormalization", {x, floats({3}, {0.5f, 1.0f, 2.0f})}, 23),
              {0.1335169f, 1.197882f, 2.444394f, 0.1731776f, -0.8857712f, -2.895127f});
  Tensor w =
      floats({2, 3}, {0.7833269f, 0.9635582f, 0.9916648f, 0.8632094f, 0.5984721f, 0.2392493f});
  expect_near(run_one("RMSNormalization", {x, w}, 23, with_int("axis", 0)),
              {0.2167851f, 1.196223f, 1.256106f, 0.2876884f, -0.5100938f, -0.3332521f});
  expect_error(
      [&] {
        run_one("RMSNormalization", {x, w}, 23, with_int("stash_type", 0));
      },
      "stash_type");
}

TEST(RMSNormalization, OptimizedKernelMatchesReference) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  auto random = [&](Shape shape) {
    std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
    for (float& x : v) x = normal(rng);
    return floats(shape, v);
  };
  struct Case {
    Shape x, scale;
    int64_t axis;
  };
  // Row lengths around the 8-lane blocks, a scale with leading ones, a whole-tensor axis,
  // and a scale that broadcasts inside the row (the reference kernel's case).
  for (const Case& c : std::vector<Case>{{{3, 5, 17}, {17}, -1},
                                         {{2, 64}, {1, 64}, 1},
                                         {{4, 3, 8}, {3, 8}, 1},
                                         {{2, 3, 9}, {2, 3, 9}, 0},
                                         {{2, 6, 4}, {1, 4}, -2},
                                         {{1, 1000}, {1000}, -1}}) {
    Tensor x = random(c.x), scale = random(c.scale);
    SetAttributes attrs = [axis = c.axis](Node* n) {
      set_int(n, "axis", axis);
      set_float(n, "epsilon", 1e-3f);
    };
    const Tensor expected = run_one("RMSNormalization", {x, scale}, 23, attrs);
    const Tensor got =
        run_outputs("RMSNormalization", {x, scale}, 23, attrs, {"y"}, testing::optimized(2))[0];
    expect_near(got, values_of<float>(expected), 1e-5f);
  }
}

TEST(RotaryEmbedding, InterleavedWithPositionIds) {
  Tensor x = floats({1, 1, 2, 4}, {0.2955202f, 0.7833269f, 0.997495f, 0.8632094f, 0.4273799f,
                                   -0.1577457f, -0.6877662f, -0.9775301f});
  Tensor cos_cache = floats({2, 2}, {1, 1, 0.8775826f, 0.9689124f});
  Tensor sin_cache = floats({2, 2}, {0, 0, 0.4794255f, 0.247404f});
  Tensor y = run_one("RotaryEmbedding", {x, cos_cache, sin_cache, int64s({1, 2}, {1, 0})}, 23,
                     with_int("interleaved", 1));
  expect_near(y, {-0.1162035f, 0.829114f, 0.7529239f, 1.083158f, 0.4273799f, -0.1577457f,
                  -0.6877662f, -0.9775301f});
}

TEST(RotaryEmbedding, PartialRotationOfPackedHeadsLeavesTheRest) {
  // 3-D [B, S, heads * 4], rotary_embedding_dim 2: only each head's first two values turn
  // (halves of the rotated part: x0 with x1), by the per-position caches [B, S, 1].
  Tensor x = floats({1, 1, 8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor cos_cache = floats({1, 1, 1}, {0});
  Tensor sin_cache = floats({1, 1, 1}, {1});
  SetAttributes attrs = [](Node* n) {
    set_int(n, "num_heads", 2);
    set_int(n, "rotary_embedding_dim", 2);
  };
  expect_near(run_one("RotaryEmbedding", {x, cos_cache, sin_cache}, 23, attrs),
              {-2, 1, 3, 4, -6, 5, 7, 8});
}

TEST(TensorScatter, LinearAndCircularWrites) {
  // Cache [2, 4, 1]: batch 0 writes its 2 updates at 1, batch 1 at 3 (wrapping to 0).
  Tensor cache = floats({2, 4, 1}, {0, 0, 0, 0, 0, 0, 0, 0});
  Tensor update = floats({2, 2, 1}, {1, 2, 3, 4});
  expect_near(run_one("TensorScatter", {cache, update, int64s({2}, {1, 2})}, 24),
              {0, 1, 2, 0, 0, 0, 3, 4});
  expect_near(run_one("TensorScatter", {cache, update, int64s({2}, {1, 3})}, 24,
                      with_string("mode", "circular")),
              {0, 1, 2, 0, 4, 0, 0, 3});
  expect_error(
      [&] {
        run_one("TensorScatter", {cache, update, int64s({2}, {1, 3})}, 24);
      },
      "outside");
  // Any element type: int64, no write_indices (0 for every batch).
  Tensor ic = int64s({1, 3}, {7, 8, 9});
  EXPECT_EQ(values_of<int64_t>(
                run_one("TensorScatter", {ic, int64s({1, 1}, {5})}, 24, with_int("axis", 1))),
            (std::vector<int64_t>{5, 8, 9}));
}

TEST(SwiGLU, AlphaScalesTheGate) {
  Tensor a = floats({2, 3}, {0, 1.288435f, 1.970899f, 1.726419f, 0.6699763f, -0.7015665f});
  Tensor b =
      floats({2, 3}, {0.4794255f, 0.7173561f, 0.8912074f, 0.9854497f, 0.9916648f, 0.9092974f});
  SetAttributes attrs = [](Node* n) { set_float(n, "alpha", 1.702f); };
  expect_near(run_one("SwiGLU", {a, b}, 28, attrs),
              {0, 0.8314813f, 1.697201f, 1.615742f, 0.5034328f, -0.1483401f});
  expect_error([&] { run_one("SwiGLU", {a, floats({3}, {1, 2, 3})}, 28); }, "same shape");
}

TEST(LinearAttention, GatedDeltaWithGroupedHeads) {
  Tensor q = floats({1, 2, 4}, {0.09983342f, 0.5646425f, 0.8912074f, 0.9995736f, 0.8632094f,
                                0.5155014f, 0.04158066f, -0.4425204f});
  Tensor k = floats({1, 2, 2}, {0.1986693f, 0.7833269f, 0.9995736f, 0.7457052f});
  Tensor v = floats({1, 2, 2}, {0.2955202f, 0.9320391f, 0.8632094f, 0.14112f});
  Tensor decay = floats({1, 2, 1}, {-0.1f, -0.3f});
  Tensor beta = floats({1, 2, 1}, {0.5f, 0.8f});
  SetAttributes attrs = [](Node* n) {
    set_int(n, "q_num_heads", 2);
    set_int(n, "kv_num_heads", 1);
  };
  auto out =
      run_outputs("LinearAttention", {q, k, v, Tensor(), decay, beta}, 27, attrs, {"out", "state"});
  expect_near(out[0], {0.04828471f, 0.1522848f, 0.1003079f, 0.3163605f, 0.5931186f, 0.04935335f,
                       -0.1530522f, -0.06154015f});
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 2, 2}));
  expect_near(out[1], {0.6435063f, -0.03464933f, 0.5495926f, 0.1934152f});
  // The rule decides which inputs exist.
  expect_error(
      [&] {
        run_outputs("LinearAttention", {q, k, v}, 27, attrs, {"out", "state"});
      },
      "decay");
}

TEST(FlexAttention, GroupedHeadsWithScale) {
  Tensor q = floats({1, 2, 2, 2}, {0.1986693f, 0.5646425f, 0.841471f, 0.9854497f, 0.9738476f,
                                   0.8084964f, 0.5155014f, 0.14112f});
  Tensor k = floats({1, 1, 3, 2},
                    {0.09983342f, 0.6442177f, 0.9635582f, 0.9463001f, 0.5984721f, 0.04158066f});
  Tensor v = floats({1, 1, 3, 2},
                    {0.7173561f, 0.9916648f, 0.5155014f, -0.3507832f, -0.9516021f, -0.8322674f});
  SetAttributes attrs = [](Node* n) { set_float(n, "scale", 0.5f); };
  NodeCase c("FlexAttention", {q, k, v}, 23, attrs);
  c.domain = "ai.onnx.preview";
  expect_near(run_node(c)[0], {0.1580096f, -0.05280845f, 0.1967752f, -0.0994588f, 0.1756845f,
                               -0.1192236f, 0.1004759f, -0.1078529f});
}

// ---- type inference ----

// A context over a node whose inputs carry their declared types.
class DeclaredTypes : public TypeInferenceContext {
 public:
  DeclaredTypes(const Node& node, int64_t opset) : node_(node), opset_(opset) {}
  const Node& node() const override { return node_; }
  int64_t opset() const override { return opset_; }
  const ValueType* input_type(size_t i) const override {
    return has_input(i) ? &node_.inputs()[i]->type() : nullptr;
  }
  const Tensor* input_value(size_t) const override { return nullptr; }
  std::vector<ValueType> infer_subgraph(const Graph&, std::span<const ValueType>) override {
    return {};
  }
  void set_output(size_t i, ValueType type) override {
    if (outputs.size() <= i) outputs.resize(i + 1);
    outputs[i] = std::move(type);
  }
  std::vector<ValueType> outputs;

 private:
  const Node& node_;
  int64_t opset_;
};

std::vector<Dim> dims(std::vector<int64_t> values) {
  std::vector<Dim> result;
  for (int64_t v : values) result.push_back(v < 0 ? Dim::symbol("n") : Dim::known(v));
  return result;
}

// Infers `op`'s outputs from inputs of these types (kUndefined: omitted).
std::vector<ValueType> infer(const std::string& op, const std::vector<ValueType>& inputs,
                             size_t num_outputs, int64_t opset,
                             const SetAttributes& attributes = {}, const std::string& domain = "") {
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(inputs[i].elem_type == DType::kUndefined
                         ? nullptr
                         : graph.add_input("in" + std::to_string(i), inputs[i]));
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < num_outputs; ++i) names.push_back("out" + std::to_string(i));
  Node* node = graph.add_node(op, values, names, domain, "node0");
  if (attributes) attributes(node);
  const OpDefinition* definition = builtin_registry().definition(*node, opset);
  EXPECT_TRUE(definition && definition->infer_types) << op;
  DeclaredTypes context(*node, opset);
  if (definition && definition->infer_types) definition->infer_types(context);
  context.outputs.resize(num_outputs);
  return context.outputs;
}

ValueType f32(std::vector<int64_t> shape) {
  return ValueType::tensor(DType::kFloat, dims(std::move(shape)));
}

TEST(TransformerTypes, AttentionShapes) {
  // 3-D with a cache: Y [B, Sq, Hq * Dv], present [B, Hkv, past + Skv, D], scores [B, Hq,
  // Sq, past + Skv].
  SetAttributes heads = [](Node* n) {
    set_int(n, "q_num_heads", 4);
    set_int(n, "kv_num_heads", 2);
  };
  auto out = infer("Attention",
                   {f32({-1, 3, 32}), f32({-1, 5, 16}), f32({-1, 5, 24}), ValueType(),
                    f32({-1, 2, 7, 8}), f32({-1, 2, 7, 12})},
                   4, 23, heads);
  EXPECT_EQ(out[0], f32({-1, 3, 48}));
  EXPECT_EQ(out[1], f32({-1, 2, 12, 8}));
  EXPECT_EQ(out[2], f32({-1, 2, 12, 12}));
  EXPECT_EQ(out[3], f32({-1, 4, 3, 12}));
  // 4-D without a cache.
  out = infer("Attention", {f32({2, 8, 3, 16}), f32({2, 2, 9, 16}), f32({2, 2, 9, 4})}, 1, 24);
  EXPECT_EQ(out[0], f32({2, 8, 3, 4}));
}

TEST(TransformerTypes, OtherOps) {
  EXPECT_EQ(infer("RMSNormalization",
                  {f32({2, -1, 8}), ValueType::tensor(DType::kFloat16, dims({8}))}, 1, 23)[0],
            ValueType::tensor(DType::kFloat16, dims({2, -1, 8})));
  EXPECT_EQ(infer("RotaryEmbedding", {f32({1, 4, 3, 8}), f32({3, 4}), f32({3, 4})}, 1, 23)[0],
            f32({1, 4, 3, 8}));
  EXPECT_EQ(infer("SwiGLU", {f32({2, 3}), f32({2, 3})}, 1, 28)[0], f32({2, 3}));
  EXPECT_EQ(infer("TensorScatter", {f32({2, 9, 4}), f32({2, 1, 4})}, 1, 24)[0], f32({2, 9, 4}));
  SetAttributes heads = [](Node* n) {
    set_int(n, "q_num_heads", 4);
    set_int(n, "kv_num_heads", 2);
  };
  auto linear =
      infer("LinearAttention", {f32({1, 7, 32}), f32({1, 7, 16}), f32({1, 7, 12})}, 2, 27, heads);
  EXPECT_EQ(linear[0], f32({1, 7, 24}));
  EXPECT_EQ(linear[1], f32({1, 2, 8, 6}));
  EXPECT_EQ(infer("FlexAttention", {f32({1, 4, 3, 8}), f32({1, 2, 5, 8}), f32({1, 2, 5, 6})}, 1, 1,
                  {}, "ai.onnx.preview")[0],
            f32({1, 4, 3, 6}));
}

}  // namespace
}  // namespace onnxkit
