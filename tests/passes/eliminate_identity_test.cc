#include "onnx/onnx_checks.h"
#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_eliminate_identity_pass(), model, std::move(context));
}

TEST(EliminateIdentity, ChainBetweenNodesIsRemoved) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* id1 = g.add_node("Identity", {relu->output(0)}, {"i1"});
  Node* id2 = g.add_node("Identity", {id1->output(0)}, {"i2"});
  Node* neg = g.add_node("Neg", {id2->output(0)}, {"n"});
  Node* add = g.add_node("Add", {id1->output(0), neg->output(0)}, {"y"});
  g.add_output(add->output(0));
  infer(model);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  EXPECT_EQ(count_ops(model, "Identity"), 0u);
  EXPECT_EQ(neg->input(0), relu->output(0));
  EXPECT_EQ(add->input(0), relu->output(0));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(EliminateIdentity, GraphOutputKeepsItsName) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({-1, 3}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* id = g.add_node("Identity", {relu->output(0)}, {"y"});
  g.add_output(id->output(0));
  infer(model);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Identity"), 0u);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer(), relu);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(EliminateIdentity, InputToOutputIdentityStays) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* id = g.add_node("Identity", {x}, {"y"});
  g.add_output(id->output(0));
  Node* relu = g.add_node("Relu", {x}, {"z"});
  g.add_output(relu->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
}

TEST(EliminateIdentity, OutputToOutputIdentityStays) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* id = g.add_node("Identity", {relu->output(0)}, {"y"});
  g.add_output(relu->output(0));
  g.add_output(id->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
}

TEST(EliminateIdentity, KeepValuesAreRespected) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* id = g.add_node("Identity", {relu->output(0)}, {"kept"});
  Node* neg = g.add_node("Neg", {id->output(0)}, {"y"});
  g.add_output(neg->output(0));
  PassContext context;
  context.keep_values = {"kept"};
  EXPECT_EQ(run_pass(model, context), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
}

TEST(EliminateIdentity, SequenceIdentityIsRemoved) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 2}));
  Node* seq = g.add_node("SequenceConstruct", {x, x}, {"s"});
  Node* id = g.add_node("Identity", {seq->output(0)}, {"s2"});
  Node* len = g.add_node("SequenceLength", {id->output(0)}, {"y"});
  g.add_output(len->output(0));
  infer(model);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Identity"), 0u);
  EXPECT_EQ(len->input(0), seq->output(0));
  EXPECT_TRUE(same_outputs(before, model));
}

// x -> Identity -> t; If(c) { then: returns outer t directly; else: returns Neg(x) }.
Model model_with_branch_returning(bool return_identity_output) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* c = g.add_input("c", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Node* id = g.add_node("Identity", {x}, {"t"});
  auto then_branch = std::make_unique<Graph>(&g);
  if (return_identity_output) {
    then_branch->add_output(id->output(0));
  } else {
    Node* abs = then_branch->add_node("Abs", {id->output(0)}, {"then_out"});
    then_branch->add_output(abs->output(0));
  }
  auto else_branch = std::make_unique<Graph>(&g);
  Node* neg = else_branch->add_node("Neg", {x}, {"else_out"});
  else_branch->add_output(neg->output(0));
  Node* if_node = g.add_node("If", {c}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  return model;
}

TEST(EliminateIdentity, SubgraphReadersAreRewired) {
  Model model = model_with_branch_returning(false);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Identity"), 0u);
  Node* if_node = model.graph().nodes().back();
  Node* abs = if_node->subgraphs()[0]->nodes()[0];
  EXPECT_EQ(abs->input(0)->name(), "x");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(EliminateIdentity, ValueReturnedBySubgraphStays) {
  Model model = model_with_branch_returning(true);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
}

TEST(EliminateIdentity, IdentityOfOuterValueInSubgraphStays) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* c = g.add_input("c", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  auto then_branch = std::make_unique<Graph>(&g);
  Node* id = then_branch->add_node("Identity", {x}, {"then_out"});
  then_branch->add_output(id->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  Node* relu = else_branch->add_node("Relu", {x}, {"r"});
  Node* id2 = else_branch->add_node("Identity", {relu->output(0)}, {"else_out"});
  else_branch->add_output(id2->output(0));
  Graph* then_graph = then_branch.get();
  Graph* else_graph = else_branch.get();
  Node* if_node = g.add_node("If", {c}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  auto pass = make_eliminate_identity_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(*then_graph, context), 0u) << "outer x cannot be the branch's output";
  EXPECT_EQ(pass->run(*else_graph, context), 1u);
  EXPECT_EQ(else_graph->node_count(), 1u);
  EXPECT_EQ(else_graph->outputs()[0]->name(), "else_out");
  EXPECT_TRUE(verify_model(model).ok());
  EXPECT_TRUE(same_outputs(before, model));
}

// x -> Dropout -> Relu -> y (mask optionally a second output of the graph).
Model dropout_model(int64_t opset, std::vector<int64_t> dims, bool mask_output) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type(dims));
  Node* dropout = g.add_node("Dropout", {x}, {"d", mask_output ? "mask" : ""});
  Node* relu = g.add_node("Relu", {dropout->output(0)}, {"y"});
  g.add_output(relu->output(0));
  if (mask_output) g.add_output(dropout->output(1));
  return model;
}

TEST(EliminateIdentity, InferenceDropoutIsRemoved) {
  for (int64_t opset : {7, 10, 13}) {
    Model model = dropout_model(opset, {2, 3}, false);
    infer(model);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u) << opset;
    EXPECT_EQ(count_ops(model, "Dropout"), 0u);
    EXPECT_EQ(model.graph().nodes()[0]->input(0)->name(), "x");
    EXPECT_TRUE(same_outputs(before, model)) << opset;
  }
}

