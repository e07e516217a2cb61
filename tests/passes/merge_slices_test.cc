#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;  // axes/steps empty = omitted
};

// A Slice in the opset's form: attributes before 10, constant inputs from 10 on.
Node* slice(Graph& g, int64_t opset, Value* input, const std::string& out, const SliceSpec& s) {
  if (opset < 10) {
    Node* node = g.add_node("Slice", {input}, {out});
    node->set_attribute(ints_attribute("starts", s.starts));
    node->set_attribute(ints_attribute("ends", s.ends));
    if (!s.axes.empty()) node->set_attribute(ints_attribute("axes", s.axes));
    return node;
  }
  std::vector<Value*> inputs = {input, int64s(g, out + "_starts", s.starts),
                                int64s(g, out + "_ends", s.ends)};
  if (!s.axes.empty() || !s.steps.empty()) {
    inputs.push_back(s.axes.empty() ? nullptr : int64s(g, out + "_axes", s.axes));
  }
  if (!s.steps.empty()) inputs.push_back(int64s(g, out + "_steps", s.steps));
  return g.add_node("Slice", inputs, {out});
}

// x -> Slice(s1) -> Slice(s2) -> Relu -> y
Model two_slices(int64_t opset, std::vector<int64_t> x_dims, const SliceSpec& s1,
                 const SliceSpec& s2) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type(std::move(x_dims)));
  Node* a = slice(g, opset, x, "a", s1);
  Node* b = slice(g, opset, a->output(0), "b", s2);
  g.add_output(g.add_node("Relu", {b->output(0)}, {"y"})->output(0));
  return model;
}

TEST(MergeSlices, DisjointAxesMerge) {
  Model model = two_slices(13, {4, 6, 8}, {{1}, {3}, {0}, {}}, {{2}, {7}, {2}, {2}});
  Model before = copy_model(model);
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  ASSERT_EQ(count_ops(model, "Slice"), 1u);
  Node* s = find_op(model, "Slice");
  EXPECT_EQ(s->input(0)->name(), "x");
  EXPECT_EQ(input_ints(s, 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(input_ints(s, 2), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(input_ints(s, 3), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(input_ints(s, 4), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSlices, DefaultAxesAndNegativeAxes) {
  // First: axes omitted (axis 0). Second: axis -1 of a rank-2 input (axis 1), negative step.
  Model model = two_slices(13, {5, 6}, {{1}, {4}, {}, {}}, {{-1}, {-100}, {-1}, {-2}});
  Model before = copy_model(model);
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  Node* s = find_op(model, "Slice");
  EXPECT_EQ(input_ints(s, 3), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSlices, SameAxisWithUnitStepsComposes) {
  // Axis 0 of size 10: [2:9] then [1:-1] of the 7 left = [3:8].
  Model model = two_slices(13, {10, 4}, {{2}, {9}, {0}, {}}, {{1}, {-1}, {0}, {}});
  Model before = copy_model(model);
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  Node* s = find_op(model, "Slice");
  EXPECT_EQ(input_ints(s, 1), (std::vector<int64_t>{3}));
  EXPECT_EQ(input_ints(s, 2), (std::vector<int64_t>{8}));
  EXPECT_EQ(s->inputs().size(), 4u) << "unit steps need no steps input";
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSlices, SameAxisClampsLikeSlice) {
  // [-8:INT64_MAX] of 10 = [2:10]; then [5:20] of 8 = [5:8]: [7:10]. Then an empty one.
  const int64_t big = INT64_MAX;
  Model model = two_slices(13, {10, 3}, {{-8}, {big}, {0}, {}}, {{5}, {20}, {0}, {}});
  Model before = copy_model(model);
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  Node* s = find_op(model, "Slice");
  EXPECT_EQ(input_ints(s, 1), (std::vector<int64_t>{7}));
  EXPECT_EQ(input_ints(s, 2), (std::vector<int64_t>{10}));
  EXPECT_TRUE(same_outputs(before, model));

  Model empty = two_slices(13, {10, 3}, {{2}, {4}, {0}, {}}, {{3}, {9}, {0}, {}});
  Model empty_before = copy_model(empty);
  EXPECT_EQ(apply_pass(*pass, empty), 1u);
  EXPECT_TRUE(same_outputs(empty_before, empty));
}

TEST(MergeSlices, SameAxisWithStepsIsLeftAlone) {
  Model model = two_slices(13, {10, 4}, {{0}, {10}, {0}, {2}}, {{1}, {4}, {0}, {}});
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Slice"), 2u);
}

TEST(MergeSlices, SameAxisWithSymbolicDimIsLeftAlone) {
  Model model = two_slices(13, {-1, 4}, {{0}, {10}, {0}, {}}, {{1}, {4}, {0}, {}});
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  // A symbolic dim on another axis does not matter for disjoint axes.
  Model other = two_slices(13, {-1, 4}, {{0}, {1}, {0}, {}}, {{1}, {3}, {1}, {}});
  Model before = copy_model(other);
  EXPECT_EQ(apply_pass(*pass, other), 1u);
  EXPECT_TRUE(same_outputs(before, other));
}

TEST(MergeSlices, AttributeFormBeforeOpset10) {
  Model model = two_slices(9, {4, 6}, {{1}, {3}, {}, {}}, {{-4}, {5}, {1}, {}});
  Model before = copy_model(model);
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  Node* s = find_op(model, "Slice");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->inputs().size(), 1u);
  EXPECT_EQ(s->find_attribute("starts")->ints, (std::vector<int64_t>{1, -4}));
  EXPECT_EQ(s->find_attribute("axes")->ints, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(MergeSlices, NonConstantParametersAreLeftAlone) {
  Model model = two_slices(13, {4, 6}, {{1}, {3}, {0}, {}}, {{1}, {5}, {1}, {}});
  Graph& g = model.graph();
  g.add_input(g.find_value("b_ends"));
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
}

TEST(MergeSlices, FirstWithSecondConsumerIsKept) {
  Model model = two_slices(13, {4, 6}, {{1}, {3}, {0}, {}}, {{1}, {5}, {1}, {}});
  Graph& g = model.graph();
  g.add_output(g.add_node("Neg", {g.find_value("a")}, {"z"})->output(0));
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
  EXPECT_EQ(count_ops(model, "Slice"), 2u);
}

TEST(MergeSlices, GraphOutputInTheMiddleIsKept) {
  Model model = two_slices(13, {4, 6}, {{1}, {3}, {0}, {}}, {{1}, {5}, {1}, {}});
  model.graph().add_output(model.graph().find_value("a"));
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 0u);
}

TEST(MergeSlices, ChainMergesIntoOne) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({6, 6, 6}));
  Node* a = slice(g, 13, x, "a", {{1}, {5}, {0}, {}});
  Node* b = slice(g, 13, a->output(0), "b", {{0}, {4}, {1}, {}});
  Node* c = slice(g, 13, b->output(0), "c", {{1}, {3}, {0}, {}});
  g.add_output(c->output(0));
  Model before = copy_model(model);
  auto pass = make_merge_slices_pass();
  EXPECT_EQ(apply_pass(*pass, model), 2u);
  EXPECT_EQ(count_ops(model, "Slice"), 1u);
  EXPECT_EQ(model.graph().outputs()[0]->name(), "c");
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit::testing
