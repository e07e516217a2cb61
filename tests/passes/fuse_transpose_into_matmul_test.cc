#include "linear_fusion_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_fuse_transpose_into_matmul_pass(), model, std::move(context));
}

Value* transpose(Graph& g, Value* x, std::vector<int64_t> perm) {
  Node* t = g.add_node("Transpose", {x}, {g.unique_name("t")}, "", g.unique_name("tr"));
  if (!perm.empty()) set_ints(t, "perm", perm);
  return t->output(0);
}

float alpha_of(const Node* node) {
  const Attribute* a = node->find_attribute("alpha");
  return a ? a->f : 1.0f;
}

// Checks the single FusedMatMul's flags and alpha, the output name and the outputs.
const Node* expect_fused(Model& model, const Model& before, size_t changes, int64_t trans_a,
                         int64_t trans_b, float alpha) {
  const std::string output = model.graph().outputs()[0]->name();
  EXPECT_EQ(run_pass(model), changes);
  const Node* fused = only_node(model, "FusedMatMul");
  EXPECT_TRUE(fused);
  if (!fused) return nullptr;
  EXPECT_EQ(fused->domain(), kOnnxkitDomain);
  EXPECT_EQ(count_ops(model, "MatMul"), 0u);
  EXPECT_EQ(fused->output(0)->name(), output);
  EXPECT_EQ(int_attr(fused, "trans_a", 0), trans_a);
  EXPECT_EQ(int_attr(fused, "trans_b", 0), trans_b);
  EXPECT_FLOAT_EQ(alpha_of(fused), alpha);
  EXPECT_TRUE(imports_onnxkit(model));
  EXPECT_TRUE(same_outputs(before, model));
  return fused;
}

TEST(FuseTransposeIntoMatMul, LastTwoDimsSwaps) {
  {  // A^T of a batch
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* a = g.add_input("a", float_type({2, 5, 3}));
    Value* b = g.add_input("b", float_type({2, 5, 4}));
    g.add_output(add_op(g, "MatMul", {transpose(g, a, {0, 2, 1}), b}));
    infer(model);
    Model before = copy_model(model);
    expect_fused(model, before, 1, 1, 0, 1.0f);
    EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  }
  {  // B^T (K^T in attention) of rank 4, and a 2-D A^T without perm
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* q = g.add_input("q", float_type({2, 3, 5, 4}));
    Value* k = g.add_input("k", float_type({2, 3, 6, 4}));
    g.add_output(add_op(g, "MatMul", {q, transpose(g, k, {0, 1, 3, 2})}));
    Value* a = g.add_input("a", float_type({7, 3}));
    g.add_output(
        add_op(g, "MatMul", {transpose(g, a, {}), g.add_initializer("w", random_floats({7, 2}))}));
    infer(model);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 2u);
    EXPECT_EQ(count_ops(model, "Transpose"), 0u);
    EXPECT_EQ(count_ops(model, "FusedMatMul"), 2u);
    EXPECT_TRUE(same_outputs(before, model));
  }
}

TEST(FuseTransposeIntoMatMul, OtherPermutationsStay) {
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 2, 3, 1}, std::vector<int64_t>{1, 0, 2, 3},
        std::vector<int64_t>{0, 1, 2, 3}}) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* a = g.add_input("a", float_type({3, 3, 3, 3}));
    g.add_output(add_op(g, "MatMul", {transpose(g, a, perm), a}));
    infer(model);
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseTransposeIntoMatMul, IntegerProductsStay) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  auto type = ValueType::tensor(DType::kInt32, std::vector<Dim>{Dim::known(3), Dim::known(3)});
  Value* a = g.add_input("a", type);
  g.add_output(add_op(g, "MatMul", {transpose(g, a, {1, 0}), a}));
  infer(model);
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseTransposeIntoMatMul, SharedTransposes) {
  {  // two MatMuls read it: both get the flag, the Transpose goes
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* a = g.add_input("a", float_type({5, 3}));
    Value* t = transpose(g, a, {1, 0});
    g.add_output(add_op(g, "MatMul", {t, g.add_input("b", float_type({5, 4}))}));
    g.add_output(add_op(g, "MatMul", {g.add_input("c", float_type({2, 3})), t}));
    infer(model);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u);
    EXPECT_EQ(count_ops(model, "Transpose"), 0u);
    EXPECT_EQ(count_ops(model, "FusedMatMul"), 2u);
    EXPECT_TRUE(same_outputs(before, model));
  }
  {  // another reader keeps it, and the MatMul as it is
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* a = g.add_input("a", float_type({5, 3}));
    Value* t = transpose(g, a, {1, 0});
    g.add_output(add_op(g, "MatMul", {t, g.add_input("b", float_type({5, 4}))}));
    g.add_output(add_op(g, "Relu", {t}));
    infer(model);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a graph output stays
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* t = transpose(g, g.add_input("a", float_type({5, 3})), {1, 0});
    g.add_output(add_op(g, "MatMul", {t, g.add_input("b", float_type({5, 4}))}));
    g.add_output(t);
    infer(model);
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseTransposeIntoMatMul, FlagsToggleOnAFusedMatMul) {
  Model model = empty_model(13);
  model.opset_imports.push_back({std::string(kOnnxkitDomain), 1});
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({4, 5}));
  Value* b = g.add_input("b", float_type({5, 6}));
  Node* fused = g.add_node("FusedMatMul", {a, transpose(g, b, {1, 0})}, {"y"},
                           std::string(kOnnxkitDomain), "fm");
  set_int(fused, "trans_b", 1);  // B^T^T = B
  g.add_output(fused->output(0));
  fused->output(0)->set_type(float_type({4, 6}));
  infer(model);
  Model before = copy_model(model);
  expect_fused(model, before, 1, 0, 0, 1.0f);
}

