// The fast row-wise kernels (src/kernels/fast_normalization.cc) against the reference:
// Softmax/LogSoftmax and LayerNormalization and ReduceMean against their reference kernels;
// onnxkit's fused ops (LayerNormalization, SkipLayerNormalization, BiasSoftmax, Gelu)
// against the unfused graph of standard ops on the reference kernels.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fast_kernel_test_util.h"
#include "ops/fused_ops.h"

namespace onnxkit::testing {
namespace {

const std::string kDomain(kOnnxkitDomain);

using BuildGraph = std::function<std::vector<Value*>(GraphBuilder&, const std::vector<Value*>&)>;

// A graph of several nodes: feeds become inputs "in0", "in1", ...; `build` adds nodes and
// returns the graph outputs.
std::vector<Tensor> run_graph(const std::vector<Tensor>& feeds, const BuildGraph& build,
                              const SessionOptions& options, int64_t opset = 17) {
  GraphBuilder b(opset);
  std::vector<Value*> inputs;
  for (size_t i = 0; i < feeds.size(); ++i) {
    inputs.push_back(feeds[i].defined() ? b.input("in" + std::to_string(i), feeds[i]) : nullptr);
  }
  for (Value* output : build(b, inputs)) b.output(output);
  // onnxkit's fused ops must be served by a fast kernel here (a declined node would have
  // the reference kernel compared with the unfused graph, testing nothing of ours).
  if (options.kernels == KernelTier::kOptimized) {
    for (const Node* node : b.graph().nodes()) {
      if (node->domain() != kDomain) continue;
      const auto kernel = builtin_registry().create_kernel(
          KernelCreateContext(*node, 1, builtin_registry()), KernelTier::kOptimized);
      const std::string type = typeid(*kernel).name();
      if (type.find("Fast") == std::string::npos) {
        throw Error(node->op_type() + " was not given a fast kernel (" + type + ")");
      }
    }
  }
  return b.run({}, options);
}

// The fused graph on the fast tier at every SIMD level against the unfused graph on the
// reference kernels.
void expect_fused_matches_unfused(const std::vector<Tensor>& feeds, const BuildGraph& fused,
                                  const BuildGraph& unfused, double rtol, double atol,
                                  const std::string& what) {
  const std::vector<Tensor> reference = run_graph(feeds, unfused, SessionOptions::reference());
  for (SimdLevel level : simd_levels()) {
    SimdLevelOverride force(level);
    const std::vector<Tensor> fast = run_graph(feeds, fused, fast_options());
    ASSERT_EQ(fast.size(), reference.size());
    for (size_t i = 0; i < fast.size(); ++i) {
      expect_tensors_close(
          fast[i], reference[i], rtol, atol,
          what + " output " + std::to_string(i) + " at " + std::string(simd_level_name(level)));
    }
  }
}

TEST(FastNormalization, SoftmaxAndLogSoftmax) {
  uint32_t seed = 1;
  struct Case {
    Shape shape;
    int64_t axis;
    int64_t opset;
  };
  const std::vector<Case> cases = {
      {{1}, -1, 13},      {{17}, 0, 13},      {{12, 128, 128}, -1, 13},
      {{3, 1023}, 1, 13}, {{5, 7, 1}, 1, 13},  // trailing dim of 1: still rows
      {{2, 3, 5}, 1, 13},                      // not the last axis: reference
      {{2, 3, 5}, 1, 11},                      // coerced to [2, 15]
      {{2, 3, 5}, 0, 1},  {{4, 6}, 2, 10},     // axis == rank: rows of 1
      {{0, 5}, -1, 13},
  };
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const Case& c : cases) {
      for (bool specials : {false, true}) {
        NodeCase node{op, {random_floats(c.shape, seed++, 4.0f, specials)}, c.opset, [&](Node* n) {
                        set_int(n, "axis", c.axis);
                      }};
        // LogSoftmax subtracts log(sum) from x - max: errors are absolute, ~ulp(x).
        expect_fast_matches_reference(node, 2e-6, std::string(op) == "Softmax" ? 1e-7 : 1e-6,
                                      std::string(op) + " " + shape_to_string(c.shape) + " axis " +
                                          std::to_string(c.axis) + " opset " +
                                          std::to_string(c.opset));
      }
    }
  }
}

