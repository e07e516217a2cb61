#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

Node* concat(Graph& g, std::vector<Value*> inputs, const std::string& out,
             std::optional<int64_t> axis) {
  Node* node = g.add_node("Concat", std::move(inputs), {out});
  if (axis) {
    set_int(node, "axis", *axis);
  }
  return node;
}

std::vector<std::string> input_names(const Node* node) {
  std::vector<std::string> names;
  for (const Value* v : node->inputs()) names.push_back(v->name());
  return names;
}

// inner = Concat(a, b; inner_axis); y = Concat(p, inner, q; outer_axis). `typed` = false
// leaves every type unknown.
Model nested(int64_t inner_axis, int64_t outer_axis, bool typed = true, int64_t opset = 13) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  auto type = [&](int64_t d) {
    return typed ? float_type({2, d}) : ValueType::tensor(DType::kFloat);
  };
  Value* p = g.add_input("p", type(1));
  Value* a = g.add_input("a", type(2));
  Value* b = g.add_input("b", type(3));
  Value* q = g.add_input("q", type(4));
  Node* inner = concat(g, {a, b}, "inner", inner_axis);
  g.add_output(concat(g, {p, inner->output(0), q}, "y", outer_axis)->output(0));
  return model;
}

TEST(MergeConcats, InnerConcatIsInlinedAtItsPosition) {
  Model model = nested(1, 1);
  Model before = copy_model(model);
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  ASSERT_EQ(count_ops(model, "Concat"), 1u);
  EXPECT_EQ(input_names(find_op(model, "Concat")), (std::vector<std::string>{"p", "a", "b", "q"}));
  EXPECT_EQ(model.graph().outputs()[0]->name(), "y");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeConcats, NegativeAxisIsNormalizedWithTheRank) {
  Model model = nested(-1, 1);
  Model before = copy_model(model);
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Concat"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeConcats, NegativeAxisWithUnknownRankIsLeftAlone) {
  Model model = nested(-1, 1, /*typed=*/false);
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  // The same axis as written needs no rank.
  Model same = nested(-1, -1, /*typed=*/false);
  EXPECT_EQ(apply_pass(*pass, same), 1u);
}

TEST(MergeConcats, DifferentAxesAreLeftAlone) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({2, 3}));
  Value* b = g.add_input("b", float_type({2, 3}));
  Node* inner = concat(g, {a, b}, "inner", 1);  // [2,6]
  g.add_output(concat(g, {inner->output(0), inner->output(0)}, "y", 0)->output(0));
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Concat"), 2u);
}

TEST(MergeConcats, InnerReadTwiceByTheOuterIsInlinedTwice) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({2, 3}));
  Value* b = g.add_input("b", float_type({1, 3}));
  Node* inner = concat(g, {a, b}, "inner", 0);
  g.add_output(concat(g, {inner->output(0), b, inner->output(0)}, "y", 0)->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(input_names(find_op(model, "Concat")),
            (std::vector<std::string>{"a", "b", "b", "a", "b"}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeConcats, ChainFlattensIntoOne) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({2, 3}));
  Value* b = g.add_input("b", float_type({2, 1}));
  Node* c1 = concat(g, {a, b}, "c1", 1);
  Node* c2 = concat(g, {b, c1->output(0)}, "c2", -1);
  Node* c3 = concat(g, {c2->output(0), a}, "c3", 1);
  g.add_output(c3->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 2u);
  EXPECT_EQ(input_names(find_op(model, "Concat")), (std::vector<std::string>{"b", "a", "b", "a"}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeConcats, InnerWithSecondConsumerIsKept) {
  Model model = nested(1, 1);
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("inner")}, {"z"})->output(0));
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Concat"), 2u);
}

TEST(MergeConcats, GraphOutputInTheMiddleIsKept) {
  Model model = nested(1, 1);
  model.graph().add_output(model.graph().find_value("inner"));
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
}

TEST(MergeConcats, DefaultAxisBeforeOpset4) {
  Model model = empty_model(3);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({2, 3}));
  Value* b = g.add_input("b", float_type({2, 1}));
  Node* inner = concat(g, {a, b}, "inner", std::nullopt);  // axis 1
  g.add_output(concat(g, {inner->output(0), b}, "y", 1)->output(0));
  auto pass = make_merge_concats_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Concat"), 1u);
}

}  // namespace
}  // namespace onnxkit::testing
