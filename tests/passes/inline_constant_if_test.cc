#include <functional>

#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

using BranchBuilder = std::function<void(Graph&)>;

ValueType bool_type() {
  return ValueType::tensor(DType::kBool, std::vector<Dim>{});
}

// An If node in `graph` whose branches `then_branch` / `else_branch` fill.
Node* add_if(Graph& graph, Value* cond, const std::vector<std::string>& outputs,
             const BranchBuilder& then_branch, const BranchBuilder& else_branch,
             const std::string& name = "if") {
  Node* node = graph.add_node("If", {cond}, outputs, "", name);
  for (auto [attr_name, build] :
       {std::pair{"then_branch", &then_branch}, std::pair{"else_branch", &else_branch}}) {
    Attribute a;
    a.name = attr_name;
    a.type = AttrType::kGraph;
    a.g = std::make_unique<Graph>(&graph);
    a.g->set_name(attr_name);
    (*build)(*a.g);
    node->set_attribute(std::move(a));
  }
  return node;
}

size_t inline_ifs(Model& model, Graph* graph = nullptr) {
  return apply_pass(*make_inline_constant_if_pass(), model, {}, graph);
}

TEST(InlineConstantIf, TrueConditionTakesTheThenBranch) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* cond = g.add_initializer("cond", bool_scalar(true));
  Node* if_node = add_if(
      g, cond, {"y"},
      [&](Graph& b) {
        Value* c = b.add_initializer("then_c", random_floats({3}, 1));
        Node* add = b.add_node("Add", {x, c}, {"t"}, "", "then_add");
        Node* relu = b.add_node("Relu", {add->output(0)}, {"u"}, "", "then_relu");
        b.add_output(relu->output(0));
      },
      [&](Graph& b) { b.add_output(b.add_node("Neg", {x}, {"e"})->output(0)); });
  g.add_output(if_node->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(inline_ifs(model), 1u);
  EXPECT_EQ(count_ops(model, "If"), 0u);
  EXPECT_EQ(count_ops(model, "Neg"), 0u);
  EXPECT_EQ(g.node_count(), 2u);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y") << "the graph output keeps its name";
  ASSERT_TRUE(g.outputs()[0]->producer());
  EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Relu");
  Value* c = g.find_value("then_c");
  ASSERT_TRUE(c && c->has_initializer()) << "branch initializers move to the enclosing graph";
  EXPECT_FALSE(g.is_input(c));
  EXPECT_EQ(c->uses().size(), 1u);
  ASSERT_TRUE(g.find_value("t"));
  EXPECT_EQ(g.find_value("t")->producer()->input(0), x) << "outer values stay wired";
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(InlineConstantIf, FalseConditionWithOuterValuesAsOutputs) {
  // The else branch returns (m, x, m, m): a computed value, an outer value, and the same
  // value twice more. y feeds a Sigmoid; z, z2 and z3 are graph outputs.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* w = g.add_initializer("w", random_floats({3}, 2));
  Value* cond = g.add_initializer("cond", bool_scalar(false));
  Node* if_node = add_if(
      g, cond, {"y", "z", "z2", "z3"},
      [&](Graph& b) {
        for (int i = 0; i < 4; ++i) b.add_output(x);
      },
      [&](Graph& b) {
        Node* mul = b.add_node("Mul", {x, w}, {"m"});
        b.add_output(mul->output(0));
        b.add_output(x);
        b.add_output(mul->output(0));
        b.add_output(mul->output(0));
      });
  Node* sigmoid = g.add_node("Sigmoid", {if_node->output(0)}, {"out"});
  g.add_output(sigmoid->output(0));
  g.add_output(if_node->output(1));
  g.add_output(if_node->output(2));
  g.add_output(if_node->output(3));
  Model before = copy_model(model);

  EXPECT_EQ(inline_ifs(model), 1u);
  EXPECT_EQ(count_ops(model, "If"), 0u);
  EXPECT_EQ(count_ops(model, "Mul"), 1u);
  EXPECT_EQ(count_ops(model, "Identity"), 2u) << "for z (an input) and z3 (a second output)";
  ASSERT_EQ(g.outputs().size(), 4u);
  EXPECT_EQ(g.outputs()[0]->name(), "out");
  EXPECT_EQ(g.outputs()[1]->name(), "z");
  EXPECT_EQ(g.outputs()[1]->producer()->op_type(), "Identity");
  EXPECT_EQ(g.outputs()[1]->producer()->input(0), x);
  EXPECT_EQ(g.outputs()[2]->name(), "z2");
  EXPECT_EQ(g.outputs()[2]->producer()->op_type(), "Mul");
  EXPECT_EQ(g.outputs()[3]->name(), "z3");
  EXPECT_EQ(sigmoid->input(0), g.outputs()[2]) << "y's reader now reads the Mul";
  EXPECT_TRUE(g.is_input(x));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(InlineConstantIf, NamesClashingWithSiblingSubgraphsAreRenamed) {
  // Both Ifs use "t" inside their branches (legal: siblings). Moving the first If's "t" into
  // the main graph would shadow the second If's "t", so it is renamed.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* flag = g.add_input("flag", bool_type());
  Value* cond = g.add_initializer("cond", bool_scalar(true));
  auto neg = [&](Graph& b) { b.add_output(b.add_node("Neg", {x}, {"t"}, "", "t")->output(0)); };
  auto abs = [&](Graph& b) { b.add_output(b.add_node("Abs", {x}, {"t"})->output(0)); };
  Node* first = add_if(g, cond, {"y1"}, neg, abs, "first");
  Node* second = add_if(g, flag, {"y2"}, abs, neg, "second");
  Node* add = g.add_node("Add", {first->output(0), second->output(0)}, {"out"});
  g.add_output(add->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(inline_ifs(model), 1u);
  EXPECT_EQ(count_ops(model, "If"), 1u);
  EXPECT_EQ(g.find_value("t"), nullptr);
  Value* renamed = g.find_value("t_1");
  ASSERT_TRUE(renamed && renamed->producer());
  EXPECT_EQ(renamed->producer()->op_type(), "Neg");
  EXPECT_EQ(renamed->producer()->name(), "t_1") << "node names follow their values";
  EXPECT_EQ(add->input(0), renamed);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(InlineConstantIf, NestedSubgraphsMoveAlong) {
  // then: b = x + c; inner If(flag) { b * x } else { If(true) { b - w } else { b } }.
  // The inner subgraphs read the branch's b (now a main-graph value), x and w.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* flag = g.add_input("flag", bool_type());
  Value* w = g.add_initializer("w", random_floats({3}, 3));
  Value* cond = g.add_initializer("cond", bool_scalar(true));
  Node* outer_if = add_if(
      g, cond, {"y"},
      [&](Graph& b) {
        Value* c = b.add_initializer("c", random_floats({3}, 4));
        Value* sum = b.add_node("Add", {x, c}, {"b"})->output(0);
        Value* inner_cond = b.add_initializer("inner_cond", bool_scalar(true));
        Node* inner = add_if(
            b, flag, {"inner_out"},
            [&](Graph& t) {
              t.add_output(t.add_node("Mul", {sum, x}, {"prod"})->output(0));
            },
            [&](Graph& e) {
              Node* deepest = add_if(
                  e, inner_cond, {"deep_out"},
                  [&](Graph& t) {
                    t.add_output(t.add_node("Sub", {sum, w}, {"diff"})->output(0));
                  },
                  [&](Graph& t) { t.add_output(sum); }, "deepest");
              e.add_output(deepest->output(0));
            },
            "inner");
        b.add_output(inner->output(0));
      },
      [&](Graph& b) { b.add_output(x); });
  g.add_output(outer_if->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(inline_ifs(model), 1u);
  ASSERT_EQ(count_ops(model, "If"), 1u);
  Node* inner = g.outputs()[0]->producer();
  ASSERT_TRUE(inner && inner->op_type() == "If");
  EXPECT_EQ(inner->name(), "inner");
  EXPECT_EQ(inner->input(0), flag);
  for (Graph* sub : inner->subgraphs()) EXPECT_EQ(sub->parent(), &g);
  Value* b = g.find_value("b");
  ASSERT_TRUE(b && b->producer());
  // b is read by the Mul inside the inner If, the Sub two levels down and the output of the
  // deepest else branch, and by nothing left over from the old branch.
  ASSERT_EQ(b->uses().size(), 3u);
  for (const Use& use : b->uses()) EXPECT_TRUE(use.node->graph()->is_within(&g));
  EXPECT_TRUE(g.find_value("inner_cond")->has_initializer());
  EXPECT_TRUE(same_outputs(before, model));

  // The constant If two levels down is inlined when the pipeline visits its graph.
  Graph& else_graph = *inner->subgraphs()[1];
  EXPECT_EQ(inline_ifs(model, &else_graph), 1u);
  EXPECT_EQ(else_graph.node_count(), 1u);
  EXPECT_EQ(else_graph.nodes()[0]->op_type(), "Sub");
  EXPECT_EQ(else_graph.outputs()[0]->name(), "deep_out");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(InlineConstantIf, InsideALoopBodyReadingBodyAndOuterValues) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  Value* w = g.add_initializer("w", random_floats({2}, 5));
  Value* trips = g.add_initializer("trips", Tensor::from_vector<int64_t>(DType::kInt64, {}, {3}));
  Value* go = g.add_initializer("go", bool_scalar(true));
  Node* loop = g.add_node("Loop", {trips, go, x}, {"v_final"}, "", "loop");
  g.add_output(loop->output(0));
  Attribute body_attr;
  body_attr.name = "body";
  body_attr.type = AttrType::kGraph;
  body_attr.g = std::make_unique<Graph>(&g);
  Graph& body = *body_attr.g;
  body.add_input("iter", ValueType::tensor(DType::kInt64, std::vector<Dim>{}));
  Value* cond_in = body.add_input("cond_in", bool_type());
  Value* v = body.add_input("v", float_type({2}));
  Value* pick = body.add_initializer("pick", bool_scalar(false));
  Node* if_node = add_if(
      body, pick, {"next"}, [&](Graph& b) { b.add_output(v); },
      [&](Graph& b) {
        Node* mul = b.add_node("Mul", {v, w}, {"scaled"});
        Node* add = b.add_node("Add", {mul->output(0), v}, {"next_v"});
        b.add_output(add->output(0));
      });
  Node* cond_out = body.add_node("Identity", {cond_in}, {"cond_out"});
  body.add_output(cond_out->output(0));
  body.add_output(if_node->output(0));
  loop->set_attribute(std::move(body_attr));
  Model before = copy_model(model);

  EXPECT_EQ(inline_ifs(model), 0u) << "the main graph has no If";
  EXPECT_EQ(inline_ifs(model, &body), 1u);
  EXPECT_EQ(body.node_count(), 3u);
  ASSERT_EQ(body.outputs().size(), 2u);
  EXPECT_EQ(body.outputs()[1]->name(), "next") << "the body output keeps its name";
  EXPECT_EQ(body.outputs()[1]->producer()->op_type(), "Add");
  Node* mul = body.find_value("scaled")->producer();
  EXPECT_EQ(mul->input(0), v);
  EXPECT_EQ(mul->input(1), w);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(InlineConstantIf, LeavesConditionsThatAreNotConstant) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3}));
  Value* flag = g.add_input("flag", bool_type());
  // An initializer that is also a graph input is a default the caller may override.
  Value* overridable = g.add_initializer("overridable", bool_scalar(true));
  g.add_input(overridable);
  auto neg = [&](Graph& b) { b.add_output(b.add_node("Neg", {x}, {"n"})->output(0)); };
  auto abs = [&](Graph& b) { b.add_output(b.add_node("Abs", {x}, {"a"})->output(0)); };
  Node* first = add_if(g, flag, {"y1"}, neg, abs, "first");
  Node* second = add_if(g, overridable, {"y2"}, abs, neg, "second");
  g.add_output(first->output(0));
  g.add_output(second->output(0));
  Model before = copy_model(model);

  EXPECT_EQ(inline_ifs(model), 0u);
  EXPECT_EQ(count_ops(model, "If"), 2u);
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit::testing