TEST(FastNormalization, LayerNormalizationOpset17) {
  uint32_t seed = 50;
  struct Case {
    Shape x, scale;
    int64_t axis;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{128, 768}, {768}, -1, true},
      {{2, 3, 17}, {17}, -1, true},
      {{2, 3, 17}, {3, 17}, 1, false},
      {{4, 1, 1023}, {1023}, 1, true},
      {{1}, {1}, 0, true},
      {{6, 5}, {1}, -1, true},  // broadcast scale: reference
  };
  for (const Case& c : cases) {
    Shape norm(c.x.begin() + (c.axis < 0 ? c.axis + c.x.size() : c.axis), c.x.end());
    std::vector<Tensor> inputs = {random_floats(c.x, seed, 3.0f), random_floats(c.scale, seed + 1)};
    if (c.bias) inputs.push_back(random_floats(c.scale, seed + 2));
    seed += 3;
    expect_fast_matches_reference({"LayerNormalization", inputs, 17,
                                   [&](Node* n) {
                                     set_int(n, "axis", c.axis);
                                     set_float(n, "epsilon", 1e-5f);
                                   }},
                                  1e-5, 1e-5, "LayerNormalization " + shape_to_string(c.x));
  }
}

TEST(FastNormalization, OnnxkitLayerNormalizationMatchesOpset17) {
  const std::vector<Tensor> feeds = {random_floats({3, 5, 96}, 1, 2.0f), random_floats({96}, 2),
                                     random_floats({96}, 3)};
  expect_fused_matches_unfused(
      feeds,
      [](GraphBuilder& b, const std::vector<Value*>& in) {
        return std::vector<Value*>{b.op(
            "LayerNormalization", in, [](Node* n) { set_float(n, "epsilon", 1e-6f); }, kDomain)};
      },
      [](GraphBuilder& b, const std::vector<Value*>& in) {
        return std::vector<Value*>{
            b.op("LayerNormalization", in, [](Node* n) { set_float(n, "epsilon", 1e-6f); })};
      },
      1e-5, 1e-5, "com.onnxkit LayerNormalization");
}

TEST(FastNormalization, SkipLayerNormalizationMatchesUnfusedGraph) {
  uint32_t seed = 70;
  for (const Shape& shape : std::vector<Shape>{{2, 128, 768}, {3, 17}, {1, 1}, {5, 1023}}) {
    const int64_t c = shape.back();
    for (bool with_bias : {true, false}) {
      for (bool with_sum : {true, false}) {
        std::vector<Tensor> feeds = {random_floats(shape, seed, 2.0f),
                                     random_floats(shape, seed + 1), random_floats({c}, seed + 2),
                                     random_floats({c}, seed + 3)};
        if (with_bias) feeds.push_back(random_floats({c}, seed + 4));
        seed += 5;
        expect_fused_matches_unfused(
            feeds,
            [&](GraphBuilder& b, const std::vector<Value*>& in) {
              Value* y = b.node(
                              "SkipLayerNormalization", in,
                              [](Node* n) { set_float(n, "epsilon", 0.01f); }, 2, kDomain)
                             ->output(0);
              std::vector<Value*> outputs{y};
              if (with_sum) outputs.push_back(y->producer()->outputs()[1]);
              return outputs;
            },
            [&](GraphBuilder& b, const std::vector<Value*>& in) {
              Value* sum = b.op("Add", {in[0], in[1]});
              if (with_bias) sum = b.op("Add", {sum, in[4]});
              Value* y = b.op("LayerNormalization", {sum, in[2], in[3]},
                              [](Node* n) { set_float(n, "epsilon", 0.01f); });
              std::vector<Value*> outputs{y};
              if (with_sum) outputs.push_back(sum);
              return outputs;
            },
            1e-5, 1e-5,
            "SkipLayerNormalization " + shape_to_string(shape) + (with_bias ? " bias" : "") +
                (with_sum ? " sum" : ""));
      }
    }
  }
}

