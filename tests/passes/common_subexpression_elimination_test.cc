#include <cmath>

#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_common_subexpression_elimination_pass(), model, std::move(context));
}

TEST(CommonSubexpressionElimination, ChainsCollapseInOneRun) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Node* r1 = g.add_node("Relu", {x}, {"r1"});
  Node* n1 = g.add_node("Neg", {r1->output(0)}, {"n1"});
  Node* r2 = g.add_node("Relu", {x}, {"r2"});
  Node* n2 = g.add_node("Neg", {r2->output(0)}, {"n2"});
  Node* add = g.add_node("Add", {n1->output(0), n2->output(0)}, {"y"});
  g.add_output(add->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  EXPECT_EQ(count_ops(model, "Relu"), 1u);
  EXPECT_EQ(count_ops(model, "Neg"), 1u);
  EXPECT_EQ(add->input(0), add->input(1));
  EXPECT_EQ(add->input(0), n1->output(0));
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(CommonSubexpressionElimination, DifferentAttributesOrInputsStay) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Value* z = g.add_input("z", float_type({2, 3}));
  Node* a = g.add_node("LeakyRelu", {x}, {"a"});
  a->set_attribute(float_attribute("alpha", 0.1f));
  Node* b = g.add_node("LeakyRelu", {x}, {"b"});
  b->set_attribute(float_attribute("alpha", 0.2f));
  Node* c = g.add_node("LeakyRelu", {x}, {"c"});  // default alpha: not compared to 0.01
  Node* s1 = g.add_node("Sub", {x, z}, {"s1"});
  Node* s2 = g.add_node("Sub", {z, x}, {"s2"});
  Node* t1 = g.add_node("Transpose", {x}, {"t1"});
  t1->set_attribute(ints_attribute("perm", {1, 0}));
  Node* t2 = g.add_node("Transpose", {x}, {"t2"});
  t2->set_attribute(ints_attribute("perm", {0, 1}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* abs = g.add_node("Abs", {x}, {"ab"});
  for (Node* node : {a, b, c, s1, s2, t1, t2, relu, abs}) g.add_output(node->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.node_count(), 9u);
}

TEST(CommonSubexpressionElimination, AttributeOrderDoesNotMatter) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({2, 3}));
  Value* b = g.add_input("b", float_type({3, 4}));
  Node* g1 = g.add_node("Gemm", {a, b}, {"g1"});
  g1->set_attribute(float_attribute("alpha", 2.0f));
  g1->set_attribute(int_attribute("transA", 0));
  Node* g2 = g.add_node("Gemm", {a, b}, {"g2"});
  g2->set_attribute(int_attribute("transA", 0));
  g2->set_attribute(float_attribute("alpha", 2.0f));
  Node* add = g.add_node("Add", {g1->output(0), g2->output(0)}, {"y"});
  g.add_output(add->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Gemm"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CommonSubexpressionElimination, FloatAttributesCompareByBits) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  const float nan = std::nanf("");
  Node* a = g.add_node("LeakyRelu", {x}, {"a"});
  a->set_attribute(float_attribute("alpha", nan));
  Node* b = g.add_node("LeakyRelu", {x}, {"b"});
  b->set_attribute(float_attribute("alpha", nan));
  Node* c = g.add_node("LeakyRelu", {x}, {"c"});
  c->set_attribute(float_attribute("alpha", 0.0f));
  Node* d = g.add_node("LeakyRelu", {x}, {"d"});
  d->set_attribute(float_attribute("alpha", -0.0f));
  Node* sum = g.add_node("Sum", {a->output(0), b->output(0), c->output(0), d->output(0)}, {"y"});
  g.add_output(sum->output(0));
  EXPECT_EQ(run_pass(model), 1u) << "the NaNs merge, 0 and -0 do not";
  EXPECT_EQ(count_ops(model, "LeakyRelu"), 3u);
}

TEST(CommonSubexpressionElimination, TensorAttributes) {
  Model model = empty_model();
  Graph& g = model.graph();
  auto constant = [&](const char* name, std::vector<float> values) {
    Node* node = g.add_node("Constant", {}, {name});
    node->set_attribute(tensor_attribute(
        "value",
        Tensor::from_vector<float>(DType::kFloat, {static_cast<int64_t>(values.size())}, values)));
    return node;
  };
  Node* c1 = constant("c1", {1, 2, 3});
  Node* c2 = constant("c2", {1, 2, 3});
  Node* c3 = constant("c3", {1, 2, 4});
  Node* sum = g.add_node("Sum", {c1->output(0), c2->output(0), c3->output(0)}, {"y"});
  g.add_output(sum->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Constant"), 2u);
  EXPECT_EQ(sum->input(1), c1->output(0));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CommonSubexpressionElimination, RandomOpsAreNeverMerged) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Node* r1 = g.add_node("RandomUniformLike", {x}, {"r1"});
  Node* r2 = g.add_node("RandomUniformLike", {x}, {"r2"});
  Value* ratio = g.add_initializer("ratio", Tensor::from_vector<float>(DType::kFloat, {}, {0.5f}));
  Value* on = g.add_initializer("on", Tensor::from_vector<bool>(DType::kBool, {}, {true}));
  Node* d1 = g.add_node("Dropout", {x, ratio, on}, {"d1"});
  Node* d2 = g.add_node("Dropout", {x, ratio, on}, {"d2"});
  Node* b1 = g.add_node("Bernoulli", {x}, {"b1"});
  Node* b2 = g.add_node("Bernoulli", {x}, {"b2"});
  for (Node* node : {r1, r2, d1, d2, b1, b2}) g.add_output(node->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.node_count(), 6u);
}

TEST(CommonSubexpressionElimination, NodesWithSubgraphsAreNeverMerged) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* c = g.add_input("c", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  auto make_if = [&](const std::string& out) {
    auto then_branch = std::make_unique<Graph>(&g);
    then_branch->add_output(then_branch->add_node("Neg", {x}, {out + "_then"})->output(0));
    auto else_branch = std::make_unique<Graph>(&g);
    else_branch->add_output(else_branch->add_node("Abs", {x}, {out + "_else"})->output(0));
    Node* node = g.add_node("If", {c}, {out});
    node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
    node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
    return node;
  };
  Node* i1 = make_if("i1");
  Node* i2 = make_if("i2");
  Node* add = g.add_node("Add", {i1->output(0), i2->output(0)}, {"y"});
  g.add_output(add->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "If"), 2u);
}

