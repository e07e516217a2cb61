#include "onnx/onnx_checks.h"
#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// a (`a_dims`) -> MatMul(B [4, 5]) -> Add(bias of `bias_shape`) -> y.
Model matmul_add_model(std::vector<int64_t> a_dims, const Shape& bias_shape,
                       bool matmul_first = true, int64_t opset = 13) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type(std::move(a_dims)));
  Node* matmul =
      g.add_node("MatMul", {a, g.add_initializer("B", random_floats({4, 5}, 1))}, {"p"}, "", "mm");
  Value* bias = g.add_initializer("bias", random_floats(bias_shape, 2));
  Node* add = matmul_first ? g.add_node("Add", {matmul->output(0), bias}, {"y"}, "", "add")
                           : g.add_node("Add", {bias, matmul->output(0)}, {"y"}, "", "add");
  Node* relu = g.add_node("Relu", {add->output(0)}, {"z"});
  g.add_output(relu->output(0));
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_matmul_add_into_gemm_pass(), model);
}

void expect_fused(Model model) {
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "MatMul"), 0u);
  EXPECT_EQ(count_ops(model, "Add"), 0u);
  ASSERT_EQ(count_ops(model, "Gemm"), 1u);
  const Node* gemm = model.graph().nodes()[0];
  EXPECT_EQ(gemm->op_type(), "Gemm");
  EXPECT_EQ(gemm->input(0)->name(), "a");
  EXPECT_EQ(gemm->input(1)->name(), "B");
  EXPECT_EQ(gemm->input(2)->name(), "bias");
  EXPECT_TRUE(gemm->attributes().empty()) << "alpha = beta = 1, no transposes";
  EXPECT_EQ(gemm->output(0)->name(), "y") << "the Add's output name is kept";
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseMatMulAddIntoGemm, BiasVectorsAndMatrices) {
  for (const Shape& bias : {Shape{5}, Shape{1, 5}, Shape{3, 5}, Shape{3, 1}, Shape{}, Shape{1}}) {
    SCOPED_TRACE(shape_to_string(bias));
    expect_fused(matmul_add_model({3, 4}, bias));
    expect_fused(matmul_add_model({3, 4}, bias, /*matmul_first=*/false));
  }
}

TEST(FuseMatMulAddIntoGemm, SymbolicRowsWithARowVectorBias) {
  expect_fused(matmul_add_model({-1, 4}, {5}));
}

TEST(FuseMatMulAddIntoGemm, OutputNameOfAGraphOutputIsKept) {
  Model model = matmul_add_model({3, 4}, {5});
  model.graph().add_output(model.graph().find_value("y"));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(model.graph().outputs()[1]->name(), "y");
  EXPECT_EQ(model.graph().outputs()[1]->producer()->op_type(), "Gemm");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseMatMulAddIntoGemm, BatchedMatMulIsLeftAlone) {
  Model model = matmul_add_model({2, 3, 4}, {5});
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "MatMul"), 1u);
}

TEST(FuseMatMulAddIntoGemm, BiasesThatDoNotBroadcastToTheProductAreLeftAlone) {
  // [n, 5] with unknown n, a rank-3 bias (widens the result), a [5, 1] bias with 3 rows.
  Model symbolic = matmul_add_model({-1, 4}, {2, 5});
  EXPECT_EQ(run_pass(symbolic), 0u);
  Model rank3 = matmul_add_model({3, 4}, {1, 1, 5});
  EXPECT_EQ(run_pass(rank3), 0u);
  Model column = matmul_add_model({3, 4}, {5, 1});
  EXPECT_EQ(run_pass(column), 0u);
}

TEST(FuseMatMulAddIntoGemm, NegativeCases) {
  {  // unknown rank of A
    Model model = matmul_add_model({3, 4}, {5});
    model.graph().find_value("a")->set_type(ValueType::tensor(DType::kFloat));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // B from a graph input
    Model model = matmul_add_model({3, 4}, {5});
    model.graph().add_input(model.graph().find_value("B"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a computed bias
    Model model = matmul_add_model({3, 4}, {5});
    Graph& g = model.graph();
    g.set_node_input(g.find_value("y")->producer(), 1, g.add_input("b_in", float_type({5})));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a second reader of the product
    Model model = matmul_add_model({3, 4}, {5});
    Graph& g = model.graph();
    g.add_output(g.add_node("Relu", {g.find_value("p")}, {"r"})->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // the product is a graph output
    Model model = matmul_add_model({3, 4}, {5});
    model.graph().add_output(model.graph().find_value("p"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // opset 6: Gemm's C broadcasting needs a flag
    Model model = matmul_add_model({3, 4}, {5}, true, 6);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // integer tensors
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* a = g.add_input(
        "a", ValueType::tensor(DType::kInt32, std::vector<Dim>{Dim::known(3), Dim::known(4)}));
    Node* mm =
        g.add_node("MatMul", {a, g.add_initializer("B", Tensor(DType::kInt32, {4, 5}))}, {"p"});
    Node* add = g.add_node(
        "Add", {mm->output(0), g.add_initializer("c", Tensor(DType::kInt32, {5}))}, {"y"});
    g.add_output(add->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseMatMulAddIntoGemm, ChainsOfPairsAllFuse) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* current = g.add_input("a", float_type({2, 4}));
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    Node* mm = g.add_node("MatMul", {current, g.add_initializer("B" + n, random_floats({4, 4}, i))},
                          {"p" + n});
    Node* add = g.add_node(
        "Add", {mm->output(0), g.add_initializer("c" + n, random_floats({4}, 10 + i))}, {"y" + n});
    current = add->output(0);
  }
  g.add_output(current);
  // The pipeline infers shapes before each round: the later A's ranks come from that.
  ASSERT_TRUE(infer_shapes(model).ok());
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 3u);
  EXPECT_EQ(count_ops(model, "Gemm"), 3u);
  EXPECT_EQ(model.graph().node_count(), 3u);
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
