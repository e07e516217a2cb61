#include "ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/status.h"
#include "ir/graph_clone.h"
#include "ir/verifier.h"

namespace onnxkit {
namespace {

bool uses_contain(const Value* value, const Node* node, size_t input) {
  const auto& uses = value->uses();
  return std::find(uses.begin(), uses.end(), Use{const_cast<Node*>(node), input}) != uses.end();
}

// x -> Relu -> a -> Add(a, w) -> y
struct SmallGraph {
  Graph graph;
  Value* x;
  Value* w;
  Node* relu;
  Node* add;
  SmallGraph() {
    x = graph.add_input("x", ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(4)}));
    w = graph.add_initializer("w", Tensor(DType::kFloat, {4}));
    relu = graph.add_node("Relu", {x}, {"a"});
    add = graph.add_node("Add", {relu->output(0), w}, {"y"});
    graph.add_output(add->output(0));
  }
};

TEST(Graph, AddNodeWiresProducersAndUses) {
  SmallGraph g;
  Value* a = g.graph.find_value("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->producer(), g.relu);
  EXPECT_EQ(a->producer_output(), 0u);
  EXPECT_TRUE(uses_contain(g.x, g.relu, 0));
  EXPECT_TRUE(uses_contain(a, g.add, 0));
  EXPECT_TRUE(uses_contain(g.w, g.add, 1));
  EXPECT_TRUE(verify_graph(g.graph).ok());
}

TEST(Graph, SetInputMovesTheUse) {
  SmallGraph g;
  g.graph.set_node_input(g.add, 0, g.x);
  EXPECT_TRUE(g.graph.find_value("a")->uses().empty());
  EXPECT_TRUE(uses_contain(g.x, g.add, 0));
  EXPECT_EQ(g.x->uses().size(), 2u);
}

TEST(Graph, ReplaceAllUsesRewiresNodesAndOutputs) {
  SmallGraph g;
  Value* y = g.graph.find_value("y");
  Node* neg = g.graph.add_node("Neg", {g.x}, {"n"});
  g.graph.replace_all_uses(y, neg->output(0));
  EXPECT_EQ(g.graph.outputs()[0], neg->output(0));
  g.graph.replace_all_uses(g.x, g.w);
  EXPECT_TRUE(g.x->uses().empty());
  EXPECT_EQ(g.relu->input(0), g.w);
  EXPECT_EQ(neg->input(0), g.w);
  EXPECT_EQ(g.w->uses().size(), 3u);
}

TEST(Graph, RemoveNodeDropsUsesAndOutputs) {
  SmallGraph g;
  EXPECT_THROW(g.graph.remove_node(g.relu), Error);  // 'a' is still read by Add
  g.graph.set_node_input(g.add, 0, g.x);
  g.graph.remove_node(g.relu);
  EXPECT_EQ(g.graph.find_value("a"), nullptr);
  EXPECT_EQ(g.x->uses().size(), 1u);
  EXPECT_EQ(g.graph.node_count(), 1u);
  EXPECT_TRUE(verify_graph(g.graph).ok());
}

TEST(Graph, RemoveNodeInputRenumbersLaterUses) {
  Graph graph;
  Value* a = graph.add_input("a", {});
  Value* b = graph.add_input("b", {});
  Value* c = graph.add_input("c", {});
  Node* concat = graph.add_node("Concat", {a, b, c}, {"out"});
  graph.remove_node_input(concat, 0);
  EXPECT_EQ(concat->inputs().size(), 2u);
  EXPECT_TRUE(a->uses().empty());
  EXPECT_TRUE(uses_contain(b, concat, 0));
  EXPECT_TRUE(uses_contain(c, concat, 1));
  EXPECT_EQ(b->uses().size(), 1u);
}

TEST(Graph, OmittedInputsAndOutputs) {
  Graph graph;
  Value* x = graph.add_input("x", {});
  Node* node = graph.add_node("Clip", {x, nullptr, nullptr}, {"y", ""});
  EXPECT_EQ(node->inputs().size(), 3u);
  EXPECT_EQ(node->input(1), nullptr);
  EXPECT_EQ(node->output(1), nullptr);
  EXPECT_EQ(x->uses().size(), 1u);
}

TEST(Graph, TopologicalOrderFixesOrderAndKeepsSortedGraphs) {
  Graph graph;
  Value* x = graph.add_input("x", {});
  // Insert consumers before producers.
  Node* last = graph.add_node("Neg", {}, {"z"});
  Node* middle = graph.add_node("Relu", {}, {"y"}, "", "", last);
  Node* first = graph.add_node("Abs", {x}, {"w"}, "", "", middle);
  graph.set_node_input(last, 0, middle->output(0));
  // Now order is first, middle, last but middle reads z (a dependency on last): make it
  // read w instead, then check a reversed insertion.
  graph.set_node_input(middle, 0, first->output(0));
  EXPECT_EQ(graph.topological_order(), (std::vector<Node*>{first, middle, last}));
  graph.move_before(last, first);
  graph.move_before(middle, first);
  EXPECT_EQ(graph.nodes(), (std::vector<Node*>{last, middle, first}));
  graph.sort_topologically();
  EXPECT_EQ(graph.nodes(), (std::vector<Node*>{first, middle, last}));
}

TEST(Graph, SubgraphCapturesAreDependencies) {
  Graph graph;
  Value* cond = graph.add_input("cond", {});
  Value* x = graph.add_input("x", {});
  Node* if_node = graph.add_node("If", {cond}, {"out"});
  Node* producer = graph.add_node("Relu", {x}, {"captured"});
  // The If's then-branch reads 'captured' from the outer graph.
  Attribute branch;
  branch.name = "then_branch";
  branch.type = AttrType::kGraph;
  branch.g = std::make_unique<Graph>(&graph);
  Graph* body = branch.g.get();
  Node* inner = body->add_node("Identity", {producer->output(0)}, {"inner_out"});
  body->add_output(inner->output(0));
  if_node->set_attribute(std::move(branch));
  EXPECT_TRUE(uses_contain(producer->output(0), inner, 0));
  EXPECT_EQ(graph.topological_order(), (std::vector<Node*>{producer, if_node}));
  // Removing the If takes the inner node's use of the outer value with it.
  graph.remove_node(if_node);
  EXPECT_TRUE(producer->output(0)->uses().empty());
}

// cond, x -> Relu -> t; If(cond) { then: returns outer t as it is; else: Neg(x) }.
struct BranchReturningOuterValue {
  Graph graph;
  Value* cond;
  Value* x;
  Value* t;
  Node* relu;
  Node* if_node;
  Graph* then_branch;
  Graph* else_branch;
  BranchReturningOuterValue() {
    cond = graph.add_input("cond", {});
    x = graph.add_input("x", {});
    relu = graph.add_node("Relu", {x}, {"t"});
    t = relu->output(0);
    auto then_graph = std::make_unique<Graph>(&graph);
    then_graph->add_output(t);
    auto else_graph = std::make_unique<Graph>(&graph);
    else_graph->add_output(else_graph->add_node("Neg", {x}, {"else_out"})->output(0));
    then_branch = then_graph.get();
    else_branch = else_graph.get();
    if_node = graph.add_node("If", {cond}, {"y"});
    if_node->set_attribute(graph_attribute("then_branch", std::move(then_graph)));
    if_node->set_attribute(graph_attribute("else_branch", std::move(else_graph)));
    graph.add_output(if_node->output(0));
  }
  static Attribute graph_attribute(std::string name, std::unique_ptr<Graph> graph) {
    Attribute attribute;
    attribute.name = std::move(name);
    attribute.type = AttrType::kGraph;
    attribute.g = std::move(graph);
    return attribute;
  }
};

TEST(Graph, SubgraphOutputNamingAnOuterValueIsAUse) {
  BranchReturningOuterValue g;
  const Node* returns = g.then_branch->return_node();
  EXPECT_TRUE(returns->is_return());
  EXPECT_EQ(returns->graph(), g.then_branch);
  EXPECT_EQ(returns->inputs(), g.then_branch->outputs());
  EXPECT_EQ(g.t->uses(), (std::vector<Use>{Use{const_cast<Node*>(returns), 0}}));
  EXPECT_TRUE(g.t->returned_by_subgraph());
  // x is read by a node inside the else branch, not returned; the else branch's output is
  // its own value and the main graph's output is the If's: neither is a use.
  EXPECT_FALSE(g.x->returned_by_subgraph());
  EXPECT_TRUE(g.else_branch->outputs()[0]->uses().empty());
  EXPECT_TRUE(g.if_node->output(0)->uses().empty());
  EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).message();
  // The Relu is still read, so it cannot be removed.
  EXPECT_THROW(g.graph.remove_node(g.relu), Error);
}

