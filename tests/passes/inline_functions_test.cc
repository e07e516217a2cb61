#include "passes/inline_functions.h"

#include <gtest/gtest.h>

#include "../attribute_test_util.h"
#include "ir/verifier.h"
#include "onnxkit/session.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// A model-local function custom.ScaledAdd(a, b) = (a + b) * alpha, where alpha is the
// caller's attribute `scale` (a ref_attr_name reference inside the body).
Function scaled_add() {
  Function function;
  function.name = "ScaledAdd";
  function.domain = "custom";
  function.attributes = {"scale"};
  function.opset_imports = {{"", 13}};
  function.body = std::make_unique<Graph>();
  Graph& body = *function.body;
  Value* a = body.add_input("a", {});
  Value* b = body.add_input("b", {});
  Node* constant = body.add_node("Constant", {}, {"alpha"});
  Attribute value;
  value.name = "value_float";
  value.type = AttrType::kFloat;
  value.ref_attr_name = "scale";
  constant->set_attribute(std::move(value));
  Node* add = body.add_node("Add", {a, b}, {"sum"});
  Node* mul = body.add_node("Mul", {add->output(0), constant->output(0)}, {"out"});
  body.add_output(mul->output(0));
  return function;
}

Model model_calling(int calls) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}, {"custom", 1}};
  model.functions.push_back(scaled_add());
  Graph& g = model.graph();
  ValueType type = ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(2)});
  Value* x = g.add_input("x", type);
  Value* current = x;
  for (int i = 0; i < calls; ++i) {
    Node* call = g.add_node("ScaledAdd", {current, x}, {"y" + std::to_string(i)}, "custom",
                            "call" + std::to_string(i));
    testing::set_float(call, "scale", static_cast<float>(i + 2));
    current = call->output(0);
  }
  g.add_output(current);
  return model;
}

TEST(InlineFunctions, LocalFunctionCallsBecomeTheirBodies) {
  Model model = model_calling(2);
  auto inlined = inline_functions(model, {});
  ASSERT_TRUE(inlined.ok()) << inlined.error();
  EXPECT_EQ(inlined.value(), 2u);
  for (Node* node : model.graph().nodes()) EXPECT_NE(node->domain(), "custom");
  EXPECT_EQ(model.graph().node_count(), 6u);
  EXPECT_EQ(model.graph().outputs()[0]->name(), "y1") << "output names are kept";
  EXPECT_TRUE(verify_model(model).ok()) << verify_model(model).message();
}

TEST(InlineFunctions, SessionRunsLocalFunctionsWithAttributeReferences) {
  auto session = Session::create(model_calling(2), SessionOptions::reference());
  ASSERT_TRUE(session.ok()) << session.error();
  auto x = Tensor::from_vector<float>(DType::kFloat, {2}, {1, 2});
  auto out = session.value()->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.error();
  // call0: (x + x) * 2 = 4x; call1: (4x + x) * 3 = 15x
  const Tensor& y = out.value()[0].second.tensor();
  EXPECT_FLOAT_EQ(y.data<float>()[0], 15);
  EXPECT_FLOAT_EQ(y.data<float>()[1], 30);
}

TEST(InlineFunctions, SchemaFunctionExpandsOpsWithoutKernels) {
  // Celu has a kernel; pretend it does not, so its ONNX function body is used instead.
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  ValueType type = ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(3)});
  Value* x = model.graph().add_input("x", type);
  Node* celu = model.graph().add_node("Celu", {x}, {"y"}, "", "celu0");
  model.graph().add_output(celu->output(0));
  InlineOptions options;
  options.has_kernel = [](const Node& node) { return node.op_type() != "Celu"; };
  auto inlined = inline_functions(model, options);
  ASSERT_TRUE(inlined.ok()) << inlined.error();
  EXPECT_EQ(inlined.value(), 1u);
  EXPECT_GT(model.graph().node_count(), 1u);
  auto session = Session::create(std::move(model), SessionOptions::reference());
  ASSERT_TRUE(session.ok()) << session.error();
  auto out = session.value()->run(
      {{"x", Tensor::from_vector<float>(DType::kFloat, {3}, {-1.0f, 0.0f, 2.0f})}});
  ASSERT_TRUE(out.ok()) << out.error();
  const float* y = out.value()[0].second.tensor().data<float>();
  EXPECT_NEAR(y[0], std::exp(-1.0f) - 1.0f, 1e-6);  // alpha = 1
  EXPECT_FLOAT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], 2.0f);
}

TEST(InlineFunctions, RecursiveFunctionsAreRefused) {
  Model model = model_calling(1);
  // Make the body call the function itself.
  Graph& body = *model.functions[0].body;
  Node* mul = body.nodes().back();
  Node* self = body.add_node("ScaledAdd", {mul->output(0), mul->output(0)}, {"again"}, "custom");
  body.set_output(0, self->output(0));
  auto inlined = inline_functions(model, {});
  ASSERT_FALSE(inlined.ok());
  EXPECT_NE(inlined.error().find("recursive"), std::string::npos) << inlined.error();
}

}  // namespace
}  // namespace onnxkit
