#include "onnx/onnx_checks.h"

#include <gtest/gtest.h>

#include "../test_util.h"
#include "ir/value_type.h"
#include "model_builder.h"
#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

using testing::TempDir;

TEST(OnnxChecks, KnownOpsets) {
  EXPECT_EQ(max_known_opset(""), 17);
  EXPECT_EQ(max_known_opset("ai.onnx"), 17);
  EXPECT_EQ(max_known_opset("ai.onnx.ml"), 3);
  EXPECT_EQ(max_known_opset("com.example"), -1);
}

TEST(OnnxChecks, CheckerAcceptsAValidModel) {
  TempDir dir;
  testing::write_model(testing::add_model(8), dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok());
  Status status = check_model(model.value(), true);
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(OnnxChecks, CheckerRejectsAnUnknownOperator) {
  TempDir dir;
  auto proto = testing::add_model(8);
  proto.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");
  testing::write_model(proto, dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok());
  Status status = check_model(model.value());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("NoSuchOp"), std::string::npos) << status.message();
}

TEST(OnnxChecks, OpsetsNewerThanOnnx123GetAClearMessage) {
  TempDir dir;
  testing::write_model(testing::add_model(8, 29), dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok()) << "loading does not need schemas";
  EXPECT_EQ(newest_defined_opset(""), 28);
  EXPECT_EQ(newest_defined_opset("ai.onnx.ml"), 5);
  Status status = check_model(model.value());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("opset 29"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("28"), std::string::npos) << status.message();
  EXPECT_FALSE(infer_shapes(model.value()).ok());
}

TEST(OnnxChecks, NodesOfOpsetsNewerThanLibonnxAreLeftOutOfTheCheck) {
  TempDir dir;
  auto proto = testing::add_model(8, 19);
  proto.mutable_graph()->mutable_node(0)->set_op_type("NoSuchOp");  // not even looked at
  testing::write_model(proto, dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok());
  std::vector<std::string> notes;
  Status status = check_model(model.value(), false, &notes);
  EXPECT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 node(s) of newer opsets not checked"), std::string::npos) << notes[0];
}

TEST(OnnxChecks, LibonnxInfersOneNode) {
  TempDir dir;
  testing::write_model(testing::add_model(8), dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok());
  const Node& add = *model.value().graph().nodes().at(0);
  EXPECT_EQ(libonnx_since_version("", "Add", 18), 14);
  EXPECT_EQ(libonnx_since_version("", "NoSuchOp", 18), -1);
  const ValueType a =
      ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("n"), Dim::known(3)});
  const ValueType b =
      ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(1), Dim::known(3)});
  NodeInferenceInputs inputs;
  inputs.types = {&a, &b};
  auto outputs = libonnx_infer_node(add, 14, inputs);
  ASSERT_TRUE(outputs.has_value());
  ASSERT_EQ(outputs->size(), 1u);
  EXPECT_EQ(value_type_to_string(outputs->at(0)), "float[n,3]");
  const ValueType bad = ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(2)});
  const ValueType worse = ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(5)});
  inputs.types = {&bad, &worse};
  EXPECT_THROW(libonnx_infer_node(add, 14, inputs), Error);
}

TEST(OnnxChecks, ShapeInferenceAnnotatesIntermediates) {
  TempDir dir;
  auto proto = testing::add_model(8);
  auto* graph = proto.mutable_graph();
  graph->mutable_node(0)->set_output(0, "sum");
  auto* relu = graph->add_node();
  relu->set_op_type("Relu");
  relu->add_input("sum");
  relu->add_output("y");
  // Declare x with a symbolic batch dim to see symbols flow through.
  auto* dims = graph->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("n");
  graph->mutable_initializer(0)->set_dims(0, 1);
  graph->mutable_initializer(0)->set_raw_data(std::string(4, '\0'));
  graph->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  testing::write_model(proto, dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  ASSERT_TRUE(infer_shapes(model.value()).ok());
  const Value* sum = model.value().graph().find_value("sum");
  EXPECT_EQ(value_type_to_string(sum->type()), "float[n]");
  EXPECT_EQ(model.value().graph().value_info().size(), 1u);
  EXPECT_EQ(value_type_to_string(model.value().graph().outputs()[0]->type()), "float[n]");
}

}  // namespace
}  // namespace onnxkit
