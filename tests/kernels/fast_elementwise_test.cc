// The fast elementwise kernels (src/kernels/fast_elementwise.cc) against the reference
// kernels: every broadcasting pattern, odd sizes, special values, every SIMD level.
#include <gtest/gtest.h>

#include "fast_kernel_test_util.h"

namespace onnxkit::testing {
namespace {

struct ShapePair {
  Shape a, b;
};

const std::vector<ShapePair>& broadcast_patterns() {
  static const std::vector<ShapePair> patterns = {
      {{1}, {1}},
      {{15}, {15}},
      {{17}, {17}},
      {{1023}, {1023}},
      {{70001}, {70001}},         // parallel split of one row
      {{4, 5}, {}},               // scalar right
      {{}, {4, 5}},               // scalar left
      {{1, 1}, {3, 17}},          // one-element left with rank
      {{4, 17, 33}, {33}},        // trailing
      {{128, 768}, {768}},        // BERT bias add
      {{2, 3, 5, 7}, {3, 1, 1}},  // channel
      {{1, 16, 7, 7}, {1, 16, 1, 1}},
      {{3, 1, 1}, {2, 3, 5, 7}},  // channel on the left
      {{4, 1, 5}, {1, 3, 1}},     // both broadcast
      {{2, 3, 4, 5}, {2, 1, 4, 1}},
      {{5, 1}, {1, 6}},                      // outer product
      {{2, 1, 3}, {4, 1}},                   // non-contiguous broadcast
      {{1, 12, 128, 128}, {1, 1, 1, 128}},   // attention mask add
      {{300, 257}, {300, 1}},                // per-row scalar, many rows in parallel
      {{0, 3}, {3}},                         // empty
      {{1, 9, 7, 7, 16}, {1, 9, 1, 1, 16}},  // per-channel scale of a blocked activation
      {{1, 9, 1, 1, 16}, {1, 9, 7, 7, 16}},  // the same on the left (SE's Mul(scale, x))
      {{2, 3, 5, 24}, {24}},                 // repeated rows of 24 (not a whole vector)
      {{4, 6, 40}, {4, 1, 40}},              // a pattern per group of rows
      {{2, 300, 16}, {2, 1, 16}},            // many rows: split across threads
  };
  return patterns;
}

TEST(FastElementwise, ArithmeticMatchesReferenceExactly) {
  uint32_t seed = 1;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const ShapePair& p : broadcast_patterns()) {
      // Big shapes (parallel splits) once; threads are slow to wake on a loaded machine.
      if (shape_numel(p.a) + shape_numel(p.b) > 50000 && std::string(op) != "Add") continue;
      NodeCase c{op,
                 {random_floats(p.a, seed++, 1.0f, true), random_floats(p.b, seed++, 1.0f, true)}};
      for (int64_t opset : {7, 13, 14}) {
        if (opset != 14 && std::string(op) != "Add") continue;  // one op covers the versions
        c.opset = opset;
        expect_fast_matches_reference(c, 0, 0,
                                      std::string(op) + " " + shape_to_string(p.a) + " " +
                                          shape_to_string(p.b) + " opset " + std::to_string(opset));
      }
    }
  }
}

TEST(FastElementwise, OtherTypesAndLegacyBroadcastUseTheReference) {
  Tensor a = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {1, 2, 3});
  Tensor b = Tensor::from_vector<int32_t>(DType::kInt32, {3}, {4, 5, -6});
  const std::vector<Tensor> out = run_node({"Mul", {a, b}, 14}, fast_options());
  EXPECT_EQ(out[0].data<int32_t>()[2], -18);
  // Opset 6 broadcasting (broadcast=1, axis) is the reference kernel's.
  NodeCase legacy{"Add", {random_floats({2, 3, 4}, 1), random_floats({3}, 2)}, 6, [](Node* node) {
                    set_int(node, "broadcast", 1);
                    set_int(node, "axis", 1);
                  }};
  EXPECT_FALSE(has_fast_kernel(legacy));
  // Incompatible shapes fail naming the node.
  try {
    run_node({"Add", {random_floats({2, 3}, 1), random_floats({4}, 2)}, 14}, fast_options());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node0"), std::string::npos) << e.what();
  }
}

