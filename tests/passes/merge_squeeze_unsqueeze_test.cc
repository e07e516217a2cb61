#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

// Squeeze/Unsqueeze with `axes` in the opset's form (attribute < 13, constant input >= 13).
Node* axes_op(Graph& g, int64_t opset, const std::string& op, Value* input, const std::string& out,
              const std::vector<int64_t>& axes) {
  if (opset >= 13) {
    return g.add_node(op, {input, int64s(g, out + "_axes", axes)}, {out});
  }
  Node* node = g.add_node(op, {input}, {out});
  set_ints(node, "axes", axes);
  return node;
}

std::vector<int64_t> axes_of(const Node* node, int64_t opset) {
  return opset < 13 ? node->find_attribute("axes")->ints : input_ints(node, 1);
}

// x -> op1(axes1) -> op2(axes2) -> Relu -> y
Model pair(int64_t opset, std::vector<int64_t> x_dims, const std::string& op1,
           std::vector<int64_t> axes1, const std::string& op2, std::vector<int64_t> axes2) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type(std::move(x_dims)));
  Node* a = axes_op(g, opset, op1, x, "a", axes1);
  Node* b = axes_op(g, opset, op2, a->output(0), "b", axes2);
  g.add_output(g.add_node("Relu", {b->output(0)}, {"y"})->output(0));
  return model;
}

TEST(MergeSqueezeUnsqueeze, UnsqueezeThenSqueezeCancel) {
  for (int64_t opset : {11, 13}) {
    // Unsqueeze [-1] of a rank-2 x is axis 2 of the rank-3 middle.
    Model model = pair(opset, {2, 3}, "Unsqueeze", {-1}, "Squeeze", {2});
    Model before = copy_model(model);
    auto pass = make_merge_squeeze_unsqueeze_pass();
    EXPECT_EQ(apply_pass(*pass, model), 1u) << opset;
    EXPECT_EQ(model.graph().node_count(), 1u) << opset;
    EXPECT_EQ(find_op(model, "Relu")->input(0)->name(), "x");
    EXPECT_TRUE(same_outputs(before, model)) << opset;
  }
}

TEST(MergeSqueezeUnsqueeze, SqueezeThenUnsqueezeCancel) {
  for (int64_t opset : {11, 13}) {
    Model model = pair(opset, {2, 1, 3, 1}, "Squeeze", {3, 1}, "Unsqueeze", {1, -1});
    Model before = copy_model(model);
    auto pass = make_merge_squeeze_unsqueeze_pass();
    EXPECT_EQ(apply_pass(*pass, model), 1u) << opset;
    EXPECT_EQ(model.graph().node_count(), 1u) << opset;
    EXPECT_TRUE(same_outputs(before, model)) << opset;
  }
}

TEST(MergeSqueezeUnsqueeze, CancellingPairAsGraphOutputKeepsAnIdentity) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Node* a = axes_op(g, 13, "Unsqueeze", x, "a", {0});
  g.add_output(axes_op(g, 13, "Squeeze", a->output(0), "y", {0})->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(model.graph().node_count(), 1u);
  EXPECT_EQ(count_ops(model, "Identity"), 1u);
  EXPECT_EQ(model.graph().outputs()[0]->name(), "y");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSqueezeUnsqueeze, DifferentAxesDoNotCancel) {
  // x[1,2]: Unsqueeze [0] -> [1,1,2]; Squeeze [1] -> [1,2]: same shape, but different axes
  // (a partial cancel is not attempted).
  Model model = pair(13, {1, 2}, "Unsqueeze", {0}, "Squeeze", {1});
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(model.graph().node_count(), 3u);
}

TEST(MergeSqueezeUnsqueeze, UnsqueezesMerge) {
  for (int64_t opset : {11, 13}) {
    // [2,3] -U[0]-> [1,2,3] -U[2]-> [1,2,1,3]: U[0,2].
    Model model = pair(opset, {2, 3}, "Unsqueeze", {0}, "Unsqueeze", {2});
    Model before = copy_model(model);
    auto pass = make_merge_squeeze_unsqueeze_pass();
    EXPECT_EQ(apply_pass(*pass, model), 1u) << opset;
    ASSERT_EQ(count_ops(model, "Unsqueeze"), 1u) << opset;
    Node* u = find_op(model, "Unsqueeze");
    EXPECT_EQ(u->input(0)->name(), "x");
    EXPECT_EQ(axes_of(u, opset), (std::vector<int64_t>{0, 2})) << opset;
    EXPECT_TRUE(same_outputs(before, model)) << opset;
  }
}

