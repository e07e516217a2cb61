#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// x [2, 3, 4, 5] -> op(x, c) (or op(c, x)) -> y, c a constant of `bound_shape`.
Model bound_model(const std::string& op, Shape bound_shape, bool bound_first = false,
                  int64_t opset = 13, DType dtype = DType::kFloat) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  ValueType type = float_type({2, 3, 4, 5});
  type.elem_type = dtype;
  Value* x = g.add_input("x", type);
  Tensor c(DType::kFloat, bound_shape);
  std::fill_n(c.mutable_data<float>(), c.numel(), 0.25f);
  Value* bound = dtype == DType::kFloat ? g.add_initializer("c", c)
                                        : g.add_initializer("c", Tensor(dtype, bound_shape));
  std::vector<Value*> inputs =
      bound_first ? std::vector<Value*>{bound, x} : std::vector<Value*>{x, bound};
  Node* node = g.add_node(op, inputs, {"y"}, "", "bound");
  g.add_output(node->output(0));
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_max_min_into_clip_pass(), model);
}

TEST(MaxMinIntoClip, MaxIsALowerBoundMinAnUpperOne) {
  for (const std::string op : {"Max", "Min"}) {
    for (bool bound_first : {false, true}) {
      for (Shape shape : {Shape{}, Shape{1}, Shape{1, 1, 1, 1}}) {
        SCOPED_TRACE(op + (bound_first ? " c first" : " x first"));
        Model model = bound_model(op, shape, bound_first);
        Model before = copy_model(model);
        EXPECT_EQ(run_pass(model), 1u);
        ASSERT_EQ(model.graph().node_count(), 1u);
        const Node* clip = model.graph().nodes()[0];
        EXPECT_EQ(clip->op_type(), "Clip");
        EXPECT_EQ(clip->input(0)->name(), "x");
        // Max(x, c) = Clip(x, min=c); Min(x, c) = Clip(x, max=c); the bound is a scalar.
        const size_t bound = op == "Max" ? 1 : 2;
        ASSERT_GT(clip->inputs().size(), bound);
        EXPECT_EQ(clip->input(bound)->initializer().rank(), 0u);
        if (op == "Min") EXPECT_EQ(clip->input(1), nullptr);
        EXPECT_EQ(model.graph().outputs()[0]->name(), "y");
        EXPECT_TRUE(same_outputs(before, model));
      }
    }
  }
}

TEST(MaxMinIntoClip, LeavesWhatClipCannotSay) {
  // A bound of higher rank than x would broadcast x up.
  Model wider = bound_model("Max", {1, 1, 1, 1, 1});
  EXPECT_EQ(run_pass(wider), 0u);
  // A per-channel bound is no scalar.
  Model channels = bound_model("Max", {1, 3, 1, 1});
  EXPECT_EQ(run_pass(channels), 0u);
  // Integer types, and opsets before 12.
  Model ints = bound_model("Max", {1}, false, 13, DType::kInt32);
  EXPECT_EQ(run_pass(ints), 0u);
  Model old = bound_model("Max", {1}, false, 11);
  EXPECT_EQ(run_pass(old), 0u);
  // Three inputs.
  Model three = bound_model("Max", {1});
  Graph& g = three.graph();
  g.add_node_input(g.nodes()[0], g.inputs()[0]);
  EXPECT_EQ(run_pass(three), 0u);
}

}  // namespace
}  // namespace onnxkit