TEST(FastElementwise, UnaryOpsMatchReference) {
  struct Case {
    const char* op;
    double rtol, atol;
    std::function<void(Node*)> attributes;
  };
  const std::vector<Case> cases = {
      {"Relu", 0, 0, {}},
      {"Neg", 0, 0, {}},
      {"Abs", 0, 0, {}},
      {"Sqrt", 0, 0, {}},
      {"Reciprocal", 0, 0, {}},
      {"LeakyRelu", 0, 0, [](Node* n) { set_float(n, "alpha", 0.1f); }},
      {"LeakyRelu", 0, 0, {}},
      {"HardSigmoid", 3e-7, 1e-7,
       [](Node* n) {
         set_float(n, "alpha", 0.3f);
         set_float(n, "beta", 0.4f);
       }},
      {"HardSwish", 3e-7, 1e-7, {}},
      {"Sigmoid", 1e-6, 1e-37, {}},
      {"Tanh", 1e-6, 1e-37, {}},
      {"Erf", 1e-6, 1e-37, {}},
      {"Exp", 1e-6, 1e-37, {}},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    for (const Shape& shape :
         std::vector<Shape>{{1}, {15}, {17}, {1023}, {3, 5, 7}, {70001}, {0}}) {
      for (float scale : {1.0f, 20.0f}) {
        if (scale != 1.0f && shape.size() == 1 && shape[0] != 1023) continue;
        NodeCase node{c.op, {random_floats(shape, seed++, scale, true)}, 14, c.attributes};
        expect_fast_matches_reference(node, c.rtol, c.atol,
                                      std::string(c.op) + " " + shape_to_string(shape));
      }
    }
  }
}

// The versions that later opsets added (types only) keep their fast kernels, and ai.onnx's
// Gelu (20), the onnxkit Gelu's formula, has it too; so do version 1 (opsets 1-5, whose
// `consumed_inputs` the kernels ignore).
TEST(FastElementwise, NewerOpsetVersionsKeepTheFastKernels) {
  struct Case {
    const char* op;
    int64_t opset;
    double rtol, atol;
    std::function<void(Node*)> attributes;
  };
  const std::vector<Case> cases = {
      {"Relu", 14, 0, 0, {}},
      {"LeakyRelu", 16, 0, 0, {}},
      {"Abs", 13, 0, 0, {}},
      {"Neg", 13, 0, 0, {}},
      {"Sqrt", 13, 0, 0, {}},
      {"Reciprocal", 13, 0, 0, {}},
      {"Sigmoid", 13, 1e-6, 1e-37, {}},
      {"Tanh", 13, 1e-6, 1e-37, {}},
      {"Erf", 13, 1e-6, 1e-37, {}},
      {"Exp", 13, 1e-6, 1e-37, {}},
      {"HardSigmoid", 22, 3e-7, 1e-7, {}},
      {"HardSwish", 22, 3e-7, 1e-7, {}},
      {"Relu", 1, 0, 0, [](Node* n) { set_ints(n, "consumed_inputs", {0}); }},
      {"LeakyRelu", 5, 0, 0, {}},
      {"HardSigmoid", 1, 3e-7, 1e-7, {}},
      {"Sigmoid", 1, 1e-6, 1e-37, {}},
      {"Tanh", 1, 1e-6, 1e-37, {}},
      {"Exp", 1, 1e-6, 1e-37, {}},
      {"Sqrt", 1, 0, 0, {}},
      {"Reciprocal", 1, 0, 0, {}},
      {"Neg", 1, 0, 0, {}},
      {"Abs", 1, 0, 0, {}},
      {"Gelu", 20, 1e-5, 1e-6, {}},
      {"Gelu", 20, 1e-5, 1e-6, [](Node* n) { set_string(n, "approximate", "tanh"); }},
  };
  uint32_t seed = 500;
  for (const Case& c : cases) {
    for (const Shape& shape : std::vector<Shape>{{17}, {3, 5, 7}, {1023}}) {
      NodeCase node{c.op, {random_floats(shape, seed++, 3.0f, false)}, c.opset, c.attributes};
      expect_fast_matches_reference(
          node, c.rtol, c.atol,
          std::string(c.op) + " opset " + std::to_string(c.opset) + " " + shape_to_string(shape));
    }
  }
}

