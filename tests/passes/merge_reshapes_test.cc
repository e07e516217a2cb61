#include "onnx/onnx_checks.h"
#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

Node* reshape(Graph& g, Value* input, const std::string& out, const std::vector<int64_t>& shape) {
  return g.add_node("Reshape", {input, int64s(g, out + "_target", shape)}, {out});
}

Node* flatten(Graph& g, Value* input, const std::string& out, int64_t axis) {
  Node* node = g.add_node("Flatten", {input}, {out});
  node->set_attribute(int_attribute("axis", axis));
  return node;
}

// x -> Reshape(target1) -> Reshape(target2) -> Relu -> y
Model two_reshapes(std::vector<int64_t> x_dims, std::vector<int64_t> target1,
                   std::vector<int64_t> target2, int64_t opset = 13) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type(std::move(x_dims)));
  Node* r1 = reshape(g, x, "r1", target1);
  Node* r2 = reshape(g, r1->output(0), "r2", target2);
  g.add_output(g.add_node("Relu", {r2->output(0)}, {"y"})->output(0));
  return model;
}

TEST(MergeReshapes, ReshapeOfReshapeReadsTheInput) {
  Model model = two_reshapes({2, 3, 4}, {6, 4}, {4, -1});
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Reshape"), 1u);
  Node* r = find_op(model, "Reshape");
  EXPECT_EQ(r->input(0)->name(), "x");
  EXPECT_EQ(input_ints(r, 1), (std::vector<int64_t>{4, -1}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, ZeroEntriesAreResolvedFromTypes) {
  // r1 = [2,12]; target [0,3,4] copies r1's dim 0 (2), not x's (4).
  Model model = two_reshapes({4, 6}, {2, 12}, {0, 3, 4});
  infer(model);
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  Node* r = find_op(model, "Reshape");
  EXPECT_EQ(r->input(0)->name(), "x");
  EXPECT_EQ(input_ints(r, 1), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, ZeroEntriesAreResolvedFromTheFirstTarget) {
  // No types for r1: its target [6,-1] says dim 0 is 6.
  Model model = two_reshapes({-1, 3, 4}, {6, -1}, {0, 2, -1});
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(input_ints(find_op(model, "Reshape"), 1), (std::vector<int64_t>{6, 2, -1}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, UnresolvableZeroIsLeftAlone) {
  // x[n,12] -> [-1,3,4] -> [0,12]: r1's dim 0 is symbolic.
  Model model = two_reshapes({-1, 12}, {-1, 3, 4}, {0, 12});
  infer(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Reshape"), 2u);
}

// x[2,3,4] -> Reshape([6,4]) -> Reshape(Shape(z)) with z[4,6]: a computed target.
Model computed_target(int64_t opset, int64_t allowzero) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* z = g.add_input("z", float_type({4, 6}));
  Node* r1 = reshape(g, x, "r1", {6, 4});
  Node* shape = g.add_node("Shape", {z}, {"s"});
  Node* r2 = g.add_node("Reshape", {r1->output(0), shape->output(0)}, {"r2"});
  if (allowzero >= 0) r2->set_attribute(int_attribute("allowzero", allowzero));
  g.add_output(r2->output(0));
  return model;
}

TEST(MergeReshapes, ComputedTargetNeedsAllowZero) {
  Model model = computed_target(13, -1);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  Model model14 = computed_target(14, 0);
  EXPECT_EQ(apply_pass(*pass, model14), 0u);
  EXPECT_EQ(count_ops(model14, "Reshape"), 2u);
}

TEST(MergeReshapes, ConstantTargetWithAllowZeroIsUsedAsIs) {
  Model model = two_reshapes({2, 3, 4}, {6, 4}, {4, 6}, 14);
  find_op(model, "Relu")->input(0)->producer()->set_attribute(int_attribute("allowzero", 1));
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Reshape"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, FlattenThenReshape) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Node* f = flatten(g, x, "f", 1);
  g.add_output(reshape(g, f->output(0), "r", {4, -1})->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Flatten"), 0u);
  EXPECT_EQ(find_op(model, "Reshape")->input(0)->name(), "x");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, ReshapeThenFlattenBecomesOneReshape) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Node* r = reshape(g, x, "r", {6, 2, 2});
  g.add_output(flatten(g, r->output(0), "y", -1)->output(0));
  infer(model);
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Flatten"), 0u);
  EXPECT_EQ(count_ops(model, "Reshape"), 1u);
  Node* merged = find_op(model, "Reshape");
  EXPECT_EQ(merged->input(0)->name(), "x");
  EXPECT_EQ(merged->output(0)->name(), "y");
  EXPECT_EQ(input_ints(merged, 1), (std::vector<int64_t>{12, 2}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, FlattenWithSymbolicLeftSideUsesMinusOne) {
  // x[n,12] -> Reshape([-1,3,4]) -> Flatten(1): [-1, 12].
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({-1, 12}));
  Node* r = reshape(g, x, "r", {-1, 3, 4});
  g.add_output(flatten(g, r->output(0), "y", 1)->output(0));
  infer(model);
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(input_ints(find_op(model, "Reshape"), 1), (std::vector<int64_t>{-1, 12}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, FlattenOfUnknownRankIsLeftAlone) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Node* r = reshape(g, x, "r", {6, 4});
  g.add_output(flatten(g, r->output(0), "y", 1)->output(0));  // no inference: r has no type
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Flatten"), 1u);
}

TEST(MergeReshapes, SqueezeAndUnsqueezeFeedingAReshape) {
  for (const std::string op : {"Squeeze", "Unsqueeze"}) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* x = g.add_input("x", float_type({2, 1, 6}));
    Node* s = g.add_node(op, {x, int64s(g, "axes", {1})}, {"s"});
    g.add_output(reshape(g, s->output(0), "y", {3, 4})->output(0));
    Model before = copy_model(model);
    auto pass = make_merge_reshapes_pass();
    EXPECT_EQ(apply_pass(*pass, model), 1u) << op;
    EXPECT_EQ(count_ops(model, op), 0u) << op;
    EXPECT_EQ(find_op(model, "Reshape")->input(0)->name(), "x");
    EXPECT_TRUE(same_outputs(before, model)) << op;
  }
}

TEST(MergeReshapes, SqueezeWithAttributeAxesAtOpset11) {
  Model model = empty_model(11);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 1, 6}));
  Node* s = g.add_node("Squeeze", {x}, {"s"});
  s->set_attribute(ints_attribute("axes", {1}));
  g.add_output(reshape(g, s->output(0), "y", {3, 4})->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "Squeeze"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeReshapes, FirstWithSecondConsumerIsKept) {
  Model model = two_reshapes({2, 3, 4}, {6, 4}, {4, 6});
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("r1")}, {"z"})->output(0));
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Reshape"), 2u);
}

TEST(MergeReshapes, GraphOutputInTheMiddleIsKept) {
  Model model = two_reshapes({2, 3, 4}, {6, 4}, {4, 6});
  model.graph().add_output(model.graph().find_value("r1"));
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Reshape"), 2u);
}

TEST(MergeReshapes, TargetThatIsAGraphInputIsNotConstant) {
  // An initializer that is also a graph input can be overridden: not a constant target.
  Model model = two_reshapes({2, 3, 4}, {6, 4}, {0, 4});
  Graph& g = model.graph();
  g.add_input(g.find_value("r2_target"));
  auto pass = make_merge_reshapes_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
}

}  // namespace
}  // namespace onnxkit::testing
