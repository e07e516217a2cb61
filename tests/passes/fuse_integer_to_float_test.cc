#include "linear_fusion_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor int8s(DType dtype, Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_tensor(dtype, shape, rng);
}

// ONNX Runtime's dynamic quantization of a MatMul (x [2, 5, 16] by W [16, 8]) or of a Conv
// (x [1, 3, 8, 8] by W [4, 3, 3, 3], pads 1): DynamicQuantizeLinear(x), the integer
// product, Cast, Mul by x_scale * w_scale, Add of the bias. `extra_reader`: the Cast's
// output is also a graph output.
Model dynamic_model(bool conv, bool per_channel, bool extra_reader = false) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", conv ? float_type({1, 3, 8, 8}) : float_type({2, 5, 16}));
  Node* dql = g.add_node("DynamicQuantizeLinear", {x}, {"xq", "xs", "xzp"}, "", "dql");
  const int64_t channels = conv ? 4 : 8;
  Value* w =
      g.add_initializer("W", int8s(DType::kInt8, conv ? Shape{4, 3, 3, 3} : Shape{16, 8}, 3));
  Value* w_zp =
      g.add_initializer("W_zp", int8s(DType::kInt8, per_channel ? Shape{channels} : Shape{}, 4));
  Node* product = g.add_node(conv ? "ConvInteger" : "MatMulInteger",
                             {dql->output(0), w, dql->output(2), w_zp}, {"acc"}, "", "product");
  if (conv) set_ints(product, "pads", {1, 1, 1, 1});
  Node* cast = g.add_node("Cast", {product->output(0)}, {"acc_f"}, "", "cast");
  set_int(cast, "to", 1);
  Tensor w_scale = positive_floats(per_channel && !conv ? Shape{channels} : Shape{}, 5);
  Value* scale = g.add_node("Mul", {dql->output(1), g.add_initializer("W_scale", w_scale)},
                            {"scale"}, "", "scale_mul")
                     ->output(0);
  Value* scaled = g.add_node("Mul", {cast->output(0), scale}, {"scaled"}, "", "mul")->output(0);
  Value* bias = g.add_initializer(
      "bias", random_floats(conv ? Shape{1, channels, 1, 1} : Shape{channels}, 6));
  g.add_output(g.add_node("Add", {bias, scaled}, {"y"}, "", "add")->output(0));
  if (extra_reader) g.add_output(cast->output(0));
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_integer_to_float_pass(), model);
}

TEST(FuseIntegerToFloat, MatMulChainBecomesOneOp) {
  for (bool per_channel : {false, true}) {
    Model model = dynamic_model(false, per_channel);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u);
    const Node* fused = only_node(model, "MatMulIntegerToFloat");
    ASSERT_TRUE(fused);
    EXPECT_EQ(fused->domain(), kOnnxkitDomain);
    EXPECT_EQ(fused->output(0)->name(), "y");
    EXPECT_EQ(fused->inputs().size(), 6u);
    EXPECT_EQ(
        count_ops(model, "MatMulInteger") + count_ops(model, "Cast") + count_ops(model, "Add"), 0u);
    EXPECT_EQ(count_ops(model, "Mul"), 1u) << "the scale's own Mul stays";
    EXPECT_TRUE(same_outputs(before, model, 0, 0)) << "the same float operations in order";
  }
}

TEST(FuseIntegerToFloat, ConvChainTakesAFlattenedBias) {
  Model model = dynamic_model(true, true);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  const Node* fused = only_node(model, "ConvIntegerToFloat");
  ASSERT_TRUE(fused);
  ASSERT_EQ(fused->inputs().size(), 6u);
  ASSERT_TRUE(fused->input(5)->has_initializer());
  EXPECT_EQ(fused->input(5)->initializer().shape(), Shape{4});
  const Attribute* pads = fused->find_attribute("pads");
  EXPECT_TRUE(pads && pads->ints == std::vector<int64_t>({1, 1, 1, 1}));
  EXPECT_TRUE(same_outputs(before, model, 0, 0));
}

TEST(FuseIntegerToFloat, IntermediateReadElsewhereStays) {
  Model model = dynamic_model(false, false, /*extra_reader=*/true);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "MatMulInteger"), 1u);
}

}  // namespace
}  // namespace onnxkit