TEST(FastElementwise, ClipWithAttributesAndInputs) {
  const Tensor x = random_floats({1000}, 5, 3.0f, true);
  expect_fast_matches_reference({"Clip",
                                 {x},
                                 6,
                                 [](Node* n) {
                                   set_float(n, "min", -1.0f);
                                   set_float(n, "max", 2.0f);
                                 }},
                                0, 0, "Clip opset 6");
  expect_fast_matches_reference({"Clip",
                                 {x},
                                 1,
                                 [](Node* n) {
                                   set_ints(n, "consumed_inputs", {0});
                                   set_float(n, "max", 0.5f);
                                 }},
                                0, 0, "Clip opset 1");
  expect_fast_matches_reference({"Clip", {x, float_scalar(0.0f), float_scalar(6.0f)}, 13}, 0, 0,
                                "Clip 0..6");
  expect_fast_matches_reference({"Clip", {x, Tensor(), float_scalar(1.5f)}, 13}, 0, 0,
                                "Clip max only");
  expect_fast_matches_reference({"Clip", {x, float_scalar(2.0f), float_scalar(-2.0f)}, 13}, 0, 0,
                                "Clip min > max");
  expect_fast_matches_reference({"Clip", {x}, 13}, 0, 0, "Clip no bounds");
}

TEST(FastElementwise, PowWithScalarExponents) {
  const Tensor x = random_floats({1031}, 9, 2.0f, true);
  for (float e : {2.0f, 3.0f, 0.5f, -1.0f, 1.7f}) {
    for (bool constant : {false, true}) {
      NodeCase c{"Pow", {x, float_scalar(e)}, 15};
      if (constant) c.constants = {1};
      expect_fast_matches_reference(c, e == 3.0f ? 3e-7 : 0, 0,
                                    "Pow " + std::to_string(e) + (constant ? " constant" : ""));
    }
  }
  // Integer exponent tensor (opset 12+), and an exponent with more dims than x.
  expect_fast_matches_reference(
      {"Pow", {x, Tensor::from_vector<int64_t>(DType::kInt64, {}, {2})}, 15}, 0, 0, "Pow int64 2");
  expect_fast_matches_reference({"Pow", {random_floats({3}, 1), float_scalar(2.0f, {1, 1})}, 15}, 0,
                                0, "Pow rank-raising exponent");
  // Pow's special cases on the sqrt path: pow(-0, .5) = +0, pow(-inf, .5) = +inf.
  Tensor specials = Tensor::from_vector<float>(
      DType::kFloat, {4}, {-0.0f, -std::numeric_limits<float>::infinity(), -1.0f, 4.0f});
  expect_fast_matches_reference({"Pow", {specials, float_scalar(0.5f)}, 15}, 0, 0, "Pow specials");
}

TEST(FastElementwise, WhereWithBroadcasting) {
  const auto condition = [](const Shape& shape, uint32_t seed) {
    std::mt19937 rng(seed);
    Tensor t(DType::kBool, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<bool>()[i] = rng() % 3 == 0;
    return t;
  };
  struct Shapes {
    Shape c, x, y;
  };
  const std::vector<Shapes> patterns = {
      {{17}, {17}, {17}},
      {{1, 1, 128, 128}, {1, 12, 128, 128}, {}},  // GPT-2's causal mask
      {{1, 1, 16, 16}, {}, {1, 12, 16, 16}},
      {{3, 1}, {1, 19}, {3, 19}},
      {{}, {4, 5}, {4, 5}},  // one condition for all
      {{2, 1, 5}, {2, 3, 1}, {1}},
      {{1000}, {1000}, {1}},
  };
  uint32_t seed = 40;
  for (const Shapes& p : patterns) {
    expect_fast_matches_reference({"Where",
                                   {condition(p.c, seed), random_floats(p.x, seed + 1, 1, true),
                                    random_floats(p.y, seed + 2, 1, true)},
                                   16},
                                  0, 0, "Where " + shape_to_string(p.c));
    seed += 3;
  }
}

}  // namespace
}  // namespace onnxkit::testing