TEST(FuseTransposeIntoMatMul, ScalarOfTheProductBecomesAlpha) {
  struct Case {
    std::string op;
    bool scalar_first;
    Shape shape;
    float alpha;
  };
  for (const Case& c : {Case{"Mul", false, {}, 0.25f}, Case{"Mul", true, {1}, 0.25f},
                        Case{"Div", false, {}, 4.0f}, Case{"Div", false, {1, 1, 1}, 4.0f}}) {
    SCOPED_TRACE(c.op + " " + shape_to_string(c.shape));
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* p =
        add_op(g, "MatMul",
               {g.add_input("a", float_type({2, 5, 3})), g.add_input("b", float_type({2, 3, 4}))});
    Tensor s(DType::kFloat, c.shape);
    s.mutable_data<float>()[0] = c.alpha;
    Value* scale = g.add_initializer("s", std::move(s));
    g.add_output(c.scalar_first ? add_op(g, c.op, {scale, p}) : add_op(g, c.op, {p, scale}));
    infer(model);
    Model before = copy_model(model);
    expect_fused(model, before, 1, 0, 0, c.op == "Mul" ? c.alpha : 1.0f / c.alpha);
    EXPECT_EQ(count_ops(model, c.op), 0u);
  }
}

TEST(FuseTransposeIntoMatMul, ScalesThatStay) {
  auto model_with = [](const std::string& op, Shape shape, bool scalar_first) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* p = add_op(g, "MatMul",
                      {g.add_input("a", float_type({5, 3})), g.add_input("b", float_type({3, 4}))});
    Value* s = g.add_initializer("s", random_floats(shape, 3));
    g.add_output(scalar_first ? add_op(g, op, {s, p}) : add_op(g, op, {p, s}));
    infer(model);
    return model;
  };
  Model broadcasting = model_with("Mul", {1, 1, 1}, false);  // would add a dim
  EXPECT_EQ(run_pass(broadcasting), 0u);
  Model vector = model_with("Mul", {4}, false);
  EXPECT_EQ(run_pass(vector), 0u);
  Model divided_by_product = model_with("Div", {}, true);  // s / (A @ B)
  EXPECT_EQ(run_pass(divided_by_product), 0u);
}

TEST(FuseTransposeIntoMatMul, ScaledOperands) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* a = add_op(g, "Mul", {float_scalar(g, 3.0f), g.add_input("a", float_type({2, 5, 3}))});
  Value* b = add_op(g, "Div", {g.add_input("b", float_type({3, 4})), float_scalar(g, 2.0f)});
  g.add_output(add_op(g, "MatMul", {a, b}));
  infer(model);
  Model before = copy_model(model);
  expect_fused(model, before, 2, 0, 0, 1.5f);
  EXPECT_EQ(count_ops(model, "Mul") + count_ops(model, "Div"), 0u);
  EXPECT_TRUE(model.graph().initializers().empty()) << "the scalars go with their nodes";
}

TEST(FuseTransposeIntoMatMul, ScaleAfterABiasRescalesIt) {
  Model model = empty_model(13);
  model.opset_imports.push_back({std::string(kOnnxkitDomain), 1});
  Graph& g = model.graph();
  Node* fused =
      g.add_node("FusedMatMul",
                 {g.add_input("a", float_type({5, 3})), g.add_input("b", float_type({3, 4})),
                  g.add_initializer("bias", random_floats({4}, 2))},
                 {"p"}, std::string(kOnnxkitDomain), "fm");
  fused->output(0)->set_type(float_type({5, 4}));
  g.add_output(add_op(g, "Mul", {fused->output(0), float_scalar(g, 0.5f)}));
  Model before = copy_model(model);
  const Node* result = expect_fused(model, before, 1, 0, 0, 0.5f);
  ASSERT_TRUE(result);
  EXPECT_NE(result->input(2)->name(), "bias");

  // After an activation the scale cannot move.
  Model activated = copy_model(before);
  Node* node = activated.graph().find_value("p")->producer();
  set_string(node, "activation", "Relu");
  EXPECT_EQ(run_pass(activated), 0u);
}

TEST(FuseTransposeIntoMatMul, DoubleKeepsItsScales) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  auto dtype = ValueType::tensor(DType::kDouble, std::vector<Dim>{Dim::known(3), Dim::known(3)});
  Value* p = add_op(g, "MatMul", {g.add_input("a", dtype), g.add_input("b", dtype)});
  Tensor s(DType::kDouble, Shape{});
  s.mutable_data<double>()[0] = 0.1;
  g.add_output(add_op(g, "Mul", {p, g.add_initializer("s", std::move(s))}));
  infer(model);
  EXPECT_EQ(run_pass(model), 0u);
}

}  // namespace
}  // namespace onnxkit
