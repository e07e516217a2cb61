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

using testing::apply_pass;
using testing::copy_model;
using testing::count_ops;
using testing::empty_model;
using testing::random_floats;
using testing::same_outputs;

size_t count_blocked(const Model& model, std::string_view op_type) {
  size_t count = 0;
  for (const Node* node : model.graph().nodes()) {
    count += node->domain() == kOnnxkitDomain && node->op_type() == op_type;
  }
  return count;
}

// Builds graphs by hand: fresh value names, seeded weights.
struct Net {
  Model model = empty_model(13);
  int next = 0;
  uint64_t seed = 1;

  Graph& g() { return model.graph(); }
  std::string name(const std::string& base) { return base + std::to_string(next++); }
  Value* input(std::vector<int64_t> dims) {
    return g().add_input(name("x"), testing::float_type(std::move(dims)));
  }
  Value* conv(Value* x, int64_t in, int64_t out, int64_t k, int64_t stride = 1, int64_t group = 1) {
    Value* w = g().add_initializer(name("w"), random_floats({out, in / group, k, k}, seed++));
    Value* b = g().add_initializer(name("b"), random_floats({out}, seed++));
    Node* node = g().add_node("Conv", {x, w, b}, {name("conv")}, "", name("conv_node"));
    node->set_attribute(ints_attribute("pads", std::vector<int64_t>(4, k / 2)));
    node->set_attribute(ints_attribute("strides", {stride, stride}));
    if (group > 1) node->set_attribute(int_attribute("group", group));
    return node->output(0);
  }
  Value* op(const std::string& type, std::vector<Value*> inputs,
            const std::function<void(Node*)>& attributes = {}) {
    Node* node = g().add_node(type, std::move(inputs), {name(type)}, "", name(type + "_node"));
    if (attributes) attributes(node);
    return node->output(0);
  }
  Value* scalar(float v) {
    return g().add_initializer(name("s"), Tensor::from_vector(DType::kFloat, {}, std::vector{v}));
  }
};

size_t run_pass(Model& model, bool infer_types = false) {
  if (infer_types) {
    EXPECT_TRUE(infer_shapes(model).ok());
  }
  auto pass = make_convert_layout_pass();
  return apply_pass(*pass, model);
}

// The original model at level none on the reference kernels against level `layout` on the
// optimized kernels (the oneDNN blocked kernels), same inputs.
::testing::AssertionResult layout_level_matches(const Model& model) {
  std::map<std::string, int64_t> dims{{"n", 2}};
  std::mt19937_64 rng(42);
  NamedValues feeds;
  for (const Value* input : model.graph().inputs()) {
    if (input->has_initializer()) continue;
    feeds.emplace_back(input->name(),
                       random_tensor(input->type().elem_type, concrete_shape(*input, dims), rng));
  }
  SessionOptions layout;
  layout.level = OptimizationLevel::kLayout;
  layout.intra_op_threads = 1;
  auto reference = Session::create(copy_model(model), SessionOptions::reference());
  auto optimized = Session::create(copy_model(model), layout);
  if (!reference || !optimized) {
    return ::testing::AssertionFailure() << (reference ? optimized.error() : reference.error());
  }
  auto expected = reference.value()->run(feeds);
  auto actual = optimized.value()->run(feeds);
  if (!expected || !actual) {
    return ::testing::AssertionFailure() << (expected ? actual.error() : expected.error());
  }
  for (size_t i = 0; i < expected.value().size(); ++i) {
    Comparison c =
        compare_values(actual.value()[i].second, expected.value()[i].second, {1e-4, 1e-5, true});
    if (!c.ok)
      return ::testing::AssertionFailure() << expected.value()[i].first << ": " << c.message;
  }
  return ::testing::AssertionSuccess();
}

