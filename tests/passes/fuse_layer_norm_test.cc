#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct LayerNormGraph {
  int64_t opset = 13;
  std::vector<int64_t> x_dims{2, 3, 8};
  std::vector<int64_t> axes{-1};
  bool square_by_mul = false;     // D * D instead of Pow(D, 2)
  bool reciprocal = false;        // D * Reciprocal(std) instead of D / std
  bool swapped_operands = false;  // eps + var, gamma * N, beta + ...
  bool with_gamma = true, with_beta = true;
  Shape gamma_shape{8};
};

Model layer_norm_model(const LayerNormGraph& spec) {
  Model model = empty_model(spec.opset);
  GraphBuilder b(model);
  Value* x = b.input("x", spec.x_dims);
  auto pair = [&](Value* a, Value* c) {
    return spec.swapped_operands ? std::vector<Value*>{c, a} : std::vector<Value*>{a, c};
  };
  Value* mean = b.op("ReduceMean", {x}, {Attr::Ints("axes", spec.axes)});
  Value* d = b.op("Sub", {x, mean});
  Value* sq = spec.square_by_mul ? b.op("Mul", {d, d}) : b.op("Pow", {d, b.scalar(2)});
  Value* var = b.op("ReduceMean", {sq}, {Attr::Ints("axes", spec.axes)});
  Value* std_dev = b.op("Sqrt", {b.op("Add", pair(var, b.scalar(1e-5f)))});
  Value* y =
      spec.reciprocal ? b.op("Mul", {d, b.op("Reciprocal", {std_dev})}) : b.op("Div", {d, std_dev});
  if (spec.with_gamma) y = b.op("Mul", pair(y, b.constant(random_floats(spec.gamma_shape, 2))));
  if (spec.with_beta) y = b.op("Add", pair(y, b.constant(random_floats(spec.gamma_shape, 3))));
  b.output(b.op("Relu", {y}));
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_layer_norm_pass(), model);
}

// Fuses and checks the result is one LayerNormalization of the right domain and attributes,
// feeding the Relu, with the outputs of the original.
void expect_fused(const LayerNormGraph& spec) {
  Model model = layer_norm_model(spec);
  Model before = copy_model(model);
  ASSERT_EQ(run_pass(model), 1u);
  ASSERT_EQ(model.graph().node_count(), 2u) << "LayerNormalization + Relu";
  const Node* norm = find_op(model, "LayerNormalization");
  ASSERT_NE(norm, nullptr);
  const bool onnx = spec.opset >= 17;
  EXPECT_EQ(norm->domain(), onnx ? "" : std::string(kOnnxkitDomain));
  EXPECT_EQ(model.opset_version(kOnnxkitDomain), onnx ? -1 : 1);
  EXPECT_EQ(norm->input(0)->name(), "x");
  EXPECT_EQ(norm->inputs().size(), spec.with_beta ? 3u : 2u);
  EXPECT_EQ(int_attribute_of(norm, "axis", 0), -static_cast<int64_t>(spec.axes.size()));
  EXPECT_FLOAT_EQ(float_attribute_of(norm, "epsilon"), 1e-5f);
  EXPECT_EQ(norm->output(0)->uses()[0].node->op_type(), "Relu");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseLayerNorm, PyTorchExportAtOpset13BecomesOnnxkitOp) {
  expect_fused({});
}

TEST(FuseLayerNorm, Opset17UsesTheOnnxOp) {
  LayerNormGraph spec;
  spec.opset = 17;
  expect_fused(spec);
}

TEST(FuseLayerNorm, SquareByMulReciprocalAndSwappedOperands) {
  LayerNormGraph spec;
  spec.square_by_mul = true;
  spec.reciprocal = true;
  spec.swapped_operands = true;
  expect_fused(spec);
}

TEST(FuseLayerNorm, SymbolicLeadingDimsAndOddSizes) {
  LayerNormGraph spec;
  spec.x_dims = {-1, 5, 7};
  spec.gamma_shape = {7};
  expect_fused(spec);
}

TEST(FuseLayerNorm, WithoutGammaOrBeta) {
  LayerNormGraph spec;
  spec.with_gamma = false;
  spec.with_beta = false;
  expect_fused(spec);
  spec.with_beta = true;
  expect_fused(spec);
}

TEST(FuseLayerNorm, TwoLastAxesWithBroadcastGamma) {
  LayerNormGraph spec;
  spec.axes = {1, 2};
  spec.gamma_shape = {8};  // broadcast over [3, 8]: stored expanded
  expect_fused(spec);
  Model model = layer_norm_model(spec);
  run_pass(model);
  const Node* norm = find_op(model, "LayerNormalization");
  ASSERT_TRUE(norm && norm->input(1)->has_initializer());
  EXPECT_EQ(norm->input(1)->initializer().shape(), (Shape{3, 8}));
}

TEST(FuseLayerNorm, LeftAloneWhenItIsNotALayerNorm) {
  {
    LayerNormGraph spec;  // over the middle axis only
    spec.axes = {1};
    spec.gamma_shape = {1};
    Model model = layer_norm_model(spec);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    LayerNormGraph spec;  // the normalized dim is not known
    spec.x_dims = {2, 3, -1};
    spec.gamma_shape = {1};
    Model model = layer_norm_model(spec);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    // The centered value is also a graph output: it has to stay.
    Model model = layer_norm_model({});
    model.graph().add_output(model.graph().find_value("Sub_1_out0"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    // Gamma that widens the result ([2, 1, 8] against [2, 3, 8] is fine, [4, 1, 8] is not
    // even valid; [2, 1, 1] varies over rows, not the normalized axis).
    LayerNormGraph spec;
    spec.gamma_shape = {2, 1, 1};
    Model model = layer_norm_model(spec);
    EXPECT_EQ(run_pass(model), 1u) << "the Mul by a row-varying tensor stays outside";
    EXPECT_EQ(count_ops(model, "Mul"), 1u);
  }
}

TEST(FuseLayerNorm, DifferentAxesInTheTwoReductionsAreLeftAlone) {
  Model model = empty_model(13);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3, 4});
  Value* mean = b.op("ReduceMean", {x}, {Attr::Ints("axes", {-1})});
  Value* d = b.op("Sub", {x, mean});
  Value* var = b.op("ReduceMean", {b.op("Pow", {d, b.scalar(2)})}, {Attr::Ints("axes", {1, 2})});
  b.output(b.op("Div", {d, b.op("Sqrt", {b.op("Add", {var, b.scalar(1e-5f)})})}));
  infer(model);
  EXPECT_EQ(run_pass(model), 0u);
}

}  // namespace
}  // namespace onnxkit
