#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

Value* transpose(Graph& g, Value* input, const std::string& out, std::vector<int64_t> perm) {
  Node* node = g.add_node("Transpose", {input}, {out});
  node->set_attribute(ints_attribute("perm", std::move(perm)));
  return node->output(0);
}

Value* op(Graph& g, const std::string& type, std::vector<Value*> inputs, const std::string& out) {
  return g.add_node(type, std::move(inputs), {out})->output(0);
}

Value* reduce_mean(Graph& g, Value* input, const std::string& out, std::vector<int64_t> axes) {
  Node* node = g.add_node("ReduceMean", {input}, {out});
  node->set_attribute(ints_attribute("axes", std::move(axes)));
  return node->output(0);
}

size_t apply(Model& model) {
  return apply_pass(*make_cancel_transposes_pass(), model);
}

// ConvNeXt's LayerNorm2d: x[n,4,3,5] -> Transpose(0,2,3,1) -> LayerNorm over the last axis
// (decomposed, weight and bias [4]) -> Transpose(0,3,1,2) -> y.
Model layer_norm_2d() {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({-1, 4, 3, 5}));
  Value* t = transpose(g, x, "t", {0, 2, 3, 1});
  Value* mean = reduce_mean(g, t, "mean", {-1});
  Value* d = op(g, "Sub", {t, mean}, "d");
  Value* two = g.add_initializer("two", Tensor::from_vector<float>(DType::kFloat, {}, {2.0f}));
  Value* sq = op(g, "Pow", {d, two}, "sq");
  Value* var = reduce_mean(g, sq, "var", {-1});
  Value* eps = g.add_initializer("eps", Tensor::from_vector<float>(DType::kFloat, {}, {1e-6f}));
  Value* s = op(g, "Sqrt", {op(g, "Add", {var, eps}, "var_eps")}, "std");
  Value* n = op(g, "Div", {d, s}, "normed");
  Value* w = g.add_initializer("w", random_floats({4}, 3));
  Value* b = g.add_initializer("b", random_floats({4}, 4));
  Value* scaled = op(g, "Add", {op(g, "Mul", {n, w}, "scaled"), b}, "shifted");
  g.add_output(transpose(g, scaled, "y", {0, 3, 1, 2}));
  return model;
}