// x [n, 16, 12, 12] -> conv 3x3 -> relu -> conv 1x1 -> add(relu) -> relu -> maxpool ->
// conv 3x3 stride 2 -> global average pool -> flatten; the first relu is an output too.
Model residual_model() {
  Net net;
  Value* x = net.input({-1, 16, 12, 12});
  Value* r1 = net.op("Relu", {net.conv(x, 16, 32, 3)});
  Value* sum = net.op("Add", {net.conv(r1, 32, 32, 1), r1});
  Value* pooled = net.op("MaxPool", {net.op("Relu", {sum})}, [](Node* n) {
    n->set_attribute(ints_attribute("kernel_shape", {3, 3}));
    n->set_attribute(ints_attribute("strides", {2, 2}));
    n->set_attribute(ints_attribute("pads", {1, 1, 1, 1}));
  });
  Value* gap = net.op("GlobalAveragePool", {net.conv(pooled, 32, 48, 3, 2)});
  net.g().add_output(net.op("Flatten", {gap}));
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
    EXPECT_EQ(count_blocked(model, kBlockedConv), 3u);
    EXPECT_EQ(count_blocked(model, "BlockedMaxPool"), 1u);
    EXPECT_EQ(count_blocked(model, "BlockedGlobalAveragePool"), 1u);
    EXPECT_EQ(count_ops(model, "Relu"), 2u) << "element-wise ops stay, on blocked values";
    EXPECT_EQ(count_blocked(model, kReorderToBlocked), 1u) << "x only";
    // Back to plain for Flatten and for the first relu, a graph output.
    EXPECT_EQ(count_blocked(model, kReorderFromBlocked), 2u);
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
  Value* c1 = net.op("Relu", {net.conv(x, 3, 16, 7, 2)});
  net.g().add_output(net.conv(c1, 16, 16, 3));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 3u);
  EXPECT_EQ(count_blocked(model, kReorderToBlocked), 0u) << "the first conv reads plain X";
  EXPECT_EQ(count_blocked(model, kReorderFromBlocked), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

TEST(ConvertLayout, DepthwiseClipConcatAndScalarOps) {
  // MobileNet-like: expand 1x1, depthwise 3x3 + Clip, two branches concatenated on
  // channels, a Mul by a scalar, a squeeze-excitation Mul by a [n, C, 1, 1] gate.
  Net net;
  Value* x = net.input({-1, 16, 9, 9});
  Value* e = net.conv(x, 16, 32, 1);
  Value* clip = net.op("Clip", {net.conv(e, 32, 32, 3, 1, 32), net.scalar(0), net.scalar(6)});
  Value* branch = net.op("Sigmoid", {net.conv(x, 16, 16, 3)});
  Value* cat =
      net.op("Concat", {clip, branch}, [](Node* n) { n->set_attribute(int_attribute("axis", 1)); });
  Value* scaled = net.op("Mul", {cat, net.scalar(0.5f)});
  Value* gate = net.op("Sigmoid", {net.conv(net.op("GlobalAveragePool", {scaled}), 48, 48, 1)});
  Value* excited = net.op("Mul", {scaled, gate});
  net.g().add_output(net.conv(excited, 48, 16, 1));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_GT(run_pass(model, true), 0u);
  EXPECT_EQ(count_ops(model, "Conv"), 0u);
  EXPECT_EQ(count_blocked(model, kReorderToBlocked), 1u);
  EXPECT_EQ(count_blocked(model, kReorderFromBlocked), 1u);
  EXPECT_EQ(count_ops(model, "Concat"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

TEST(ConvertLayout, LeavesWhatItCannotBlock) {
  {  // a lone conv keeps its plain path
    Net net;
    net.g().add_output(net.op("Relu", {net.conv(net.input({1, 16, 8, 8}), 16, 32, 3)}));
    EXPECT_EQ(run_pass(net.model), 0u);
  }
  {  // a conv writing fewer than 8 channels (an image out) would compute mostly padding
    Net net;
    Value* c = net.op("Relu", {net.conv(net.input({1, 16, 8, 8}), 16, 16, 3)});
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
    Value* shifted = net.op("Add", {pool->output(0), per_channel});
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
  Value* narrow = net.op("Relu", {net.conv(x, 16, 24, 1)});
  Value* depthwise =
      net.op("Clip", {net.conv(narrow, 24, 24, 3, 1, 24), net.scalar(0), net.scalar(6)});
  Value* sum = net.op("Add", {net.conv(depthwise, 24, 24, 1), narrow});
  Value* scaled = net.op("Mul", {sum, net.scalar(0.5f)});
  Value* wider = net.conv(scaled, 24, 40, 3, 2);
  Value* pooled = net.op("GlobalAveragePool", {wider});
  net.g().add_output(net.op("Sigmoid", {wider}));
  net.g().add_output(net.op("Add", {pooled, net.scalar(1.0f)}));
  net.g().add_output(net.op("Concat", {scaled, scaled},
                            [](Node* n) { n->set_attribute(int_attribute("axis", 1)); }));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_GT(run_pass(model, true), 0u);
  EXPECT_EQ(count_ops(model, "Conv"), 0u);
  EXPECT_EQ(count_blocked(model, kBlockedConv), 4u);
  EXPECT_EQ(count_blocked(model, "BlockedGlobalAveragePool"), 1u);
  EXPECT_EQ(count_blocked(model, kReorderToBlocked), 1u) << "x only";
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
  Value* c = net.op("Relu", {net.conv(net.op("Relu", {x}), 24, 32, 3)});
  net.g().add_output(net.conv(c, 32, 24, 3));
  Model model = std::move(net.model);
  const Model before = copy_model(model);
  EXPECT_GT(run_pass(model, true), 0u);
  EXPECT_EQ(count_blocked(model, kReorderToBlocked), 0u);
  EXPECT_EQ(count_ops(model, "Relu"), 2u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_TRUE(layout_level_matches(before));
}

}  // namespace
}  // namespace onnxkit
