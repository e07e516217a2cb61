#include <cmath>

#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct Options {
  int64_t opset = 13;
  int spatial = 2;
  int64_t in_channels = 4;
  int64_t out_channels = 6;
  int64_t group = 1;
  bool bias = true;
  DType dtype = DType::kFloat;
  DType param_dtype = DType::kFloat;  // BatchNormalization's parameters
};

// x -> Conv(W, B) -> BatchNormalization -> y (graph output).
Model conv_bn_model(const Options& o) {
  Model model = empty_model(o.opset);
  Graph& g = model.graph();
  std::vector<Dim> x_dims{Dim::known(1), Dim::known(o.in_channels)};
  Shape w_shape{o.out_channels, o.in_channels / o.group};
  for (int i = 0; i < o.spatial; ++i) {
    x_dims.push_back(Dim::known(5));
    w_shape.push_back(3);
  }
  Value* x = g.add_input("x", ValueType::tensor(o.dtype, x_dims));
  Value* w = g.add_initializer("W", cast_to(random_floats(w_shape, 1), o.dtype));
  std::vector<Value*> conv_inputs{x, w};
  if (o.bias) {
    conv_inputs.push_back(
        g.add_initializer("B", cast_to(random_floats({o.out_channels}, 2), o.dtype)));
  }
  Node* conv = g.add_node("Conv", conv_inputs, {"c"}, "", "conv");
  if (o.group != 1) conv->set_attribute(int_attribute("group", o.group));
  const Shape c{o.out_channels};
  Value* scale = g.add_initializer("scale", cast_to(positive_floats(c, 3), o.param_dtype));
  Value* bias = g.add_initializer("bias", cast_to(random_floats(c, 4), o.param_dtype));
  Value* mean = g.add_initializer("mean", cast_to(random_floats(c, 5), o.param_dtype));
  Value* var = g.add_initializer("var", cast_to(positive_floats(c, 6), o.param_dtype));
  Node* bn =
      g.add_node("BatchNormalization", {conv->output(0), scale, bias, mean, var}, {"y"}, "", "bn");
  bn->set_attribute(float_attribute("epsilon", 1e-3f));
  if (o.opset < 7) bn->set_attribute(int_attribute("is_test", 1));
  g.add_output(bn->output(0));
  return model;
}

// Fuses and checks structure and outputs.
void expect_fused(const Options& o, double rtol = 1e-4, double atol = 1e-5) {
  Model model = conv_bn_model(o);
  Model before = copy_model(model);
  auto pass = make_fuse_conv_bn_pass();
  EXPECT_EQ(apply_pass(*pass, model), 1u);
  EXPECT_EQ(count_ops(model, "BatchNormalization"), 0u);
  ASSERT_EQ(count_ops(model, "Conv"), 1u);
  const Node* conv = find_op(model, "Conv");
  EXPECT_EQ(conv->output(0)->name(), "y") << "the graph output keeps its name";
  ASSERT_TRUE(conv->input(2));
  EXPECT_NE(conv->input(1)->name(), "W") << "new initializers, the old may be shared";
  EXPECT_EQ(conv->input(1)->initializer().dtype(), o.dtype);
  EXPECT_EQ(conv->input(2)->initializer().dtype(), o.dtype);
  EXPECT_EQ(conv->input(2)->initializer().shape(), Shape{o.out_channels});
  EXPECT_TRUE(same_outputs(before, model, rtol, atol));
}

TEST(FuseConvBn, FoldsIntoConvWithBias) {
  expect_fused({});
}

TEST(FuseConvBn, ConvWithoutBiasGetsOne) {
  Options o;
  o.bias = false;
  expect_fused(o);
}

TEST(FuseConvBn, OneAndThreeSpatialDims) {
  for (int spatial : {1, 3}) {
    SCOPED_TRACE(spatial);
    Options o;
    o.spatial = spatial;
    expect_fused(o);
  }
}

TEST(FuseConvBn, GroupedAndDepthwiseConv) {
  for (int64_t group : {2, 4}) {
    SCOPED_TRACE(group);
    Options o;
    o.group = group;
    o.out_channels = 8;
    expect_fused(o);
  }
}

TEST(FuseConvBn, DoubleAndFloat16Weights) {
  Options o;
  o.dtype = o.param_dtype = DType::kDouble;
  expect_fused(o);
  o.dtype = o.param_dtype = DType::kFloat16;
  o.bias = false;
  expect_fused(o, 2e-2, 2e-2);
}

TEST(FuseConvBn, Float16ParametersOfAFloatConv) {
  Options o;
  o.opset = 15;  // scale/bias and mean/var may have their own types
  o.param_dtype = DType::kFloat16;
  expect_fused(o);
}

TEST(FuseConvBn, OlderOpsets) {
  for (int64_t opset : {6, 7, 9, 14}) {
    SCOPED_TRACE(opset);
    Options o;
    o.opset = opset;
    expect_fused(o);
  }
}

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_fuse_conv_bn_pass(), model, std::move(context));
}

TEST(FuseConvBn, ConvOutputWithASecondReaderIsLeftAlone) {
  Model model = conv_bn_model({});
  Graph& g = model.graph();
  Node* relu = g.add_node("Relu", {g.find_value("c")}, {"r"});
  g.add_output(relu->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "BatchNormalization"), 1u);
}

TEST(FuseConvBn, ConvOutputThatIsAGraphOutputIsLeftAlone) {
  Model model = conv_bn_model({});
  model.graph().add_output(model.graph().find_value("c"));
  EXPECT_EQ(run_pass(model), 0u);
}