TEST(Graph, ReplaceAllUsesRewiresSubgraphOutputs) {
  BranchReturningOuterValue g;
  g.graph.replace_all_uses(g.t, g.x);
  EXPECT_EQ(g.then_branch->outputs()[0], g.x);
  EXPECT_TRUE(g.t->uses().empty());
  EXPECT_TRUE(uses_contain(g.x, g.then_branch->return_node(), 0));
  g.graph.remove_node(g.relu);
  EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).message();
}

TEST(Graph, SubgraphOutputEditsKeepUsesRight) {
  BranchReturningOuterValue g;
  Graph& branch = *g.then_branch;
  const Node* returns = branch.return_node();
  branch.add_output(g.x);  // outputs: t, x
  EXPECT_TRUE(uses_contain(g.x, returns, 1));
  branch.remove_output(0);  // outputs: x (renumbered)
  EXPECT_TRUE(g.t->uses().empty());
  EXPECT_EQ(g.x->uses().size(), 3u);  // Relu, Neg in the else branch, output 0 here
  EXPECT_TRUE(uses_contain(g.x, returns, 0));
  branch.set_output(0, g.t);
  EXPECT_TRUE(uses_contain(g.t, returns, 0));
  EXPECT_FALSE(uses_contain(g.x, returns, 0));
  // An output naming the branch's own value is no use.
  Node* abs = branch.add_node("Abs", {g.t}, {"abs_out"});
  branch.set_output(0, abs->output(0));
  EXPECT_TRUE(abs->output(0)->uses().empty());
  EXPECT_EQ(g.t->uses(), (std::vector<Use>{Use{abs, 0}}));
  EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).message();
}

