#include "ir/verifier.h"

#include <gtest/gtest.h>

namespace onnxkit {
namespace {

::testing::AssertionResult fails_with(const Status& status, const std::string& text) {
  if (status.ok()) return ::testing::AssertionFailure() << "verifier accepted the graph";
  if (status.message().find(text) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message '" << status.message() << "' lacks '" << text << "'";
  }
  return ::testing::AssertionSuccess();
}

TEST(Verifier, AcceptsAWellFormedGraph) {
  Graph graph;
  Value* x = graph.add_input("x", {});
  Node* relu = graph.add_node("Relu", {x}, {"y"}, "", "relu_0");
  graph.add_output(relu->output(0));
  EXPECT_TRUE(verify_graph(graph).ok());
}

TEST(Verifier, CatchesAnUndefinedInput) {
  Graph graph;
  Value* ghost = graph.create_value("ghost");
  Node* relu = graph.add_node("Relu", {ghost}, {"y"}, "", "relu_0");
  graph.add_output(relu->output(0));
  EXPECT_TRUE(
      fails_with(verify_graph(graph), "[Relu] node 'relu_0' input 0 'ghost' is not produced"));
}

TEST(Verifier, CatchesAnUndefinedOutput) {
  Graph graph;
  graph.add_output(graph.create_value("nothing"));
  EXPECT_TRUE(fails_with(verify_graph(graph), "output 'nothing'"));
}

TEST(Verifier, CatchesACycle) {
  Graph graph;
  Value* x = graph.add_input("x", {});
  Node* a = graph.add_node("Add", {x, nullptr}, {"a"}, "", "add_a");
  Node* b = graph.add_node("Relu", {a->output(0)}, {"b"}, "", "relu_b");
  graph.set_node_input(a, 1, b->output(0));
  graph.add_output(b->output(0));
  EXPECT_TRUE(fails_with(verify_graph(graph), "cycle"));
}

TEST(Verifier, CatchesShadowingInASubgraph) {
  Graph graph;
  Value* cond = graph.add_input("cond", {});
  Value* x = graph.add_input("x", {});
  Node* if_node = graph.add_node("If", {cond}, {"out"}, "", "if_0");
  graph.add_output(if_node->output(0));
  Attribute branch;
  branch.name = "then_branch";
  branch.type = AttrType::kGraph;
  branch.g = std::make_unique<Graph>(&graph);
  Node* inner = branch.g->add_node("Identity", {x}, {"x_copy"}, "", "id");
  branch.g->add_output(inner->output(0));
  Graph* body = branch.g.get();
  if_node->set_attribute(std::move(branch));
  EXPECT_TRUE(verify_graph(graph).ok());
  // An inner value named like an outer one hides it.
  body->add_node("Identity", {x}, {"out"}, "", "shadow");
  EXPECT_TRUE(fails_with(verify_graph(graph), "shadows"));
}

TEST(Verifier, CatchesAnInitializerThatIsAlsoComputed) {
  Graph graph;
  Value* x = graph.add_input("x", {});
  Node* relu = graph.add_node("Relu", {x}, {"y"});
  EXPECT_THROW(graph.set_initializer(relu->output(0), Tensor(DType::kFloat, {1})), Error);
}

}  // namespace
}  // namespace onnxkit
