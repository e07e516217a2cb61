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
  std::string op = "ConvTranspose";
};

// x -> ConvTranspose(W [C_in, C_out / group, 3...], B) -> BatchNormalization -> y.
Model model_for(const Options& o) {
  Model model = empty_model(o.opset);
  Graph& g = model.graph();
  std::vector<Dim> x_dims{Dim::known(1), Dim::known(o.in_channels)};
  Shape w_shape{o.in_channels, o.out_channels / o.group};
  if (o.op == "Conv") w_shape = {o.out_channels, o.in_channels / o.group};
  for (int i = 0; i < o.spatial; ++i) {
    x_dims.push_back(Dim::known(4));
    w_shape.push_back(3);
  }
  Value* x = g.add_input("x", ValueType::tensor(o.dtype, x_dims));
  std::vector<Value*> inputs{x,
                             g.add_initializer("W", cast_to(random_floats(w_shape, 1), o.dtype))};
  if (o.bias) {
    inputs.push_back(g.add_initializer("B", cast_to(random_floats({o.out_channels}, 2), o.dtype)));
  }
  Node* conv = g.add_node(o.op, inputs, {"c"}, "", "convt");
  if (o.group != 1) conv->set_attribute(int_attribute("group", o.group));
  const Shape c{o.out_channels};
  Node* bn = g.add_node("BatchNormalization",
                        {conv->output(0), g.add_initializer("scale", positive_floats(c, 3)),
                         g.add_initializer("bias", random_floats(c, 4)),
                         g.add_initializer("mean", random_floats(c, 5)),
                         g.add_initializer("var", positive_floats(c, 6))},
                        {"y"}, "", "bn");
  if (o.dtype != DType::kFloat) {
    for (size_t i = 1; i < 5; ++i) {
      g.set_initializer(bn->input(i), cast_to(bn->input(i)->initializer(), o.dtype));
    }
  }
  g.add_output(bn->output(0));
  return model;
}

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_fuse_convtranspose_bn_pass(), model, std::move(context));
}

void expect_fused(const Options& o, double tol = 1e-4) {
  Model model = model_for(o);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "BatchNormalization"), 0u);
  Node* convt = find_op(model, "ConvTranspose");
  ASSERT_TRUE(convt);
  EXPECT_EQ(convt->output(0)->name(), "y");
  ASSERT_TRUE(convt->input(2));
  EXPECT_EQ(convt->input(2)->initializer().shape(), Shape{o.out_channels});
  EXPECT_EQ(convt->input(1)->initializer().dtype(), o.dtype);
  EXPECT_TRUE(same_outputs(before, model, tol, tol / 10));
}

TEST(FuseConvTransposeBn, FoldsWithAndWithoutBias) {
  Options o;
  expect_fused(o);
  o.bias = false;
  expect_fused(o);
}

TEST(FuseConvTransposeBn, GroupsScaleAlongTheSecondWeightDim) {
  for (int64_t group : {2, 4}) {
    SCOPED_TRACE(group);
    Options o;
    o.group = group;
    o.out_channels = 8;  // 8 / group output channels per group, W is [4, 8 / group, 3, 3]
    expect_fused(o);
  }
}

TEST(FuseConvTransposeBn, OneAndThreeSpatialDims) {
  for (int spatial : {1, 3}) {
    SCOPED_TRACE(spatial);
    Options o;
    o.spatial = spatial;
    o.group = 2;
    expect_fused(o);
  }
}

TEST(FuseConvTransposeBn, DoubleAndFloat16) {
  Options o;
  o.dtype = DType::kDouble;
  expect_fused(o);
  o.dtype = DType::kFloat16;
  expect_fused(o, 2e-2);
}

TEST(FuseConvTransposeBn, LeavesConvToTheConvPass) {
  Options o;
  o.op = "Conv";
  Model model = model_for(o);
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(FuseConvTransposeBn, NegativeCases) {
  {  // a second reader of the ConvTranspose output
    Model model = model_for({});
    Graph& g = model.graph();
    g.add_output(g.add_node("Relu", {g.find_value("c")}, {"r"})->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // training mode
    Options o;
    o.opset = 15;
    Model model = model_for(o);
    find_op(model, "BatchNormalization")->set_attribute(int_attribute("training_mode", 1));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a non-constant mean
    Model model = model_for({});
    Graph& g = model.graph();
    g.set_node_input(find_op(model, "BatchNormalization"), 3,
                     g.add_input("mean_in", float_type({6})));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // out_channels not matching the parameters
    Model model = model_for({});
    Graph& g = model.graph();
    g.set_initializer(g.find_value("W"), random_floats({4, 3, 3, 3}, 1));
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseConvTransposeBn, SharedWeightsAreNotModified) {
  Model model = model_for({});
  Graph& g = model.graph();
  Node* other = g.add_node("ConvTranspose", {g.find_value("x"), g.find_value("W")}, {"o"});
  g.add_output(other->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(other->input(1)->name(), "W");
  EXPECT_TRUE(g.find_value("W")->initializer().same_contents(
      before.graph().find_value("W")->initializer()));
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
