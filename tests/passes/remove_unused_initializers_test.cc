#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_remove_unused_initializers_pass(), model, std::move(context));
}

TEST(RemoveUnusedInitializers, UnreadInitializersGo) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* used = g.add_initializer("used", floats({1, 2}));
  g.add_initializer("unused1", floats({3, 4}));
  g.add_initializer("unused2", floats({5, 6}));
  g.add_output(g.add_node("Add", {x, used}, {"y"})->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  ASSERT_EQ(g.initializers().size(), 1u);
  EXPECT_EQ(g.initializers()[0], used);
  EXPECT_EQ(g.find_value("unused1"), nullptr);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(RemoveUnusedInitializers, InterfaceAndKeepValuesStay) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* as_input = g.add_initializer("as_input", floats({1, 2}));
  g.add_input(as_input);  // unread, but part of the interface
  Value* as_output = g.add_initializer("as_output", floats({3, 4}));
  g.add_output(as_output);
  g.add_initializer("kept", floats({5, 6}));
  g.add_output(g.add_node("Neg", {x}, {"y"})->output(0));
  PassContext context;
  context.keep_values = {"kept"};
  EXPECT_EQ(run_pass(model, context), 0u);
  EXPECT_EQ(g.initializers().size(), 3u);
}

TEST(RemoveUnusedInitializers, SubgraphReadersCount) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Value* read = g.add_initializer("read_inside", floats({1, 2}));
  Value* returned = g.add_initializer("returned_inside", floats({3, 4}));
  g.add_initializer("unused", floats({5, 6}));
  auto then_branch = std::make_unique<Graph>(&g);
  // Nested one level deeper: If inside the then branch reads `read`.
  auto inner_then = std::make_unique<Graph>(then_branch.get());
  inner_then->add_output(inner_then->add_node("Neg", {read}, {"deep"})->output(0));
  auto inner_else = std::make_unique<Graph>(then_branch.get());
  inner_else->add_output(returned);
  Node* inner_if = then_branch->add_node("If", {cond}, {"then_out"});
  inner_if->set_attribute(graph_attribute("then_branch", std::move(inner_then)));
  inner_if->set_attribute(graph_attribute("else_branch", std::move(inner_else)));
  then_branch->add_output(inner_if->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(returned);
  Node* if_node = g.add_node("If", {cond}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(g.initializers().size(), 2u);
  EXPECT_NE(g.find_value("read_inside"), nullptr);
  EXPECT_NE(g.find_value("returned_inside"), nullptr);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(RemoveUnusedInitializers, SubgraphInitializers) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  auto then_branch = std::make_unique<Graph>(&g);
  Graph* body = then_branch.get();
  Value* w = body->add_initializer("w", floats({1, 2}));
  body->add_initializer("dead_w", floats({3, 4}));
  body->add_output(body->add_node("Add", {x, w}, {"then_out"})->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(else_branch->add_node("Neg", {x}, {"else_out"})->output(0));
  Node* if_node = g.add_node("If", {cond}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  auto pass = make_remove_unused_initializers_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), 0u);
  EXPECT_EQ(pass->run(*body, context), 1u);
  EXPECT_EQ(body->initializers().size(), 1u);
  EXPECT_TRUE(verify_model(model).ok());
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
