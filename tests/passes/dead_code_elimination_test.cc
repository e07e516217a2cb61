#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_dead_code_elimination_pass(), model, std::move(context));
}

TEST(DeadCodeElimination, UnreadChainsGo) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* dead1 = g.add_node("Neg", {relu->output(0)}, {"d1"});
  g.add_node("Abs", {dead1->output(0)}, {"d2"});
  g.add_node("Exp", {x}, {"d3"});
  Node* out = g.add_node("Sigmoid", {relu->output(0)}, {"y"});
  g.add_output(out->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 3u);
  EXPECT_EQ(g.node_count(), 2u);
  EXPECT_EQ(g.find_value("d1"), nullptr);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(DeadCodeElimination, NodeWithOneUsedOutputStays) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Node* split = g.add_node("Split", {x}, {"a", "b"});
  Node* neg = g.add_node("Neg", {split->output(1)}, {"y"});
  g.add_output(neg->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.node_count(), 2u);
}

TEST(DeadCodeElimination, GraphOutputsAndKeepValuesAreRoots) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* a = g.add_node("Neg", {x}, {"a"});
  Node* b = g.add_node("Abs", {a->output(0)}, {"b"});
  Node* c = g.add_node("Exp", {x}, {"c"});
  g.add_output(b->output(0));
  PassContext context;
  context.keep_values = {"c"};
  EXPECT_EQ(run_pass(model, context), 0u);
  EXPECT_EQ(g.node_count(), 3u);
  EXPECT_EQ(c->output(0)->name(), "c");
}

// x -> n (Neg) read only inside a branch of If; m (Abs) returned directly by a branch.
Model model_with_if(bool if_is_used) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Node* n = g.add_node("Neg", {x}, {"n"});
  Node* m = g.add_node("Abs", {x}, {"m"});
  auto then_branch = std::make_unique<Graph>(&g);
  Node* inner = then_branch->add_node("Exp", {n->output(0)}, {"then_out"});
  then_branch->add_output(inner->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(m->output(0));
  Node* if_node = g.add_node("If", {cond}, {"i"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  if (if_is_used) {
    g.add_output(if_node->output(0));
  } else {
    g.add_output(g.add_node("Sigmoid", {x}, {"y"})->output(0));
  }
  return model;
}

TEST(DeadCodeElimination, ValuesReadOrReturnedBySubgraphsAreUsed) {
  Model model = model_with_if(true);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(model.graph().node_count(), 3u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(DeadCodeElimination, UnusedNodeWithSubgraphGoesWithWhatOnlyItReads) {
  Model model = model_with_if(false);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 3u);
  EXPECT_EQ(model.graph().node_count(), 1u);
  EXPECT_EQ(count_ops(model, "If"), 0u);
  EXPECT_TRUE(model.graph().find_value("x")->uses().size() == 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(DeadCodeElimination, DeadCodeInsideASubgraph) {
  Model model = model_with_if(true);
  Graph& g = model.graph();
  Graph* then_branch = g.nodes().back()->subgraphs()[0];
  Value* x = g.find_value("x");
  then_branch->add_node("Sin", {x}, {"dead_inner"});
  Model before = copy_model(model);
  auto pass = make_dead_code_elimination_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), 0u);
  EXPECT_EQ(pass->run(*then_branch, context), 1u);
  EXPECT_EQ(then_branch->node_count(), 1u);
  EXPECT_EQ(x->uses().size(), 2u) << "the removed inner node no longer reads x";
  EXPECT_TRUE(verify_model(model).ok());
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(DeadCodeElimination, CustomDomainNodesArePureToo) {
  Model model = empty_model();
  model.opset_imports.push_back({"custom", 1});
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  g.add_node("Op", {x}, {"unused"}, "custom");
  g.add_output(g.add_node("Neg", {x}, {"y"})->output(0));
  auto pass = make_dead_code_elimination_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), 1u);
  EXPECT_EQ(g.node_count(), 1u);
}

TEST(DeadCodeElimination, NodeFeedingTwoDeadConsumersAndOneLive) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Node* shared = g.add_node("Relu", {x}, {"s"});
  g.add_node("Neg", {shared->output(0)}, {"d1"});
  g.add_node("Abs", {shared->output(0)}, {"d2"});
  Node* live = g.add_node("Exp", {shared->output(0)}, {"y"});
  g.add_output(live->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  EXPECT_EQ(shared->output(0)->uses().size(), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
