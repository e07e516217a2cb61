#include <limits>
#include <optional>

#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct Options {
  int64_t opset = 13;
  std::string op = "Conv";                               // or AveragePool / MaxPool
  std::vector<int64_t> pads = {0, 0, 1, 2, 0, 0, 2, 1};  // over [N, C, H, W]
  std::optional<float> value;                            // the Pad's fill, when given
  std::vector<int64_t> own_pads;                         // the op's pads attribute, if any
};

// x [1, 3, 6, 6] -> Pad -> op (Conv with W [4, 3, 3, 3], or a 3x3 pool) -> y.
Model pad_model(const Options& o) {
  Model model = empty_model(o.opset);
  Graph& g = model.graph();
  const size_t rank = o.pads.size() / 2;
  std::vector<int64_t> dims{1, 3};
  while (dims.size() < rank) dims.push_back(6);
  Value* x = g.add_input("x", float_type(dims));
  Node* pad;
  if (o.opset >= 11) {
    std::vector<Value*> inputs{
        x, g.add_initializer(
               "pads",
               Tensor::from_vector(DType::kInt64, {static_cast<int64_t>(o.pads.size())}, o.pads))};
    if (o.value) {
      inputs.push_back(
          g.add_initializer("value", Tensor::from_vector<float>(DType::kFloat, {}, {*o.value})));
    }
    pad = g.add_node("Pad", inputs, {"padded"}, "", "pad");
  } else {
    pad = g.add_node("Pad", {x}, {"padded"}, "", "pad");
    pad->set_attribute(ints_attribute(o.opset >= 2 ? "pads" : "paddings", o.pads));
    if (o.value) pad->set_attribute(float_attribute("value", *o.value));
  }
  Node* op;
  const std::vector<int64_t> kernel(rank - 2, 3);
  if (o.op == "Conv") {
    Shape w_shape{4, 3};
    w_shape.insert(w_shape.end(), kernel.begin(), kernel.end());
    op = g.add_node("Conv", {pad->output(0), g.add_initializer("W", random_floats(w_shape, 1))},
                    {"y"}, "", "op");
  } else {
    op = g.add_node(o.op, {pad->output(0)}, {"y"}, "", "op");
    op->set_attribute(ints_attribute("kernel_shape", kernel));
  }
  if (!o.own_pads.empty()) op->set_attribute(ints_attribute("pads", o.own_pads));
  g.add_output(op->output(0));
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_pad_into_conv_pass(), model);
}

// Fuses, checks that the op's pads became `expected` and the outputs did not change.
void expect_fused(Model model, const std::vector<int64_t>& expected) {
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Pad"), 0u);
  ASSERT_EQ(model.graph().node_count(), 1u);
  const Node* op = model.graph().nodes()[0];
  EXPECT_EQ(op->input(0)->name(), "x");
  const Attribute* pads = op->find_attribute("pads");
  ASSERT_TRUE(pads);
  EXPECT_EQ(pads->ints, expected);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FusePadIntoConv, ConstantZeroPadBecomesConvPads) {
  expect_fused(pad_model({}), {1, 2, 2, 1});
  Options o;
  o.value = 0.0f;
  o.own_pads = {1, 1, 0, 1};
  expect_fused(pad_model(o), {2, 3, 2, 2});
}

TEST(FusePadIntoConv, OneAndThreeSpatialDims) {
  Options o;
  o.pads = {0, 0, 2, 0, 0, 1};
  expect_fused(pad_model(o), {2, 1});
  o.pads = {0, 0, 1, 0, 2, 0, 0, 1, 1, 0};
  expect_fused(pad_model(o), {1, 0, 2, 1, 1, 0});
}

TEST(FusePadIntoConv, AttributePadsOfOlderOpsets) {
  for (int64_t opset : {1, 2, 10}) {
    SCOPED_TRACE(opset);
    Options o;
    o.opset = opset;
    expect_fused(pad_model(o), {1, 2, 2, 1});
  }
}