TEST(FastNormalization, BiasSoftmaxMatchesUnfusedGraph) {
  uint32_t seed = 90;
  struct Case {
    Shape x, bias;
  };
  for (const Case& c : std::vector<Case>{{{1, 12, 128, 128}, {1, 1, 1, 128}},
                                         {{2, 3, 17}, {2, 3, 17}},
                                         {{2, 3, 17}, {}},
                                         {{4, 2, 9, 33}, {4, 1, 9, 33}}}) {
    const std::vector<Tensor> feeds = {random_floats(c.x, seed, 3.0f, true),
                                       random_floats(c.bias, seed + 1, 3.0f)};
    seed += 2;
    expect_fused_matches_unfused(
        feeds,
        [](GraphBuilder& b, const std::vector<Value*>& in) {
          return std::vector<Value*>{b.op("BiasSoftmax", in, {}, kDomain)};
        },
        [](GraphBuilder& b, const std::vector<Value*>& in) {
          return std::vector<Value*>{b.op("Softmax", {b.op("Add", in)})};
        },
        2e-6, 1e-7, "BiasSoftmax " + shape_to_string(c.x) + " + " + shape_to_string(c.bias));
  }
}

TEST(FastNormalization, GeluMatchesUnfusedGraph) {
  const std::vector<Tensor> feeds = {random_floats({5, 3072}, 3, 3.0f, true)};
  expect_fused_matches_unfused(
      feeds,
      [](GraphBuilder& b, const std::vector<Value*>& in) {
        return std::vector<Value*>{b.op("Gelu", in, {}, kDomain)};
      },
      [&](GraphBuilder& b, const std::vector<Value*>& in) {
        // x * 0.5 * (1 + erf(x / sqrt(2))), as BERT exports it.
        Value* e = b.op("Erf", {b.op("Div", {in[0], b.scalar(1.41421356f)})});
        Value* t = b.op("Add", {e, b.scalar(1.0f)});
        return std::vector<Value*>{b.op("Mul", {b.op("Mul", {in[0], t}), b.scalar(0.5f)})};
      },
      1e-5, 1e-6, "Gelu erf");
  expect_fused_matches_unfused(
      feeds,
      [](GraphBuilder& b, const std::vector<Value*>& in) {
        return std::vector<Value*>{b.op(
            "Gelu", in, [](Node* n) { set_string(n, "approximate", "tanh"); }, kDomain)};
      },
      [&](GraphBuilder& b, const std::vector<Value*>& in) {
        // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), as GPT-2 exports it.
        Value* cube = b.op("Pow", {in[0], b.scalar(3.0f)});
        Value* inner = b.op("Add", {in[0], b.op("Mul", {cube, b.scalar(0.044715f)})});
        Value* t = b.op("Tanh", {b.op("Mul", {inner, b.scalar(0.7978845608f)})});
        Value* half_x = b.op("Mul", {in[0], b.scalar(0.5f)});
        return std::vector<Value*>{b.op("Mul", {half_x, b.op("Add", {t, b.scalar(1.0f)})})};
      },
      1e-5, 2e-6, "Gelu tanh");
}

TEST(FastNormalization, ReduceMean) {
  uint32_t seed = 120;
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  const std::vector<Case> cases = {
      {{128, 768}, {-1}, 1},  {{1, 96, 7, 7}, {1}, 1},  // ConvNeXt's channel mean
      {{2, 3, 4}, {1, 2}, 0}, {{2, 3, 4}, {0, 2}, 1},   // two blocks: reference
      {{4, 1, 5}, {1}, 1},    {{3, 17}, {0}, 0},       {{1, 4096, 3}, {1}, 1}, {{7}, {0}, 0},
  };
  for (const Case& c : cases) {
    expect_fast_matches_reference({"ReduceMean",
                                   {random_floats(c.shape, seed++, 2.0f, false)},
                                   13,
                                   [&](Node* n) {
                                     set_ints(n, "axes", c.axes);
                                     set_int(n, "keepdims", c.keepdims);
                                   }},
                                  1e-5, 1e-6, "ReduceMean " + shape_to_string(c.shape));
  }
  // NaN and inf propagate as in the reference.
  expect_fast_matches_reference({"ReduceMean",
                                 {random_floats({6, 40}, 3, 1.0f, true)},
                                 13,
                                 [](Node* n) { set_ints(n, "axes", {1}); }},
                                1e-5, 1e-6, "ReduceMean specials");
}

}  // namespace
}  // namespace onnxkit::testing
