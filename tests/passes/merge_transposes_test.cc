#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

Node* transpose(Graph& g, Value* input, const std::string& out,
                std::optional<std::vector<int64_t>> perm) {
  Node* node = g.add_node("Transpose", {input}, {out});
  if (perm) set_ints(node, "perm", *perm);
  return node;
}

// x[2,3,4] -> Transpose(perm1) -> Transpose(perm2) -> Relu -> y
Model two_transposes(std::optional<std::vector<int64_t>> perm1,
                     std::optional<std::vector<int64_t>> perm2, bool relu = true) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Node* t1 = transpose(g, x, "t1", perm1);
  Node* t2 = transpose(g, t1->output(0), "t2", perm2);
  if (relu) {
    g.add_output(g.add_node("Relu", {t2->output(0)}, {"y"})->output(0));
  } else {
    g.add_output(t2->output(0));
  }
  return model;
}

TEST(MergeTransposes, ComposesPermutations) {
  Model model = two_transposes(std::vector<int64_t>{1, 0, 2}, std::vector<int64_t>{0, 2, 1});
  Model before = copy_model(model);
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 1u);
  Node* t = find_op(model, "Transpose");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->input(0)->name(), "x");
  EXPECT_EQ(t->find_attribute("perm")->ints, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeTransposes, DefaultPermIsReverse) {
  // Reverse [2,1,0] then [1,0,2]: [1,2,0]. The rank comes from the given perm.
  Model model = two_transposes(std::nullopt, std::vector<int64_t>{1, 0, 2});
  Model before = copy_model(model);
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  Node* t = find_op(model, "Transpose");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->find_attribute("perm")->ints, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeTransposes, InversePermsCancel) {
  Model model = two_transposes(std::vector<int64_t>{1, 2, 0}, std::vector<int64_t>{2, 0, 1});
  Model before = copy_model(model);
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 0u);
  EXPECT_EQ(find_op(model, "Relu")->input(0)->name(), "x");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeTransposes, TwoDefaultPermsCancelWithoutKnownRank) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", ValueType::tensor(DType::kFloat));  // rank unknown
  Node* t1 = transpose(g, x, "t1", std::nullopt);
  Node* t2 = transpose(g, t1->output(0), "t2", std::nullopt);
  Node* relu = g.add_node("Relu", {t2->output(0)}, {"y"});
  g.add_output(relu->output(0));
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(model.graph().node_count(), 1u);
  EXPECT_EQ(relu->input(0)->name(), "x");
}

TEST(MergeTransposes, IdentityKeepsTheInterfaceWhenInputIsOutput) {
  // y = T(T(x)) = x with y a graph output: an Identity keeps the name "t2".
  Model model = two_transposes(std::vector<int64_t>{1, 2, 0}, std::vector<int64_t>{2, 0, 1},
                               /*relu=*/false);
  Model before = copy_model(model);
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
  EXPECT_EQ(model.graph().outputs()[0]->name(), "t2");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeTransposes, ChainOfThreeBecomesOne) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4, 5}));
  Node* t1 = transpose(g, x, "t1", std::vector<int64_t>{0, 2, 3, 1});
  Node* t2 = transpose(g, t1->output(0), "t2", std::vector<int64_t>{3, 2, 1, 0});
  Node* t3 = transpose(g, t2->output(0), "t3", std::vector<int64_t>{1, 0, 3, 2});
  g.add_output(t3->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 2u);
  EXPECT_EQ(count_ops(model, "Transpose"), 1u);
  EXPECT_EQ(model.graph().outputs()[0]->name(), "t3");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeTransposes, FirstWithSecondConsumerIsKept) {
  Model model = two_transposes(std::vector<int64_t>{1, 0, 2}, std::vector<int64_t>{0, 2, 1});
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("t1")}, {"z"})->output(0));
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Transpose"), 2u);
}

TEST(MergeTransposes, CancellingPairWithSecondConsumerDropsOnlyTheSecond) {
  Model model = two_transposes(std::vector<int64_t>{1, 2, 0}, std::vector<int64_t>{2, 0, 1});
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("t1")}, {"z"})->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 1u);
  EXPECT_TRUE(model.graph().find_value("t1"));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeTransposes, GraphOutputInTheMiddleIsKept) {
  Model model = two_transposes(std::vector<int64_t>{1, 0, 2}, std::vector<int64_t>{0, 2, 1});
  model.graph().add_output(model.graph().find_value("t1"));
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Transpose"), 2u);
}

TEST(MergeTransposes, OtherDomainIsLeftAlone) {
  Model model = empty_model(13);
  model.opset_imports.push_back({"custom", 1});
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Node* t1 = g.add_node("Transpose", {x}, {"t1"}, "custom");
  Node* t2 = transpose(g, t1->output(0), "t2", std::nullopt);
  g.add_output(t2->output(0));
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
}

// If(cond) whose then-branch transposes `t1` (a main-graph Transpose) again.
Model transpose_read_in_subgraph(bool inner_first) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Value* source = x;
  if (!inner_first) source = transpose(g, x, "t1", std::vector<int64_t>{1, 0})->output(0);
  auto then_branch = std::make_unique<Graph>(&g);
  Value* inner = source;
  if (inner_first) inner = transpose(*then_branch, x, "t1", std::vector<int64_t>{1, 0})->output(0);
  then_branch->add_output(
      transpose(*then_branch, inner, "t2", std::vector<int64_t>{1, 0})->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(else_branch->add_node("Identity", {x}, {"e"})->output(0));
  Node* if_node = g.add_node("If", {cond}, {"y"});
  Attribute then_attr;
  then_attr.name = "then_branch";
  then_attr.type = AttrType::kGraph;
  then_attr.g = std::move(then_branch);
  if_node->set_attribute(std::move(then_attr));
  Attribute else_attr;
  else_attr.name = "else_branch";
  else_attr.type = AttrType::kGraph;
  else_attr.g = std::move(else_branch);
  if_node->set_attribute(std::move(else_attr));
  g.add_output(if_node->output(0));
  return model;
}

TEST(MergeTransposes, SubgraphLeavesOuterNodesAlone) {
  Model model = transpose_read_in_subgraph(/*inner_first=*/false);
  PassContext context;
  context.model = &model;
  Graph& then_branch = *model.graph().nodes().back()->subgraphs()[0];
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(pass->run(then_branch, context), 0u);
  EXPECT_EQ(count_ops(model, "Transpose"), 1u);
}

TEST(MergeTransposes, WorksInsideSubgraphs) {
  Model model = transpose_read_in_subgraph(/*inner_first=*/true);
  Model before = copy_model(model);
  PassContext context;
  context.model = &model;
  Graph& then_branch = *model.graph().nodes().back()->subgraphs()[0];
  auto pass = make_merge_transposes_pass();
  EXPECT_EQ(pass->run(then_branch, context), 1u);
  // t2 = x (an outer value) and a branch output: an Identity keeps the branch's output.
  EXPECT_EQ(then_branch.node_count(), 1u);
  EXPECT_EQ(then_branch.nodes()[0]->op_type(), "Identity");
  EXPECT_TRUE(verify_model(model).ok()) << verify_model(model).message();
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit::testing
