#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct LinearOptions {
  std::vector<int64_t> flatten_target{-1, 4};
  bool bias = true;
  Shape bias_shape{5};
  float alpha = 1.0f;
  int64_t trans_b = 0;
  Dim unflatten_lead = Dim::symbol("seq");  // the second dim the output is declared with
};

// x [batch, seq, 4] -> Reshape -> Gemm(W [4, 5], b) -> Reshape -> y [batch, seq, 5] -> Relu.
Model linear_model(const LinearOptions& o) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x =
      g.add_input("x", float_dims({Dim::symbol("batch"), Dim::symbol("seq"), Dim::known(4)}));
  Node* flatten = g.add_node("Reshape", {x, g.add_initializer("flat", int64s(o.flatten_target))},
                             {"rows"}, "", "flat");
  flatten->output(0)->set_type(float_dims({Dim::symbol("rows"), Dim::known(4)}));
  Shape w_shape = o.trans_b ? Shape{5, 4} : Shape{4, 5};
  std::vector<Value*> gemm_inputs{flatten->output(0),
                                  g.add_initializer("W", random_floats(w_shape, 1))};
  if (o.bias) gemm_inputs.push_back(g.add_initializer("b", random_floats(o.bias_shape, 2)));
  Node* gemm = g.add_node("Gemm", gemm_inputs, {"prod"}, "", "gemm");
  if (o.alpha != 1.0f) set_float(gemm, "alpha", o.alpha);
  if (o.trans_b) set_int(gemm, "transB", 1);
  gemm->output(0)->set_type(float_dims({Dim::symbol("rows"), Dim::known(5)}));
  // The unflatten target comes from x's shape at run time, as exporters write it.
  Node* shape = g.add_node("Shape", {x}, {"x_shape"}, "", "shape");
  Node* lead = g.add_node("Slice",
                          {shape->output(0), g.add_initializer("s0", int64s({0})),
                           g.add_initializer("s1", int64s({2}))},
                          {"lead"}, "", "lead");
  Node* target = g.add_node("Concat", {lead->output(0), g.add_initializer("n", int64s({5}))},
                            {"target"}, "", "target");
  set_int(target, "axis", 0);
  Node* unflatten =
      g.add_node("Reshape", {gemm->output(0), target->output(0)}, {"y"}, "", "unflat");
  unflatten->output(0)->set_type(
      float_dims({Dim::symbol("batch"), o.unflatten_lead, Dim::known(5)}));
  Node* relu = g.add_node("Relu", {unflatten->output(0)}, {"z"}, "", "relu");
  g.add_output(relu->output(0));
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_reshape_gemm_into_matmul_pass(), model);
}

TEST(FuseReshapeGemmIntoMatMul, ALinearOverRowsBecomesMatMulAndAdd) {
  for (const Shape& bias : {Shape{5}, Shape{1, 5}, Shape{}, Shape{1}}) {
    SCOPED_TRACE(shape_to_string(bias));
    LinearOptions options;
    options.bias_shape = bias;
    Model model = linear_model(options);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u);
    EXPECT_EQ(count_ops(model, "Gemm"), 0u);
    EXPECT_EQ(count_ops(model, "Reshape"), 0u);
    EXPECT_EQ(count_ops(model, "MatMul"), 1u);
    EXPECT_EQ(count_ops(model, "Add"), 1u);
    const Node* relu = model.graph().outputs()[0]->producer();
    EXPECT_EQ(relu->input(0)->name(), "y") << "the second Reshape's output name is kept";
    EXPECT_TRUE(same_outputs(before, model));
  }
}

TEST(FuseReshapeGemmIntoMatMul, WithoutABiasOnlyTheMatMulIsLeft) {
  LinearOptions options;
  options.bias = false;
  Model model = linear_model(options);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "MatMul"), 1u);
  EXPECT_EQ(count_ops(model, "Add"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseReshapeGemmIntoMatMul, LeavesGemmsThatAreNotAPlainLinearOverRows) {
  LinearOptions scaled;
  scaled.alpha = 2.0f;
  LinearOptions transposed;
  transposed.trans_b = 1;
  LinearOptions matrix_bias;  // one bias row per flattened row: depends on the flattening
  matrix_bias.bias_shape = Shape{3, 5};
  LinearOptions partial_flatten;  // [-1, 4] is required; [0, 4] keeps dim 0 instead
  partial_flatten.flatten_target = {0, 4};
  LinearOptions other_dims;  // the output is not declared with x's leading dims
  other_dims.unflatten_lead = Dim::symbol("other");
  for (const LinearOptions& options :
       {scaled, transposed, matrix_bias, partial_flatten, other_dims}) {
    Model model = linear_model(options);
    EXPECT_EQ(run_pass(model), 0u);
    EXPECT_EQ(count_ops(model, "Gemm"), 1u);
  }
}

}  // namespace
}  // namespace onnxkit
