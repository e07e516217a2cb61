// int8_channels_last: QLinearConv chains become channels-last (ChannelsLastQLinearConv) with
// Transposes only at the chain's edges, through per-tensor DQ / Q and element-wise ops, and
// compute the same integers.
#include <random>

#include "ir/domain.h"
#include "ops/channels_last_ops.h"
#include "pass_test_util.h"
#include "passes/infer_types.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor scalar_of(DType dtype, double value) {
  Tensor t(dtype, {});
  if (dtype == DType::kFloat) *t.mutable_data<float>() = static_cast<float>(value);
  if (dtype == DType::kUInt8) *t.mutable_data<uint8_t>() = static_cast<uint8_t>(value);
  if (dtype == DType::kInt8) *t.mutable_data<int8_t>() = static_cast<int8_t>(value);
  return t;
}

struct Net {
  Model model = empty_model(13);
  Graph& g = model.graph();
  std::mt19937_64 rng{5};
  int count = 0;

  Value* init(Tensor t) { return g.add_initializer("c" + std::to_string(count++), std::move(t)); }

  // QLinearConv of xq (u8, scale 0.05, zero point 128) by random s8 weights [maps, c / group,
  // k, k] per channel, out u8 of scale `y_scale`.
  Value* conv(Value* xq, int64_t c, int64_t maps, int64_t k, int64_t group, float y_scale) {
    Tensor w = random_tensor(DType::kInt8, {maps, c / group, k, k}, rng);
    Tensor ws(DType::kFloat, {maps});
    for (int64_t m = 0; m < maps; ++m) ws.mutable_data<float>()[m] = 0.004f + 0.0005f * m;
    Tensor bias(DType::kInt32, {maps});
    for (int64_t m = 0; m < maps; ++m) bias.mutable_data<int32_t>()[m] = 40 * m - 300;
    Node* node = g.add_node(
        "QLinearConv",
        {xq, init(scalar_of(DType::kFloat, 0.05)), init(scalar_of(DType::kUInt8, 128)), init(w),
         init(ws), init(Tensor(DType::kInt8, {maps})), init(scalar_of(DType::kFloat, y_scale)),
         init(scalar_of(DType::kUInt8, 128)), init(bias)},
        {"y" + std::to_string(count++)});
    set_ints(node, "pads", {k / 2, k / 2, k / 2, k / 2});
    if (group > 1) set_int(node, "group", group);
    return node->output(0);
  }

  Value* dq(Value* q) {
    return g
        .add_node("DequantizeLinear",
                  {q, init(scalar_of(DType::kFloat, 0.05)), init(scalar_of(DType::kUInt8, 128))},
                  {"f" + std::to_string(count++)})
        ->output(0);
  }
  Value* q(Value* f) {
    return g
        .add_node("QuantizeLinear",
                  {f, init(scalar_of(DType::kFloat, 0.05)), init(scalar_of(DType::kUInt8, 128))},
                  {"q" + std::to_string(count++)})
        ->output(0);
  }
};

// x -> Q -> conv 3x3 -> depthwise 3x3 -> DQ -> Add(DQ(first conv)) -> Q -> conv 1x1 -> DQ.
Model mobilenet_block(int convs = 3) {
  Net net;
  Value* x = net.g.add_input("x", float_type({1, 8, 6, 6}));
  Value* y1 = net.conv(net.q(x), 8, 16, 3, 1, 0.05f);
  Value* out = y1;
  if (convs >= 2) {
    Value* y2 = net.conv(y1, 16, 16, 3, 16, 0.05f);
    Value* sum =
        net.g.add_node("Add", {net.dq(y2), net.dq(y1)}, {"sum"}, "", "residual")->output(0);
    out = net.q(sum);
  }
  if (convs >= 3) out = net.conv(out, 16, 8, 1, 1, 0.05f);
  net.g.add_output(net.dq(out));
  infer(net.model);
  return std::move(net.model);
}

TEST(Int8ChannelsLast, ChainBecomesChannelsLastWithTransposesAtItsEdges) {
  Model model = mobilenet_block();
  Model before = copy_model(model);
  auto pass = make_int8_channels_last_pass();
  EXPECT_GT(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, std::string(kChannelsLastQLinearConv)), 3u);
  EXPECT_EQ(count_ops(model, "QLinearConv"), 0u);
  // Into the chain (the input's Q), out of it (before the last DQ, on int8 bytes).
  EXPECT_EQ(count_ops(model, "Transpose"), 2u);
  EXPECT_EQ(count_ops(model, "Add"), 1u);
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() == "Transpose") {
      EXPECT_NE(node->input(0)->type().elem_type, DType::kFloat) << node->name();
    }
  }
  EXPECT_TRUE(same_outputs(before, model, 0, 0)) << "the same integers, so the same floats";
}

TEST(Int8ChannelsLast, LoneConvStaysPlanar) {
  Model model = mobilenet_block(1);
  auto pass = make_int8_channels_last_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "QLinearConv"), 1u);
}

// ResNet-50's stem and head in ORT's QOperator form: x -> Q -> conv 3x3 -> MaxPool 3x3 /2 ->
// conv 3x3 -> com.microsoft QLinearGlobalAveragePool -> DQ.
Model pooled_chain() {
  Net net;
  net.model.opset_imports.push_back({std::string(kMicrosoftDomain), 1});
  Value* x = net.g.add_input("x", float_type({1, 8, 9, 9}));
  Value* y1 = net.conv(net.q(x), 8, 16, 3, 1, 0.05f);
  Node* pool = net.g.add_node("MaxPool", {y1}, {"pooled"}, "", "maxpool");
  set_ints(pool, "kernel_shape", {3, 3});
  set_ints(pool, "strides", {2, 2});
  set_ints(pool, "pads", {1, 1, 1, 1});
  Value* y2 = net.conv(pool->output(0), 16, 16, 3, 1, 0.05f);
  Value* scale = net.init(scalar_of(DType::kFloat, 0.05));
  Value* zp = net.init(scalar_of(DType::kUInt8, 128));
  Value* out_scale = net.init(scalar_of(DType::kFloat, 0.02));
  Value* gap = net.g
                   .add_node("QLinearGlobalAveragePool", {y2, scale, zp, out_scale, zp}, {"gap"},
                             std::string(kMicrosoftDomain), "avgpool")
                   ->output(0);
  net.g.add_output(net.dq(gap));
  // onnxkit's inference: libonnx has no com.microsoft schemas.
  EXPECT_TRUE(infer_types(net.model, builtin_registry()).ok());
  return std::move(net.model);
}

TEST(Int8ChannelsLast, PoolsStayInTheChain) {
  Model model = pooled_chain();
  Model before = copy_model(model);
  auto pass = make_int8_channels_last_pass();
  EXPECT_EQ(apply_pass(*pass, model), 4u);
  EXPECT_EQ(count_ops(model, std::string(kChannelsLastQLinearConv)), 2u);
  EXPECT_EQ(count_ops(model, std::string(kChannelsLastMaxPool)), 1u);
  EXPECT_EQ(count_ops(model, "MaxPool"), 0u);
  const Node* gap = only_node(model, "QLinearGlobalAveragePool");
  ASSERT_TRUE(gap);
  EXPECT_EQ(int_attribute_of(gap, "channels_last", 0), 1);
  // Into the chain, and out of it after the pooled [1, 1, 1, 16] bytes.
  EXPECT_EQ(count_ops(model, "Transpose"), 2u);
  EXPECT_TRUE(same_outputs(before, model, 0, 0));
}

}  // namespace
}  // namespace onnxkit