TEST(FusePadIntoConv, AveragePoolOnlyWhenPadsCount) {
  Options o;
  o.op = "AveragePool";
  o.pads = {0, 0, 1, 1, 0, 0, 2, 1};
  Model counted = pad_model(o);
  counted.graph().nodes()[1]->set_attribute(int_attribute("count_include_pad", 1));
  expect_fused(std::move(counted), {1, 1, 2, 1});
  Model excluded = pad_model(o);  // count_include_pad = 0 would divide by fewer elements
  EXPECT_EQ(run_pass(excluded), 0u);
  Model ceil = pad_model(o);
  ceil.graph().nodes()[1]->set_attribute(int_attribute("count_include_pad", 1));
  ceil.graph().nodes()[1]->set_attribute(int_attribute("ceil_mode", 1));
  EXPECT_EQ(run_pass(ceil), 0u);
}

TEST(FusePadIntoConv, MaxPoolOnlyWithMinusInfinity) {
  Options o;
  o.op = "MaxPool";
  o.pads = {0, 0, 1, 0, 0, 0, 2, 1};
  Model zero = pad_model(o);  // zeros can win over negative inputs
  EXPECT_EQ(run_pass(zero), 0u);
  o.value = -std::numeric_limits<float>::infinity();
  expect_fused(pad_model(o), {1, 0, 2, 1});
  o.opset = 10;
  expect_fused(pad_model(o), {1, 0, 2, 1});
  o.opset = 13;
  Model indices = pad_model(o);  // indices would number the padded input
  Graph& g = indices.graph();
  Node* pool = g.nodes()[1];
  g.set_node_output(pool, 1, g.create_value("indices"));
  g.add_output(pool->output(1));
  EXPECT_EQ(run_pass(indices), 0u);
  o.pads = {0, 0, 3, 0, 0, 0, 0, 0};  // the pool's pads must stay below the kernel
  Model wide = pad_model(o);
  EXPECT_EQ(run_pass(wide), 0u);
}

TEST(FusePadIntoConv, PadsThatAreNotSpatialOrZeroAreLeftAlone) {
  for (const auto& pads : std::vector<std::vector<int64_t>>{{0, 1, 1, 1, 0, 0, 1, 1},
                                                            {1, 0, 1, 1, 0, 0, 1, 1},
                                                            {0, 0, 1, 1, 0, 1, 1, 1},
                                                            {0, 0, -1, 1, 0, 0, 1, 1}}) {
    Options o;
    o.pads = pads;
    Model model = pad_model(o);
    EXPECT_EQ(run_pass(model), 0u) << shape_to_string(pads);
  }
  Options o;
  o.value = 1.0f;
  Model one = pad_model(o);
  EXPECT_EQ(run_pass(one), 0u);
  o.opset = 10;
  Model one_attr = pad_model(o);
  EXPECT_EQ(run_pass(one_attr), 0u);
}

TEST(FusePadIntoConv, NegativeCases) {
  {  // reflect mode
    Model model = pad_model({});
    model.graph().nodes()[0]->set_attribute(string_attribute("mode", "reflect"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // pads the caller may override
    Model model = pad_model({});
    model.graph().add_input(model.graph().find_value("pads"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // the Conv pads by itself
    Model model = pad_model({});
    model.graph().nodes()[1]->set_attribute(string_attribute("auto_pad", "SAME_UPPER"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a second reader of the padded value
    Model model = pad_model({});
    Graph& g = model.graph();
    g.add_output(g.add_node("Relu", {g.find_value("padded")}, {"r"})->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // the padded value is a graph output
    Model model = pad_model({});
    model.graph().add_output(model.graph().find_value("padded"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // the Pad feeds the weights, not the data
    Model model = empty_model(13);
    Graph& g = model.graph();
    Node* pad = g.add_node(
        "Pad",
        {g.add_initializer("w0", random_floats({4, 3, 1, 1}, 1)),
         g.add_initializer(
             "pads", Tensor::from_vector<int64_t>(DType::kInt64, {8}, {0, 0, 1, 1, 0, 0, 1, 1}))},
        {"w"});
    g.add_output(
        g.add_node("Conv", {g.add_input("x", float_type({1, 3, 5, 5})), pad->output(0)}, {"y"})
            ->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
}

}  // namespace
}  // namespace onnxkit