TEST(MergeSqueezeUnsqueeze, UnsqueezesMergeWithNegativeAxes) {
  // [2,3] -U[-1]-> [2,3,1] -U[0,-2]-> rank 5: the second's axes are 0 and 3, the first's
  // inserted dim (its axis 2) lands on 4.
  Model model = pair(13, {2, 3}, "Unsqueeze", {-1}, "Unsqueeze", {0, -2});
  Model before = copy_model(model);
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(axes_of(find_op(model, "Unsqueeze"), 13), (std::vector<int64_t>{0, 3, 4}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSqueezeUnsqueeze, UnsqueezesInterleave) {
  // [2,3] -U[1,2]-> [2,1,1,3] -U[0,2,5]-> rank 7.
  Model model = pair(11, {2, 3}, "Unsqueeze", {1, 2}, "Unsqueeze", {0, 2, 5});
  Model before = copy_model(model);
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  // Final rank 7: new 0,2,5; the rest (1,3,4,6) are the first's output dims 0..3, whose
  // 1 and 2 were inserted: 3 and 4.
  EXPECT_EQ(axes_of(find_op(model, "Unsqueeze"), 11), (std::vector<int64_t>{0, 2, 3, 4, 5}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSqueezeUnsqueeze, SqueezesMerge) {
  for (int64_t opset : {11, 13}) {
    // [1,2,1,3,1] -S[0]-> [2,1,3,1] -S[1,3]-> [2,3]: S[0,2,4].
    Model model = pair(opset, {1, 2, 1, 3, 1}, "Squeeze", {0}, "Squeeze", {1, -1});
    Model before = copy_model(model);
    auto pass = make_merge_squeeze_unsqueeze_pass();
    EXPECT_EQ(apply_pass(*pass, model), 1u) << opset;
    ASSERT_EQ(count_ops(model, "Squeeze"), 1u);
    EXPECT_EQ(axes_of(find_op(model, "Squeeze"), opset), (std::vector<int64_t>{0, 2, 4}));
    EXPECT_TRUE(same_outputs(before, model)) << opset;
  }
}

TEST(MergeSqueezeUnsqueeze, SqueezeWithoutAxesNeedsKnownDims) {
  // Symbolic dims could be 1: a Squeeze without axes is left alone.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({-1, 1, 3}));
  Node* a = axes_op(g, 13, "Squeeze", x, "a", {1});
  Node* b = g.add_node("Squeeze", {a->output(0)}, {"b"});
  b->output(0)->set_type(float_type({-1, 3}));
  a->output(0)->set_type(float_type({-1, 3}));
  g.add_output(b->output(0));
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);

  // With known dims the 1-dims are the axes.
  Model known = empty_model(13);
  Graph& k = known.graph();
  Value* kx = k.add_input("x", float_type({2, 1, 1, 3}));
  Node* ka = axes_op(k, 13, "Squeeze", kx, "a", {1});
  ka->output(0)->set_type(float_type({2, 1, 3}));
  Node* kb = k.add_node("Squeeze", {ka->output(0)}, {"b"});
  k.add_output(kb->output(0));
  Model before = copy_model(known);
  EXPECT_EQ(apply_pass(*pass, known), 1u);
  EXPECT_EQ(axes_of(find_op(known, "Squeeze"), 13), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(same_outputs(before, known));
}

TEST(MergeSqueezeUnsqueeze, NegativeAxesWithUnknownRankAreLeftAlone) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", ValueType::tensor(DType::kFloat));
  Node* a = axes_op(g, 13, "Unsqueeze", x, "a", {-1});
  g.add_output(axes_op(g, 13, "Unsqueeze", a->output(0), "b", {0})->output(0));
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
}

TEST(MergeSqueezeUnsqueeze, NonConstantAxesAreLeftAlone) {
  Model model = pair(13, {2, 3}, "Unsqueeze", {0}, "Squeeze", {0});
  Graph& g = model.graph();
  g.add_input(g.find_value("b_axes"));  // overridable default: not a constant
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(model.graph().node_count(), 3u);
}

TEST(MergeSqueezeUnsqueeze, MergeKeepsFirstWithSecondConsumer) {
  Model model = pair(13, {2, 3}, "Unsqueeze", {0}, "Unsqueeze", {2});
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("a")}, {"z"})->output(0));
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Unsqueeze"), 2u);
}

TEST(MergeSqueezeUnsqueeze, CancelWithSecondConsumerDropsOnlyTheSecond) {
  Model model = pair(13, {2, 3}, "Unsqueeze", {0}, "Squeeze", {0});
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("a")}, {"z"})->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Unsqueeze"), 1u);
  EXPECT_EQ(count_ops(model, "Squeeze"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSqueezeUnsqueeze, GraphOutputInTheMiddleIsKept) {
  Model model = pair(11, {1, 2, 1}, "Squeeze", {0}, "Squeeze", {1});
  model.graph().add_output(model.graph().find_value("a"));
  auto pass = make_merge_squeeze_unsqueeze_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Squeeze"), 2u);
}

}  // namespace
}  // namespace onnxkit::testing
