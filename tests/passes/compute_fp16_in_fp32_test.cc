#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

ValueType typed(DType dtype, std::vector<int64_t> dims) {
  ValueType type = float_type(std::move(dims));
  type.elem_type = dtype;
  return type;
}

size_t run_pass(Model& model) {
  infer(model);
  return apply_pass(*make_compute_fp16_in_fp32_pass(), model);
}

DType dtype_of(const Value* value) {
  return value->type().elem_type;
}

// x (16-bit) -> Conv(W) -> Relu -> Add(x) -> y: one region, casts at x and y only.
Model conv_block(DType dtype) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", typed(dtype, {1, 4, 5, 5}));
  Value* w = g.add_initializer("W", cast_to(random_floats({4, 4, 3, 3}, 1), dtype));
  Node* conv = g.add_node("Conv", {x, w}, {"c"});
  conv->set_attribute(ints_attribute("pads", {1, 1, 1, 1}));
  Node* relu = g.add_node("Relu", {conv->output(0)}, {"r"});
  Node* add = g.add_node("Add", {relu->output(0), x}, {"y"});
  g.add_output(add->output(0));
  return model;
}

TEST(ComputeFp16InFp32, RegionTurnsFloat32WithCastsAtItsEdges) {
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Model model = conv_block(dtype);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 3u);
    EXPECT_EQ(count_ops(model, "Cast"), 2u);
    const Node* conv = find_op(model, "Conv");
    EXPECT_EQ(dtype_of(conv->input(0)), DType::kFloat);
    EXPECT_EQ(conv->input(0)->producer()->op_type(), "Cast");
    EXPECT_EQ(dtype_of(conv->input(1)), DType::kFloat);
    EXPECT_TRUE(conv->input(1)->has_initializer());
    EXPECT_EQ(dtype_of(find_op(model, "Add")->output(0)), DType::kFloat);
    // The interface keeps its names and dtypes.
    const Graph& g = model.graph();
    ASSERT_EQ(g.outputs().size(), 1u);
    EXPECT_EQ(g.outputs()[0]->name(), "y");
    EXPECT_EQ(dtype_of(g.outputs()[0]), dtype);
    EXPECT_EQ(g.outputs()[0]->producer()->op_type(), "Cast");
    EXPECT_EQ(dtype_of(g.inputs()[0]), dtype);
    // Float32 compute is at least as precise: within a 16-bit rounding of the 16-bit run.
    EXPECT_TRUE(same_outputs(before, model, 2e-2, 2e-2));
    // Nothing is left to convert.
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(ComputeFp16InFp32, ExplicitCastToFp16KeepsItsRounding) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3}));
  Node* cast = g.add_node("Cast", {x}, {"h"});
  cast->set_attribute(int_attribute("to", static_cast<int64_t>(DType::kFloat16)));
  Node* sigmoid = g.add_node("Sigmoid", {cast->output(0)}, {"y"});
  g.add_output(sigmoid->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  // x -> Cast(fp16) -> Cast(float) -> Sigmoid -> Cast(fp16): the model's Cast stays.
  EXPECT_EQ(count_ops(model, "Cast"), 3u);
  EXPECT_EQ(dtype_of(find_op(model, "Sigmoid")->input(0)), DType::kFloat);
  EXPECT_EQ(dtype_of(model.graph().outputs()[0]), DType::kFloat16);
  EXPECT_TRUE(same_outputs(before, model, 1e-2, 1e-3));
}

TEST(ComputeFp16InFp32, ShapeOfAGraphInputStaysAsItIs) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", typed(DType::kFloat16, {2, 3}));
  Node* shape = g.add_node("Shape", {x}, {"s"});
  g.add_output(shape->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Cast"), 0u);
}

TEST(ComputeFp16InFp32, ShapeOfAConvertedValueReadsTheFloat32Value) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", typed(DType::kFloat16, {2, 3}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* shape = g.add_node("Shape", {relu->output(0)}, {"s"});
  Node* neg = g.add_node("Neg", {relu->output(0)}, {"y"});
  g.add_output(shape->output(0));
  g.add_output(neg->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 3u);
  EXPECT_EQ(count_ops(model, "Cast"), 2u);  // at x, at y
  EXPECT_EQ(dtype_of(find_op(model, "Shape")->input(0)), DType::kFloat);
  EXPECT_TRUE(same_outputs(before, model, 1e-3, 1e-3));
}

TEST(ComputeFp16InFp32, AttributeTypedProducersStay16BitAndTheirReadersConvert) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", typed(DType::kFloat16, {2, 3}));
  Node* fill = g.add_node("ConstantOfShape", {g.add_initializer("shape", int64s({2, 3}))}, {"f"});
  fill->set_attribute(tensor_attribute("value", cast_to(floats({0.5f}), DType::kFloat16)));
  Node* add = g.add_node("Add", {x, fill->output(0)}, {"y"});
  g.add_output(add->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(dtype_of(fill->output(0)), DType::kFloat16);
  EXPECT_EQ(count_ops(model, "Cast"), 3u);  // x and the fill to float32, y back
  EXPECT_TRUE(same_outputs(before, model, 1e-3, 1e-3));
}

TEST(ComputeFp16InFp32, ValuesASubgraphReadsKeepTheirDtype) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", typed(DType::kFloat16, {2, 3}));
  Value* condition = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Node* relu = g.add_node("Relu", {x}, {"r"});
  Node* when = g.add_node("If", {condition}, {"y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto body = std::make_unique<Graph>(&g);
    Node* neg = body->add_node("Neg", {relu->output(0)}, {std::string(branch) + "_out"});
    body->add_output(neg->output(0));
    when->set_attribute(graph_attribute(branch, std::move(body)));
  }
  g.add_output(when->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(dtype_of(relu->output(0)), DType::kFloat16);
}

TEST(ComputeFp16InFp32, SessionsComputeFp16ModelsInFloat32) {
  Model model = conv_block(DType::kFloat16);
  Model copy = copy_model(model);
  SessionOptions all;
  all.level = OptimizationLevel::kAll;
  auto session = Session::create(std::move(copy), all);
  ASSERT_TRUE(session.ok()) << session.error();
  size_t narrow_nodes = 0;
  for (const Node* node : session.value()->model().graph().nodes()) {
    if (node->op_type() == "Cast") continue;
    for (const Value* output : node->outputs()) {
      if (output && dtype_of(output) == DType::kFloat16) ++narrow_nodes;
    }
  }
  EXPECT_EQ(narrow_nodes, 0u);
  EXPECT_EQ(session.value()->inputs()[0].dtype, DType::kFloat16);
  EXPECT_EQ(session.value()->outputs()[0].dtype, DType::kFloat16);
}

}  // namespace
}  // namespace onnxkit