TEST(CancelTransposes, LayerNorm2dRunsChannelsFirst) {
  Model model = layer_norm_2d();
  Model before = copy_model(model);
  EXPECT_EQ(apply(model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  for (Node* node : model.graph().nodes()) {
    if (node->op_type() == "ReduceMean") {
      EXPECT_EQ(node->find_attribute("axes")->ints, (std::vector<int64_t>{1}));
    }
    if (node->op_type() == "Mul") {
      // The per-channel weight is now [1,4,1,1].
      EXPECT_EQ(node->input(1)->initializer().shape(), (Shape{1, 4, 1, 1}));
    }
  }
  // The graph output keeps its name and its shape is channels-first again.
  ASSERT_EQ(model.graph().outputs().size(), 1u);
  EXPECT_EQ(model.graph().outputs()[0]->name(), "y");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CancelTransposes, RegionValueShapesFollowTheLayout) {
  Model model = layer_norm_2d();
  model.graph().find_value("mean")->set_type(float_type({-1, 3, 5, 1}));
  apply(model);
  const Value* mean = model.graph().find_value("mean");
  ASSERT_TRUE(mean && mean->type().shape);
  EXPECT_EQ((*mean->type().shape)[1], Dim::known(1));
  EXPECT_EQ((*mean->type().shape)[2], Dim::known(3));
}

TEST(CancelTransposes, OtherReaderGetsTheComposedPermutation) {
  // x[2,3,4] -> Transpose(0,2,1) -> Relu -> Transpose(1,0,2) -> y: one Transpose (2,0,1) left.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* r = op(g, "Relu", {transpose(g, x, "t", {0, 2, 1})}, "r");
  g.add_output(transpose(g, r, "y", {1, 0, 2}));
  Model before = copy_model(model);
  EXPECT_EQ(apply(model), 1u);
  ASSERT_EQ(count_ops(model, "Transpose"), 1u);
  Node* t = find_op(model, "Transpose");
  EXPECT_EQ(t->find_attribute("perm")->ints, (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(t->input(0)->name(), "r");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CancelTransposes, TwoTransposedOperandsBothGo) {
  // Add(T(a), T(b)) -> Sigmoid -> T^-1: all three Transposes go.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({2, 3, 4}));
  Value* b = g.add_input("b", float_type({2, 3, 4}));
  Value* sum =
      op(g, "Add", {transpose(g, a, "ta", {2, 0, 1}), transpose(g, b, "tb", {2, 0, 1})}, "sum");
  Value* s = op(g, "Sigmoid", {sum}, "s");
  g.add_output(op(g, "Relu", {transpose(g, s, "back", {1, 2, 0})}, "y"));
  Model before = copy_model(model);
  EXPECT_EQ(apply(model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CancelTransposes, SoftmaxAndConcatAxesMove) {
  // T(0,2,1) -> Softmax(axis -1) -> Concat(axis 2, with a constant [2,4,3]) -> T(0,2,1).
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Node* softmax = g.add_node("Softmax", {transpose(g, x, "t", {0, 2, 1})}, {"sm"});
  Value* c = g.add_initializer("c", random_floats({2, 4, 3}, 9));
  Node* concat = g.add_node("Concat", {softmax->output(0), c}, {"cat"});
  concat->set_attribute(int_attribute("axis", 2));
  g.add_output(op(g, "Neg", {transpose(g, concat->output(0), "back", {0, 2, 1})}, "y"));
  Model before = copy_model(model);
  EXPECT_EQ(apply(model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  EXPECT_EQ(int_attr(softmax, "axis", -1), 1);
  EXPECT_EQ(int_attr(concat, "axis", 0), 1);
  EXPECT_EQ(concat->input(1)->initializer().shape(), (Shape{2, 3, 4}));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(CancelTransposes, ReductionAxesAsInput) {
  // ReduceSum at opset 13 takes its axes as an input.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* axes = g.add_initializer("axes", Tensor::from_vector<int64_t>(DType::kInt64, {1}, {-1}));
  Value* sum = op(g, "ReduceSum", {transpose(g, x, "t", {0, 2, 1}), axes}, "sum");
  g.add_output(op(g, "Exp", {transpose(g, sum, "back", {0, 2, 1})}, "y"));
  Model before = copy_model(model);
  EXPECT_EQ(apply(model), 1u);
  EXPECT_EQ(count_ops(model, "Transpose"), 0u);
  const Tensor& new_axes = find_op(model, "ReduceSum")->input(1)->initializer();
  EXPECT_EQ(new_axes.data<int64_t>()[0], 1);
  EXPECT_TRUE(same_outputs(before, model));
}

// Axes out of range for the region's rank leave it alone (the run reports them); mapping
// them through the permutation read past its end (fuzz: cancel_transposes_softmax_axis_out_of_range).
TEST(CancelTransposes, SoftmaxAxisOutOfRangeBlocks) {
  for (int64_t axis : {3, 51, -4}) {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* x = g.add_input("x", float_type({2, 3, 4}));
    Node* softmax = g.add_node("LogSoftmax", {transpose(g, x, "t", {0, 2, 1})}, {"sm"});
    softmax->set_attribute(int_attribute("axis", axis));
    g.add_output(transpose(g, softmax->output(0), "y", {0, 2, 1}));
    EXPECT_EQ(apply(model), 0u) << axis;
    EXPECT_EQ(count_ops(model, "Transpose"), 2u) << axis;
    EXPECT_EQ(int_attr(softmax, "axis", 0), axis);
  }
}

TEST(CancelTransposes, ReductionAxesOutOfRangeBlock) {
  {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* x = g.add_input("x", float_type({2, 3, 4}));
    Value* mean = reduce_mean(g, transpose(g, x, "t", {0, 2, 1}), "mean", {1, 7});
    g.add_output(transpose(g, mean, "y", {0, 2, 1}));
    EXPECT_EQ(apply(model), 0u);
  }
  {
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* x = g.add_input("x", float_type({2, 3, 4}));
    Value* axes = g.add_initializer("axes", Tensor::from_vector<int64_t>(DType::kInt64, {1}, {-9}));
    Value* sum = op(g, "ReduceSum", {transpose(g, x, "t", {0, 2, 1}), axes}, "sum");
    g.add_output(transpose(g, sum, "y", {0, 2, 1}));
    EXPECT_EQ(apply(model), 0u);
  }
}

TEST(CancelTransposes, LayoutSensitiveReaderBlocks) {
  // A MatMul reads the transposed value: nothing moves.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* r = op(g, "Relu", {transpose(g, x, "t", {0, 2, 1})}, "r");
  Value* w = g.add_initializer("w", random_floats({3, 5}, 2));
  Value* m = op(g, "MatMul", {r, w}, "m");
  g.add_output(transpose(g, m, "y", {0, 2, 1}));
  EXPECT_EQ(apply(model), 0u);
  EXPECT_EQ(count_ops(model, "Transpose"), 2u);
}

TEST(CancelTransposes, KeepdimsZeroBlocks) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Node* mean = g.add_node("ReduceMean", {transpose(g, x, "t", {0, 2, 1})}, {"m"});
  mean->set_attribute(ints_attribute("axes", {1}));
  mean->set_attribute(int_attribute("keepdims", 0));
  g.add_output(transpose(g, mean->output(0), "y", {1, 0}));
  EXPECT_EQ(apply(model), 0u);
}

TEST(CancelTransposes, TransposedGraphOutputBlocks) {
  // The Relu output is both a graph output and read by the inverse Transpose.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* r = op(g, "Relu", {transpose(g, x, "t", {0, 2, 1})}, "r");
  g.add_output(r);
  g.add_output(op(g, "Neg", {transpose(g, r, "back", {0, 2, 1})}, "y"));
  EXPECT_EQ(apply(model), 0u);
}

TEST(CancelTransposes, NonConstantBroadcastOperandBlocks) {
  // Mul by another input of lower rank cannot be transposed without a new node.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 4}));
  Value* s = g.add_input("s", float_type({3}));
  Value* m = op(g, "Mul", {transpose(g, x, "t", {0, 2, 1}), s}, "m");
  g.add_output(transpose(g, m, "y", {0, 2, 1}));
  EXPECT_EQ(apply(model), 0u);
}

TEST(CancelTransposes, SameTransposeReadingTheRegionBlocks) {
  // T_p(x) -> Relu -> T_p (p not self-inverse) -> Add with T_p(x): the second T_p reads the
  // region, so it cannot count as a root.
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3, 3, 3}));
  Value* t = transpose(g, x, "t", {1, 2, 0});
  Value* r = op(g, "Relu", {t}, "r");
  Value* t2 = transpose(g, r, "t2", {1, 2, 0});
  g.add_output(op(g, "Add", {t2, t}, "y"));
  Model before = copy_model(model);
  apply(model);
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit::testing
