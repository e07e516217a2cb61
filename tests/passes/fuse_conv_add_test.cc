#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

constexpr int64_t kChannels = 6;  // conv_then's Conv

Model conv_add_model(const Shape& shift_shape, bool bias = true, bool conv_first = true) {
  return conv_then("Add", "shift", shift_shape, bias, conv_first);
}

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_fuse_conv_add_pass(), model, std::move(context));
}

void expect_fused(Model model) {
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Add"), 0u);
  ASSERT_EQ(count_ops(model, "Conv"), 1u);
  const Node* conv = model.graph().nodes()[0];
  EXPECT_EQ(conv->output(0)->name(), "y");
  EXPECT_EQ(conv->input(1)->name(), "W") << "weights are untouched";
  ASSERT_TRUE(conv->input(2));
  EXPECT_NE(conv->input(2)->name(), "B");
  EXPECT_EQ(conv->input(2)->initializer().shape(), Shape{conv->input(1)->initializer().shape()[0]});
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseConvAdd, PerChannelShiftsFoldIntoTheBias) {
  for (const Shape& shape : {Shape{kChannels, 1, 1}, Shape{1, kChannels, 1, 1}}) {
    SCOPED_TRACE(shape_to_string(shape));
    expect_fused(conv_add_model(shape));
    expect_fused(conv_add_model(shape, /*bias=*/false, /*conv_first=*/false));
  }
}

TEST(FuseConvAdd, ScalarShiftsFold) {
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{1, 1, 1, 1}}) {
    SCOPED_TRACE(shape_to_string(shape));
    expect_fused(conv_add_model(shape, true, false));
  }
}

TEST(FuseConvAdd, OneDimensionalConv) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 7}));
  Node* conv = g.add_node("Conv", {x, g.add_initializer("W", random_floats({5, 3, 2}, 1))}, {"c"});
  Node* add =
      g.add_node("Add", {conv->output(0), g.add_initializer("f", random_floats({5, 1}, 2))}, {"y"});
  g.add_output(add->output(0));
  expect_fused(std::move(model));
}

// [1, C, H, W] varies over the spatial dims: it is no bias.
TEST(FuseConvAdd, ShapesThatAreNotPerChannelAreLeftAlone) {
  for (const Shape& shape : {Shape{1, kChannels, 3, 3}, Shape{kChannels}, Shape{kChannels, 1},
                             Shape{1, 1, kChannels, 1, 1}, Shape{3, 1, 1}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Model model = conv_add_model(shape);
    EXPECT_EQ(run_pass(model), 0u);
    EXPECT_EQ(count_ops(model, "Add"), 1u);
  }
}

TEST(FuseConvAdd, NegativeCases) {
  {  // a second reader of the Conv output
    Model model = conv_add_model({kChannels, 1, 1});
    Graph& g = model.graph();
    g.add_output(g.add_node("Relu", {g.find_value("c")}, {"r"})->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // the Conv output is a graph output
    Model model = conv_add_model({kChannels, 1, 1});
    model.graph().add_output(model.graph().find_value("c"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a shift the caller may override
    Model model = conv_add_model({kChannels, 1, 1});
    model.graph().add_input(model.graph().find_value("shift"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a computed shift
    Model model = conv_add_model({kChannels, 1, 1});
    Graph& g = model.graph();
    Node* add = g.find_value("y")->producer();
    g.set_node_input(add, 1, g.add_input("f_in", float_type({kChannels, 1, 1})));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // non-constant weights do not matter, only their shape
    Model model = conv_add_model({kChannels, 1, 1});
    Graph& g = model.graph();
    Value* w = g.find_value("W");
    w->set_type(float_type({kChannels, 4, 3, 3}));
    g.add_input(w);
    EXPECT_EQ(run_pass(model), 1u);
  }
  {  // a non-constant bias
    Model model = conv_add_model({kChannels, 1, 1});
    model.graph().add_input(model.graph().find_value("B"));
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseConvAdd, SharedInitializersAreNotModified) {
  Model model = conv_add_model({kChannels, 1, 1});
  Graph& g = model.graph();
  Node* other =
      g.add_node("Conv", {g.find_value("x"), g.find_value("W"), g.find_value("B")}, {"o"});
  g.add_output(other->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(other->input(2)->name(), "B");
  EXPECT_TRUE(g.find_value("B")->initializer().same_contents(
      before.graph().find_value("B")->initializer()));
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