TEST(Graph, DroppingASubgraphDropsItsOutputUses) {
  BranchReturningOuterValue g;
  // Replacing the branch destroys the old one, which takes its use of t back.
  auto replacement = std::make_unique<Graph>(&g.graph);
  replacement->add_output(g.x);
  g.if_node->set_attribute(
      BranchReturningOuterValue::graph_attribute("then_branch", std::move(replacement)));
  EXPECT_TRUE(g.t->uses().empty());
  EXPECT_TRUE(g.x->returned_by_subgraph());
  g.graph.remove_output(0);
  g.graph.remove_node(g.if_node);
  EXPECT_EQ(g.x->uses(), (std::vector<Use>{Use{g.relu, 0}}));
  g.graph.remove_node(g.relu);
  EXPECT_TRUE(g.x->uses().empty());
}

TEST(Graph, UsesOfOutputsOfSubgraphsNestedDeeper) {
  BranchReturningOuterValue g;
  // A Loop inside the else branch whose body returns the main graph's t.
  auto body = std::make_unique<Graph>(g.else_branch);
  body->add_output(g.t);
  const Node* returns = body->return_node();
  Node* loop = g.else_branch->add_node("Loop", {}, {"loop_out"});
  loop->set_attribute(BranchReturningOuterValue::graph_attribute("body", std::move(body)));
  EXPECT_TRUE(uses_contain(g.t, returns, 0));
  EXPECT_EQ(g.t->uses().size(), 2u);
  // Cloning the else branch records the copy's output use too; the copy's end takes it back.
  {
    std::unordered_map<const Value*, Value*> map;
    std::unique_ptr<Graph> copy = clone_graph(*g.else_branch, &g.graph, CloneOptions{&map, {}, {}});
    EXPECT_EQ(g.t->uses().size(), 3u);
    const Graph* copied_body = copy->nodes().back()->subgraphs()[0];
    EXPECT_TRUE(uses_contain(g.t, copied_body->return_node(), 0));
  }
  EXPECT_EQ(g.t->uses().size(), 2u);
  EXPECT_TRUE(verify_graph(g.graph).ok()) << verify_graph(g.graph).message();
}

TEST(Graph, StandardDomainHelpers) {
  EXPECT_EQ(canonical_domain("ai.onnx"), "");
  EXPECT_EQ(canonical_domain(""), "");
  EXPECT_EQ(canonical_domain("ai.onnx.ml"), "ai.onnx.ml");
  EXPECT_EQ(domain_label(""), "ai.onnx");
  EXPECT_EQ(domain_label("com.microsoft"), "com.microsoft");
  Graph graph;
  Value* x = graph.add_input("x", {});
  Node* relu = graph.add_node("Relu", {x}, {"a"});
  Node* fused = graph.add_node("Relu", {x}, {"b"}, std::string(kOnnxkitDomain));
  EXPECT_TRUE(is_onnx_op(relu, "Relu"));
  EXPECT_FALSE(is_onnx_op(relu, "Sigmoid"));
  EXPECT_FALSE(is_onnx_op(fused, "Relu"));
  EXPECT_TRUE(is_onnxkit_op(fused, "Relu"));
  EXPECT_FALSE(is_onnx_op(nullptr, "Relu"));
}

TEST(Graph, UniqueNameAvoidsOuterScopes) {
  Graph outer;
  outer.add_input("t", {});
  Graph inner(&outer);
  inner.add_input("t_1", {});
  EXPECT_EQ(inner.unique_name("t"), "t_2");
  EXPECT_EQ(inner.unique_name("fresh"), "fresh");
}

TEST(Graph, DuplicateNamesAreRefused) {
  Graph graph;
  graph.add_input("x", {});
  EXPECT_THROW(graph.create_value("x"), Error);
  Value* x = graph.find_value("x");
  graph.add_node("Relu", {x}, {"y"});
  EXPECT_THROW(graph.add_node("Relu", {x}, {"y"}), Error);
}

}  // namespace
}  // namespace onnxkit
