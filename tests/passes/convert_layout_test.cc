// convert_layout: conv chains keep blocked activations (ops/blocked_ops.h), with reorders
// only at the chain's edges; the rewritten graph verifies and computes what the original
// did, on the reference kernels and at level `layout` on the optimized kernels.
#include <functional>

#include "onnx/onnx_checks.h"
#include "ops/blocked_ops.h"
#include "ops/fused_ops.h"
#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Conv nets by hand: a GraphBuilder with seeded conv weights.
struct Net {
  Model model = empty_model(13);
  GraphBuilder b{model};
  int inputs = 0;
  uint64_t seed = 1;

  Graph& g() { return model.graph(); }
  Value* input(std::vector<int64_t> dims) { return b.input(numbered('x', inputs++), dims); }
  Value* conv(Value* x, int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t group = 1) {
    Value* w = b.constant(random_floats({out, in / group, k, k}, seed++));
    Value* bias = b.constant(random_floats({out}, seed++));
    return b.op("Conv", {x, w, bias}, [&](Node* n) {
      set_ints(n, "pads", std::vector<int64_t>(4, k / 2));
      set_ints(n, "strides", {stride, stride});
      if (group > 1) set_int(n, "group", group);
    });
  }
};

size_t run_pass(Model& model, bool infer_types = false) {
  if (infer_types) {
    EXPECT_TRUE(infer_shapes(model).ok());
  }
  return apply_pass(*make_convert_layout_pass(), model);
}

// The original model at level none on the reference kernels against level `layout` on the
// optimized kernels (the oneDNN blocked kernels), same inputs.
::testing::AssertionResult layout_level_matches(const Model& model) {
  const NamedValues feeds = random_feeds(model, {{"n", 2}}, 42);
  SessionOptions layout;
  layout.level = OptimizationLevel::kLayout;
  layout.intra_op_threads = 1;
  NamedValues expected, actual;
  try {
    expected = run_model(copy_model(model), feeds);
    actual = run_model(copy_model(model), feeds, layout);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << e.what();
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    Comparison c = compare_values(actual[i].second, expected[i].second, {1e-4, 1e-5, true});
    if (!c.ok) return ::testing::AssertionFailure() << expected[i].first << ": " << c.message;
  }
  return ::testing::AssertionSuccess();
}

// x [n, 16, 12, 12] -> conv 3x3 -> relu -> conv 1x1 -> add(relu) -> relu -> maxpool ->
// conv 3x3 stride 2 -> global average pool -> flatten; the first relu is an output too.
Model residual_model() {
  Net net;
  Value* x = net.input({-1, 16, 12, 12});
  Value* r1 = net.b.op("Relu", {net.conv(x, 16, 32, 3)});
  Value* sum = net.b.op("Add", {net.conv(r1, 32, 32, 1), r1});
  Value* pooled = net.b.op("MaxPool", {net.b.op("Relu", {sum})}, [](Node* n) {
    n->set_attribute(ints_attribute("kernel_shape", {3, 3}));
    n->set_attribute(ints_attribute("strides", {2, 2}));
    n->set_attribute(ints_attribute("pads", {1, 1, 1, 1}));
  });
  Value* gap = net.b.op("GlobalAveragePool", {net.conv(pooled, 32, 48, 3, 2)});
  net.g().add_output(net.b.op("Flatten", {gap}));
  net.g().add_output(r1);
  return std::move(net.model);
}

