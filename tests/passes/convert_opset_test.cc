#include "passes/convert_opset.h"

#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace onnxkit::testing {
namespace {

Model model_at(int64_t opset) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", opset}};
  return model;
}

std::vector<int64_t> initializer_ints(const Value* value) {
  EXPECT_TRUE(value && value->has_initializer());
  if (!value || !value->has_initializer()) return {};
  const Tensor& tensor = value->initializer();
  const int64_t* data = tensor.data<int64_t>();
  return {data, data + tensor.numel()};
}

std::vector<float> floats_of(const Tensor& tensor) {
  const float* data = tensor.data<float>();
  return {data, data + tensor.numel()};
}

TEST(ConvertOpset, ReduceAxesAttributeBecomesAnInputAt18) {
  Model model = model_at(13);
  GraphBuilder b(model);
  Value* x = b.input("x", {2, 3, 4});
  Node* mean = b.node("ReduceMean", {x}, {Attr::Ints("axes", {1, -1})});
  Node* all = b.node("ReduceMax", {x});  // no axes: all of them, in both versions
  b.output(mean->output(0));
  b.output(all->output(0));
  ASSERT_TRUE(convert_opset(model, 18).ok());
  EXPECT_EQ(model.opset_version(""), 18);
  // libonnx's converter (13 -> 17) rebuilt the graph.
  mean = model.graph().nodes()[0];
  all = model.graph().nodes()[1];
  ASSERT_EQ(mean->op_type(), "ReduceMean");
  EXPECT_EQ(mean->find_attribute("axes"), nullptr);
  ASSERT_EQ(mean->inputs().size(), 2u);
  EXPECT_EQ(initializer_ints(mean->input(1)), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(all->inputs().size(), 1u);
}

TEST(ConvertOpset, SplitIntoEqualPartsGetsNumOutputsAt18) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Value* x = b.input("x", {6, 2});
  Node* equal = b.node("Split", {x}, {}, 3);
  Node* sized = b.node("Split", {x, b.ints({1, 5})}, {}, 2);
  for (Value* out : equal->outputs()) b.output(out);
  for (Value* out : sized->outputs()) b.output(out);
  ASSERT_TRUE(convert_opset(model, 18).ok());
  const Attribute* parts = equal->find_attribute("num_outputs");
  ASSERT_NE(parts, nullptr);
  EXPECT_EQ(parts->i, 3);
  EXPECT_EQ(sized->find_attribute("num_outputs"), nullptr);
}

TEST(ConvertOpset, DftAxisAndGridSampleModesAt20) {
  Model model = model_at(17);
  GraphBuilder b(model);
  Node* dft = b.node("DFT", {b.input("signal", {1, 8, 1})}, {Attr::Int("axis", 1)});
  Node* default_axis = b.node("DFT", {b.input("signal2", {1, 8, 1})});
  Node* grid = b.node("GridSample", {b.input("image", {1, 1, 4, 4}), b.input("grid", {1, 2, 2, 2})},
                      {Attr::String("mode", "bicubic")});
  b.output(dft->output(0));
  b.output(default_axis->output(0));
  b.output(grid->output(0));
  ASSERT_TRUE(convert_opset(model, 20).ok());
  EXPECT_EQ(dft->find_attribute("axis"), nullptr);
  ASSERT_EQ(dft->inputs().size(), 3u);
  EXPECT_EQ(dft->input(1), nullptr);
  EXPECT_EQ(initializer_ints(dft->input(2)), std::vector<int64_t>{1});
  EXPECT_EQ(initializer_ints(default_axis->input(2)), std::vector<int64_t>{1});
  EXPECT_EQ(grid->find_attribute("mode")->s, "cubic");
}

TEST(ConvertOpset, GroupNormalizationScaleAndBiasPerChannelAt21) {
  Model model = model_at(18);
  GraphBuilder b(model);
  Value* x = b.input("x", {1, 4, 2, 2});
  Value* scale = b.constant(Tensor::from_vector<float>(DType::kFloat, {2}, {2.f, 3.f}));
  Value* bias = b.constant(Tensor::from_vector<float>(DType::kFloat, {2}, {0.5f, -1.f}));
  Node* norm = b.node("GroupNormalization", {x, scale, bias}, {Attr::Int("num_groups", 2)});
  b.output(norm->output(0));
  ASSERT_TRUE(convert_opset(model, 21).ok());
  EXPECT_EQ(model.opset_version(""), 21);
  ASSERT_NE(norm->input(1)->producer(), nullptr);
  EXPECT_EQ(norm->input(1)->producer()->op_type(), "Reshape");
  ASSERT_NE(norm->input(2)->producer(), nullptr);
  // Each group's value repeated over its C / num_groups channels: run what was inserted.
  Graph& graph = model.graph();
  graph.add_output(norm->input(1));
  graph.add_output(norm->input(2));
  graph.remove_output(0);
  graph.remove_node(norm);
  NamedValues outputs = run_model(std::move(model), {{"x", Tensor(DType::kFloat, {1, 4, 2, 2})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(floats_of(outputs[0].second.tensor()), (std::vector<float>{2.f, 2.f, 3.f, 3.f}));
  EXPECT_EQ(floats_of(outputs[1].second.tensor()), (std::vector<float>{0.5f, 0.5f, -1.f, -1.f}));
}

TEST(ConvertOpset, RefusesWhatItCannotDo) {
  Model newer = model_at(18);
  Status down = convert_opset(newer, 17);
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.message().find("converting down from opset 18"), std::string::npos)
      << down.message();
  Model model = model_at(17);
  Status too_new = convert_opset(model, 29);
  ASSERT_FALSE(too_new.ok());
  EXPECT_NE(too_new.message().find("1 to 28"), std::string::npos) << too_new.message();
}

}  // namespace
}  // namespace onnxkit::testing
