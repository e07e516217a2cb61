#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct SkipGraph {
  int64_t opset = 17;  // 17: ONNX LayerNormalization; 13: com.onnxkit's
  std::vector<int64_t> x_dims{2, -1, 8};
  std::vector<int64_t> skip_dims{2, -1, 8};
  bool bias = false;             // X = Add(bias, P)
  bool residual_reader = false;  // the sum also feeds a later Add
  bool beta = true;
  int64_t axis = -1;
};

Model skip_model(const SkipGraph& spec) {
  Model model = empty_model(spec.opset);
  if (spec.opset < 17) model.opset_imports.push_back({std::string(kOnnxkitDomain), 1});
  GraphBuilder b(model);
  Value* x = b.input("x", spec.x_dims);
  Value* skip = b.input("skip", spec.skip_dims);
  if (spec.bias) x = b.op("Add", {b.constant(random_floats({8}, 5)), x});
  Value* sum = b.op("Add", {x, skip});
  std::vector<Value*> ln_inputs{sum, b.constant(random_floats({8}, 6))};
  if (spec.beta) ln_inputs.push_back(b.constant(random_floats({8}, 7)));
  Node* norm = b.node("LayerNormalization", ln_inputs,
                      {Attr::Int("axis", spec.axis), Attr::Float("epsilon", 1e-3f)}, 1,
                      spec.opset < 17 ? std::string(kOnnxkitDomain) : "");
  Value* y = b.op("Relu", {norm->output(0)});
  if (spec.residual_reader) y = b.op("Add", {y, sum});
  b.output(y);
  infer(model);
  // ONNX does not know com.onnxkit's op: its output has the sum's type.
  if (spec.opset < 17) {
    norm->output(0)->set_type(sum->type());
    b.graph().add_value_info(norm->output(0));
  }
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_skip_layer_norm_pass(), model);
}

void expect_fused(const SkipGraph& spec) {
  Model model = skip_model(spec);
  Model before = copy_model(model);
  ASSERT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "LayerNormalization"), 0u);
  EXPECT_EQ(count_ops(model, "Add"), spec.residual_reader ? 1u : 0u);
  const Node* fused = find_op(model, "SkipLayerNormalization");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->domain(), kOnnxkitDomain);
  EXPECT_EQ(model.opset_version(kOnnxkitDomain), 1);
  EXPECT_EQ(fused->input(0)->name(), "x");
  EXPECT_EQ(fused->input(1)->name(), "skip");
  EXPECT_EQ(fused->input(3) != nullptr, spec.beta);
  EXPECT_EQ(fused->input(4) != nullptr, spec.bias);
  EXPECT_FLOAT_EQ(float_attribute_of(fused, "epsilon"), 1e-3f);
  // The sum is an output exactly when the residual reads it.
  EXPECT_EQ(fused->output(1) != nullptr, spec.residual_reader);
  if (spec.residual_reader) {
    ASSERT_EQ(fused->output(1)->uses().size(), 1u);
    EXPECT_EQ(fused->output(1)->uses()[0].node->op_type(), "Add");
  }
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseSkipLayerNorm, AddThenOnnxLayerNorm) {
  expect_fused({});
}

TEST(FuseSkipLayerNorm, BiasIsAbsorbedAndSumFeedsTheResidual) {
  SkipGraph spec;
  spec.bias = true;
  spec.residual_reader = true;
  expect_fused(spec);
  spec.beta = false;
  expect_fused(spec);
}

TEST(FuseSkipLayerNorm, OnnxkitLayerNormBeforeOpset17) {
  SkipGraph spec;
  spec.opset = 13;
  spec.bias = true;
  spec.residual_reader = true;
  expect_fused(spec);
}

TEST(FuseSkipLayerNorm, AxisGivenAsLastIndex) {
  SkipGraph spec;
  spec.axis = 2;
  expect_fused(spec);
}

TEST(FuseSkipLayerNorm, BroadcastingAddIsLeftAlone) {
  SkipGraph spec;
  spec.skip_dims = {1, -1, 8};  // position embeddings added to every batch element
  Model model = skip_model(spec);
  EXPECT_EQ(run_pass(model), 0u);
  spec.skip_dims = {2, 5, 8};  // a number against a symbol: not certainly equal
  model = skip_model(spec);
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseSkipLayerNorm, NotTheLastAxisIsLeftAlone) {
  SkipGraph spec;
  spec.axis = 1;
  spec.x_dims = spec.skip_dims = {2, 8, 8};
  Model model = skip_model(spec);
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseSkipLayerNorm, LayerNormStatisticsInUseAreLeftAlone) {
  Model model = empty_model(17);
  GraphBuilder b(model);
  Value* sum = b.op("Add", {b.input("x", {2, 8}), b.input("skip", {2, 8})});
  Node* norm = b.node("LayerNormalization", {sum, b.constant(random_floats({8}, 1))}, {}, 2);
  b.output(norm->output(0));
  b.output(norm->output(1));
  infer(model);
  EXPECT_EQ(run_pass(model), 0u);
}

}  // namespace
}  // namespace onnxkit