TEST(ConvertLayout, ResidualChainHasReordersOnlyAtItsEdges) {
  for (bool infer_types : {false, true}) {
    SCOPED_TRACE(infer_types ? "with ONNX shape inference" : "types of graph inputs only");
    Model model = residual_model();
    const Model before = copy_model(model);
    const std::string second_output = model.graph().outputs()[1]->name();
    EXPECT_GT(run_pass(model, infer_types), 0u);
    EXPECT_EQ(count_ops(model, "Conv"), 0u);
    EXPECT_EQ(count_domain_ops(model, kBlockedConv), 3u);
    EXPECT_EQ(count_domain_ops(model, "BlockedMaxPool"), 1u);
    EXPECT_EQ(count_domain_ops(model, "BlockedGlobalAveragePool"), 1u);
    EXPECT_EQ(count_ops(model, "Relu"), 2u) << "element-wise ops stay, on blocked values";
    EXPECT_EQ(count_domain_ops(model, kReorderToBlocked), 1u) << "x only";
    // Back to plain for Flatten and for the first relu, a graph output.
    EXPECT_EQ(count_domain_ops(model, kReorderFromBlocked), 2u);
    EXPECT_EQ(model.graph().outputs()[1]->name(), second_output);
    EXPECT_TRUE(same_outputs(before, model));
    auto again = make_convert_layout_pass();
    EXPECT_EQ(apply_pass(*again, model), 0u) << "a second run finds nothing left to do";
  }
  EXPECT_TRUE(layout_level_matches(residual_model()));
}