// A subgraph that returns the Conv's output as it is reads it too (Value::uses() says so).
TEST(FuseConvBn, ConvOutputReturnedByASubgraphIsLeftAlone) {
  Model model = conv_bn_model({});
  Graph& g = model.graph();
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Node* if_node = g.add_node("If", {cond}, {"branch_out"});
  for (const char* name : {"then_branch", "else_branch"}) {
    auto branch = std::make_unique<Graph>(&g);
    branch->add_output(g.find_value("c"));
    if_node->set_attribute(graph_attribute(name, std::move(branch)));
  }
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "BatchNormalization"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseConvBn, NonConstantParametersAreLeftAlone) {
  {  // a plain graph input
    Model model = conv_bn_model({});
    Graph& g = model.graph();
    Value* scale = g.add_input("scale_in", float_type({6}));
    g.set_node_input(find_op(model, "BatchNormalization"), 1, scale);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // an initializer that is also a graph input: a default the caller may override
    Model model = conv_bn_model({});
    model.graph().add_input(model.graph().find_value("var"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // weights from a graph input
    Model model = conv_bn_model({});
    model.graph().add_input(model.graph().find_value("W"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // --mutable-initializer: nothing is a constant
    Model model = conv_bn_model({});
    PassContext context;
    context.mutable_initializers = true;
    EXPECT_EQ(run_pass(model, context), 0u);
  }
}

TEST(FuseConvBn, TrainingModeIsLeftAlone) {
  {  // opset 14+: training_mode
    Options o;
    o.opset = 14;
    Model model = conv_bn_model(o);
    find_op(model, "BatchNormalization")->set_attribute(int_attribute("training_mode", 1));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // opsets 7-13: declared statistics outputs, even unread
    Options o;
    o.opset = 9;
    Model model = conv_bn_model(o);
    Graph& g = model.graph();
    Node* bn = find_op(model, "BatchNormalization");
    g.set_node_output(bn, 1, g.create_value("running_mean"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // opset 6: is_test=0
    Options o;
    o.opset = 6;
    Model model = conv_bn_model(o);
    find_op(model, "BatchNormalization")->set_attribute(int_attribute("is_test", 0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // opset 7: spatial=0 normalizes per activation
    Options o;
    o.opset = 7;
    Model model = conv_bn_model(o);
    find_op(model, "BatchNormalization")->set_attribute(int_attribute("spatial", 0));
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseConvBn, SharedInitializersAreNotModified) {
  Model model = conv_bn_model({});
  Graph& g = model.graph();
  // A second Conv reads the same W and B, without a BatchNormalization.
  Node* other = g.add_node("Conv", {g.find_value("x"), g.find_value("W"), g.find_value("B")},
                           {"other"}, "", "other_conv");
  g.add_output(other->output(0));
  const Tensor w_before = copy_model(model).graph().find_value("W")->initializer();
  const Tensor b_before = copy_model(model).graph().find_value("B")->initializer();
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(other->input(1)->name(), "W");
  EXPECT_EQ(other->input(2)->name(), "B");
  EXPECT_TRUE(g.find_value("W")->initializer().same_contents(w_before));
  EXPECT_TRUE(g.find_value("B")->initializer().same_contents(b_before));
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseConvBn, WrongParameterShapeIsLeftAlone) {
  Model model = conv_bn_model({});
  Graph& g = model.graph();
  g.set_initializer(g.find_value("mean"), random_floats({1, 6}, 9));
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseConvBn, WorksInsideASubgraphWithOuterWeights) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Value* x = g.add_input("x", float_type({1, 4, 5, 5}));
  Value* w = g.add_initializer("W", random_floats({6, 4, 3, 3}, 1));
  const Shape c{6};
  Value* scale = g.add_initializer("scale", positive_floats(c, 3));
  Value* bias = g.add_initializer("bias", random_floats(c, 4));
  Value* mean = g.add_initializer("mean", random_floats(c, 5));
  Value* var = g.add_initializer("var", positive_floats(c, 6));
  Node* if_node = g.add_node("If", {cond}, {"out"}, "", "if");
  g.add_output(if_node->output(0));
  Graph* branches[2];
  for (int i = 0; i < 2; ++i) {
    Attribute branch;
    branch.name = i == 0 ? "then_branch" : "else_branch";
    branch.type = AttrType::kGraph;
    branch.g = std::make_unique<Graph>(&g);
    const std::string suffix = std::to_string(i);
    Node* conv = branch.g->add_node("Conv", {x, w}, {"c" + suffix});
    Node* bn = branch.g->add_node("BatchNormalization", {conv->output(0), scale, bias, mean, var},
                                  {"y" + suffix});
    branch.g->add_output(bn->output(0));
    branches[i] = branch.g.get();
    if_node->set_attribute(std::move(branch));
  }
  Model before = copy_model(model);
  auto pass = make_fuse_conv_bn_pass();
  PassContext context;
  context.model = &model;
  EXPECT_EQ(pass->run(g, context), 0u) << "the outer graph has no pair";
  EXPECT_EQ(pass->run(*branches[0], context), 1u);
  EXPECT_EQ(pass->run(*branches[1], context), 1u);
  EXPECT_TRUE(verify_model(model).ok()) << verify_model(model).message();
  for (Graph* branch : branches) {
    EXPECT_EQ(branch->node_count(), 1u);
    EXPECT_EQ(branch->initializers().size(), 2u) << "new weights live in the branch";
  }
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