TEST(EliminateIdentity, DropoutWithConstantFalseTrainingModeIsRemoved) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Value* ratio = g.add_initializer("ratio", Tensor::from_vector<float>(DType::kFloat, {}, {0.5f}));
  Value* mode = g.add_initializer("mode", Tensor::from_vector<bool>(DType::kBool, {}, {false}));
  Node* dropout = g.add_node("Dropout", {x, ratio, mode}, {"d"});
  Node* relu = g.add_node("Relu", {dropout->output(0)}, {"y"});
  g.add_output(relu->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Dropout"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(EliminateIdentity, TrainingDropoutStays) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Value* ratio = g.add_initializer("ratio", Tensor::from_vector<float>(DType::kFloat, {}, {0.5f}));
  Value* on = g.add_initializer("on", Tensor::from_vector<bool>(DType::kBool, {}, {true}));
  Value* mode = g.add_input("mode", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  // Constant true, and a runtime flag (a graph input), both keep the node.
  Node* d1 = g.add_node("Dropout", {x, ratio, on}, {"d1"});
  Node* d2 = g.add_node("Dropout", {x, ratio, mode}, {"d2"});
  g.add_output(d1->output(0));
  g.add_output(d2->output(0));
  // A default that a caller may override is not a constant either.
  Value* defaulted =
      g.add_initializer("defaulted", Tensor::from_vector<bool>(DType::kBool, {}, {false}));
  g.add_input(defaulted);
  Node* d3 = g.add_node("Dropout", {x, ratio, defaulted}, {"d3"});
  g.add_output(d3->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Dropout"), 3u);
}

TEST(EliminateIdentity, ZeroRatioTrainingDropoutIsRemoved) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Value* ratio = g.add_initializer("ratio", Tensor::from_vector<float>(DType::kFloat, {}, {0.0f}));
  Value* on = g.add_initializer("on", Tensor::from_vector<bool>(DType::kBool, {}, {true}));
  Node* dropout = g.add_node("Dropout", {x, ratio, on}, {"d"});
  Node* relu = g.add_node("Relu", {dropout->output(0)}, {"y"});
  g.add_output(relu->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(EliminateIdentity, UsedStaticMaskBecomesAConstant) {
  for (int64_t opset : {9, 13}) {
    Model model = dropout_model(opset, {2, 3}, true);
    infer(model);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u) << opset;
    EXPECT_EQ(count_ops(model, "Dropout"), 0u);
    const Value* mask = model.graph().outputs()[1];
    EXPECT_EQ(mask->name(), "mask");
    ASSERT_TRUE(mask->has_initializer());
    EXPECT_EQ(mask->initializer().dtype(), opset >= 10 ? DType::kBool : DType::kFloat);
    EXPECT_EQ(mask->initializer().shape(), (Shape{2, 3}));
    EXPECT_TRUE(same_outputs(before, model)) << opset;
  }
}

TEST(EliminateIdentity, UsedSymbolicMaskKeepsTheDropout) {
  Model model = dropout_model(13, {-1, 3}, true);
  infer(model);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Dropout"), 1u);
}

TEST(EliminateIdentity, OldDropoutNeedsIsTest) {
  Model training = dropout_model(6, {2}, false);
  EXPECT_EQ(run_pass(training), 0u) << "is_test defaults to 0 (training) before opset 7";
  Model test = dropout_model(6, {2}, false);
  test.graph().nodes()[0]->set_attribute(int_attribute("is_test", 1));
  EXPECT_EQ(run_pass(test), 1u);
  EXPECT_EQ(count_ops(test, "Dropout"), 0u);
}

TEST(EliminateIdentity, DropoutFromInputToOutputBecomesIdentity) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Node* dropout = g.add_node("Dropout", {x}, {"y"});
  g.add_output(dropout->output(0));
  infer(model);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Dropout"), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_EQ(run_pass(model), 0u) << "the Identity is final";
}

TEST(EliminateIdentity, CustomDomainIdentityStays) {
  Model model = empty_model();
  model.opset_imports.push_back({"custom", 1});
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* id = g.add_node("Identity", {relu->output(0)}, {"i"}, "custom");
  Node* neg = g.add_node("Neg", {id->output(0)}, {"y"});
  g.add_output(neg->output(0));
  EXPECT_EQ(run_pass(model), 0u);
}

}  // namespace
}  // namespace onnxkit