TEST(CommonSubexpressionElimination, GraphOutputs) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  // Both graph outputs: both names stay, so both nodes stay.
  Node* a1 = g.add_node("Relu", {x}, {"a1"});
  Node* a2 = g.add_node("Relu", {x}, {"a2"});
  g.add_output(a1->output(0));
  g.add_output(a2->output(0));
  // Only the later one is a graph output: the earlier node's value takes its name.
  Node* b1 = g.add_node("Neg", {x}, {"b1"});
  Node* use = g.add_node("Abs", {b1->output(0)}, {"u"});
  Node* b2 = g.add_node("Neg", {x}, {"b2"});
  g.add_output(use->output(0));
  g.add_output(b2->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Relu"), 2u);
  EXPECT_EQ(count_ops(model, "Neg"), 1u);
  EXPECT_EQ(g.outputs()[3]->name(), "b2");
  EXPECT_EQ(g.outputs()[3]->producer(), b1);
  EXPECT_EQ(use->input(0), b1->output(0));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CommonSubexpressionElimination, MultipleOutputs) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({4}));
  Node* s1 = g.add_node("Split", {x}, {"p", "q"});
  Node* s2 = g.add_node("Split", {x}, {"", "q2"});  // the later one uses fewer outputs
  Node* add = g.add_node("Add", {s1->output(0), s2->output(1)}, {"y"});
  g.add_output(add->output(0));
  g.add_output(s1->output(1));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Split"), 1u);
  EXPECT_EQ(add->input(1), s1->output(1));
  EXPECT_TRUE(same_outputs(before, model));
  // An earlier node without the output the later one has cannot stand in for it.
  Model partial = empty_model(13);
  Graph& p = partial.graph();
  Value* px = p.add_input("x", float_type({4}));
  Node* t1 = p.add_node("Split", {px}, {"a", ""});
  Node* t2 = p.add_node("Split", {px}, {"b", "c"});
  p.add_output(t1->output(0));
  p.add_output(t2->output(1));
  EXPECT_EQ(run_pass(partial), 0u);
}

TEST(CommonSubexpressionElimination, CustomDomainsAreLeftAlone) {
  Model model = empty_model();
  model.opset_imports.push_back({"custom", 1});
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Node* a = g.add_node("Op", {x}, {"a"}, "custom");
  Node* b = g.add_node("Op", {x}, {"b"}, "custom");
  g.add_output(a->output(0));
  g.add_output(b->output(0));
  auto pass = make_common_subexpression_elimination_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), 0u);
}

TEST(CommonSubexpressionElimination, InsideSubgraphReadingOuterValues) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* c = g.add_input("c", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  auto then_branch = std::make_unique<Graph>(&g);
  Graph* body = then_branch.get();
  Node* n1 = body->add_node("Neg", {x}, {"n1"});
  Node* n2 = body->add_node("Neg", {x}, {"n2"});
  Node* sum = body->add_node("Add", {n1->output(0), n2->output(0)}, {"then_out"});
  body->add_output(sum->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(else_branch->add_node("Abs", {x}, {"else_out"})->output(0));
  Node* if_node = g.add_node("If", {c}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  auto pass = make_common_subexpression_elimination_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), 0u);
  EXPECT_EQ(pass->run(*body, context), 1u);
  EXPECT_EQ(body->node_count(), 2u);
  EXPECT_TRUE(verify_model(model).ok());
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CommonSubexpressionElimination, ValueReturnedBySubgraphIsNotReplaced) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* c = g.add_input("c", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Node* n1 = g.add_node("Neg", {x}, {"n1"});
  Node* n2 = g.add_node("Neg", {x}, {"n2"});
  auto then_branch = std::make_unique<Graph>(&g);
  then_branch->add_output(n2->output(0));  // returned directly, not a node input
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(n1->output(0));
  Node* if_node = g.add_node("If", {c}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Neg"), 2u);
}

TEST(CommonSubexpressionElimination, LongParallelChainsAreLinear) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({1}));
  constexpr int kLength = 20000;
  Value* a = x;
  Value* b = x;
  for (int i = 0; i < kLength; ++i) {
    a = g.add_node("Neg", {a}, {numbered('a', i)})->output(0);
    b = g.add_node("Neg", {b}, {numbered('b', i)})->output(0);
  }
  Node* add = g.add_node("Add", {a, b}, {"y"});
  g.add_output(add->output(0));
  auto pass = make_common_subexpression_elimination_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), static_cast<size_t>(kLength));
  EXPECT_EQ(g.node_count(), static_cast<size_t>(kLength + 1));
}

}  // namespace
}  // namespace onnxkit