TEST(ConvertLayout, RgbImageEntersThroughTheFirstConv) {
  Net net;
  Value* x = net.input({-1, 3, 15, 15});
  Value* c1 = net.b.op("Relu", {net.conv(x, 3, 16, 7, 2)});
  net.g().add_output(net.conv(c1, 16, 16, 3));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 3u);
  EXPECT_EQ(count_domain_ops(model, kReorderToBlocked), 0u) << "the first conv reads plain X";
  EXPECT_EQ(count_domain_ops(model, kReorderFromBlocked), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

TEST(ConvertLayout, DepthwiseClipConcatAndScalarOps) {
  // MobileNet-like: expand 1x1, depthwise 3x3 + Clip, two branches concatenated on
  // channels, a Mul by a scalar, a squeeze-excitation Mul by a [n, C, 1, 1] gate.
  Net net;
  Value* x = net.input({-1, 16, 9, 9});
  Value* e = net.conv(x, 16, 32, 1);
  Value* clip = net.b.op("Clip", {net.conv(e, 32, 32, 3, 1, 32), net.b.scalar(0), net.b.scalar(6)});
  Value* branch = net.b.op("Sigmoid", {net.conv(x, 16, 16, 3)});
  Value* cat = net.b.op("Concat", {clip, branch},
                        [](Node* n) { n->set_attribute(int_attribute("axis", 1)); });
  Value* scaled = net.b.op("Mul", {cat, net.b.scalar(0.5f)});
  Value* gate = net.b.op("Sigmoid", {net.conv(net.b.op("GlobalAveragePool", {scaled}), 48, 48, 1)});
  Value* excited = net.b.op("Mul", {scaled, gate});
  net.g().add_output(net.conv(excited, 48, 16, 1));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_GT(run_pass(model, true), 0u);
  EXPECT_EQ(count_ops(model, "Conv"), 0u);
  EXPECT_EQ(count_domain_ops(model, kReorderToBlocked), 1u);
  EXPECT_EQ(count_domain_ops(model, kReorderFromBlocked), 1u);
  EXPECT_EQ(count_ops(model, "Concat"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

TEST(ConvertLayout, LeavesWhatItCannotBlock) {
  {  // a lone conv keeps its plain path
    Net net;
    net.g().add_output(net.b.op("Relu", {net.conv(net.input({1, 16, 8, 8}), 16, 32, 3)}));
    EXPECT_EQ(run_pass(net.model), 0u);
  }
  {  // a conv writing fewer than 8 channels (an image out) would compute mostly padding
    Net net;
    Value* c = net.b.op("Relu", {net.conv(net.input({1, 16, 8, 8}), 16, 16, 3)});
    net.g().add_output(net.conv(net.conv(c, 16, 16, 3), 16, 3, 3));
    const Model before = copy_model(net.model);
    EXPECT_EQ(run_pass(net.model), 3u);
    EXPECT_EQ(count_ops(net.model, "Conv"), 1u);
    EXPECT_TRUE(same_outputs(before, net.model));
  }
  {  // MaxPool with Indices, and an Add broadcasting over channels, split the chain
    Net net;
    Value* c = net.conv(net.input({1, 16, 8, 8}), 16, 16, 3);
    Node* pool = net.g().add_node("MaxPool", {c}, {"pooled", "indices"}, "", "pool");
    pool->set_attribute(ints_attribute("kernel_shape", {2, 2}));
    Value* per_channel = net.g().add_initializer("shift", random_floats({16, 1, 1}, 9));
    Value* shifted = net.b.op("Add", {pool->output(0), per_channel});
    net.g().add_output(net.conv(shifted, 16, 16, 3));
    net.g().add_output(pool->output(1));
    Model before = copy_model(net.model);
    EXPECT_EQ(run_pass(net.model), 0u) << "no two anchors left connected";
    EXPECT_TRUE(same_outputs(before, net.model));
  }
}

TEST(ConvertLayout, PaddedChannelsStayBlockedThroughOpsThatKeepZeros) {
  // MobileNet's and EfficientNet's narrow stages: 24 and 40 channels, padded to 32 and 48.
  // Relu, Clip(0, 6), Add of two padded values and Mul by a scalar keep the padding zero;
  // Sigmoid, Add of a scalar and a Concat of padded values cannot, so they read plain
  // values through a ReorderFromBlocked that carries the channel count.
  Net net;
  Value* x = net.input({-1, 16, 10, 10});
  Value* narrow = net.b.op("Relu", {net.conv(x, 16, 24, 1)});
  Value* depthwise =
      net.b.op("Clip", {net.conv(narrow, 24, 24, 3, 1, 24), net.b.scalar(0), net.b.scalar(6)});
  Value* sum = net.b.op("Add", {net.conv(depthwise, 24, 24, 1), narrow});
  Value* scaled = net.b.op("Mul", {sum, net.b.scalar(0.5f)});
  Value* wider = net.conv(scaled, 24, 40, 3, 2);
  Value* pooled = net.b.op("GlobalAveragePool", {wider});
  net.g().add_output(net.b.op("Sigmoid", {wider}));
  net.g().add_output(net.b.op("Add", {pooled, net.b.scalar(1.0f)}));
  net.g().add_output(net.b.op("Concat", {scaled, scaled},
                              [](Node* n) { n->set_attribute(int_attribute("axis", 1)); }));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_GT(run_pass(model, true), 0u);
  EXPECT_EQ(count_ops(model, "Conv"), 0u);
  EXPECT_EQ(count_domain_ops(model, kBlockedConv), 4u);
  EXPECT_EQ(count_domain_ops(model, "BlockedGlobalAveragePool"), 1u);
  EXPECT_EQ(count_domain_ops(model, kReorderToBlocked), 1u) << "x only";
  size_t reorders_back = 0;
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != kReorderFromBlocked) continue;
    ++reorders_back;
    const Attribute* channels = node->find_attribute(kChannelsAttribute);
    ASSERT_NE(channels, nullptr) << "the padded value's channel count";
    EXPECT_TRUE(channels->i == 24 || channels->i == 40) << channels->i;
  }
  EXPECT_EQ(reorders_back, 3u) << "for Sigmoid, the Add of a scalar and the Concat";
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

TEST(ConvertLayout, PaddedGraphInputIsReadPlain) {
  // 24 channels that no conv of the chain wrote: the first conv reads them plain, and an
  // element-wise op on them stays outside.
  Net net;
  Value* x = net.input({-1, 24, 8, 8});
  Value* c = net.b.op("Relu", {net.conv(net.b.op("Relu", {x}), 24, 32, 3)});
  net.g().add_output(net.conv(c, 32, 24, 3));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_GT(run_pass(model, true), 0u);
  EXPECT_EQ(count_domain_ops(model, kReorderToBlocked), 0u);
  EXPECT_EQ(count_ops(model, "Relu"), 2u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

}  // namespace
}  // namespace onnxkit
