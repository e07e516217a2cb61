#include "runtime/session.h"

#include <gtest/gtest.h>

#include "ops/registry.h"
#include "runtime/compiled_graph.h"

namespace onnxkit {
namespace {

// y = (x + w) * x, x: float[batch, 3]
Model small_model() {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 13}};
  Graph& g = model.graph();
  ValueType type =
      ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("batch"), Dim::known(3)});
  Value* x = g.add_input("x", type);
  Value* w = g.add_initializer("w", Tensor::from_vector<float>(DType::kFloat, {3}, {1, 2, 3}));
  Node* add = g.add_node("Add", {x, w}, {"sum"}, "", "add_0");
  Node* mul = g.add_node("Mul", {add->output(0), x}, {"y"}, "", "mul_0");
  g.add_output(mul->output(0));
  return model;
}

TEST(Session, RunsAndBroadcasts) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok()) << session.error();
  auto x = Tensor::from_vector<float>(DType::kFloat, {2, 3}, {1, 1, 1, 2, 2, 2});
  auto out = session.value()->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out.value().size(), 1u);
  EXPECT_EQ(out.value()[0].first, "y");
  const Tensor& y = out.value()[0].second.tensor();
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  std::vector<float> expected{2, 3, 4, 6, 8, 10};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(y.data<float>()[i], expected[i]);
}

TEST(Session, InputsAreValidatedByName) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok());
  const Session& s = *session.value();
  auto wrong_type = s.run({{"x", Tensor(DType::kInt64, {2, 3})}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().find("input 'x' must be float, got int64"), std::string::npos)
      << wrong_type.error();
  auto wrong_dim = s.run({{"x", Tensor(DType::kFloat, {2, 4})}});
  ASSERT_FALSE(wrong_dim.ok());
  EXPECT_NE(wrong_dim.error().find("input 'x'"), std::string::npos) << wrong_dim.error();
  EXPECT_NE(wrong_dim.error().find("dim 1 is 4, expected 3"), std::string::npos);
  auto wrong_rank = s.run({{"x", Tensor(DType::kFloat, {3})}});
  ASSERT_FALSE(wrong_rank.ok());
  EXPECT_NE(wrong_rank.error().find("rank 2"), std::string::npos) << wrong_rank.error();
  auto missing = s.run({});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("input 'x'"), std::string::npos);
  EXPECT_NE(missing.error().find("missing"), std::string::npos);
  auto unknown = s.run({{"x", Tensor(DType::kFloat, {1, 3})}, {"z", Tensor(DType::kFloat, {1})}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown input 'z'"), std::string::npos);
}

TEST(Session, SymbolicDimsMustAgreeAcrossInputs) {
  Model model;
  model.opset_imports = {{"", 13}};
  ValueType type = ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("n")});
  Value* a = model.graph().add_input("a", type);
  Value* b = model.graph().add_input("b", type);
  Node* add = model.graph().add_node("Add", {a, b}, {"c"});
  model.graph().add_output(add->output(0));
  auto session = Session::create(std::move(model));
  ASSERT_TRUE(session.ok());
  auto result =
      session.value()->run({{"a", Tensor(DType::kFloat, {2})}, {"b", Tensor(DType::kFloat, {3})}});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("n = 3"), std::string::npos) << result.error();
}

TEST(Session, KernelErrorsNameTheNode) {
  auto session = Session::create(small_model());
  ASSERT_TRUE(session.ok());
  SessionOptions no_checks;
  no_checks.validate_inputs = false;
  auto unchecked = Session::create(small_model(), no_checks);
  auto result = unchecked.value()->run({{"x", Tensor(DType::kFloat, {2, 4})}});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("[Add] node 'add_0'"), std::string::npos) << result.error();
  EXPECT_NE(result.error().find("cannot be broadcast"), std::string::npos) << result.error();
}

TEST(Session, UnknownOperatorIsReportedAtCreation) {
  Model model = small_model();
  Graph& g = model.graph();
  Node* odd = g.add_node("FrobnicateOp", {g.outputs()[0]}, {"z"}, "", "odd_0");
  g.set_output(0, odd->output(0));
  auto session = Session::create(std::move(model));
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.error().find("[FrobnicateOp] node 'odd_0'"), std::string::npos);
  EXPECT_NE(session.error().find("not implemented"), std::string::npos) << session.error();
}

TEST(CompiledGraph, IntermediatesAreReleasedAfterTheirLastUse) {
  Model model = small_model();
  auto plan = CompiledGraph::compile(model.graph(), OpRegistry::builtin(), model.opset_imports);
  ASSERT_EQ(plan->steps().size(), 2u);
  const int sum_slot = plan->slot_of(model.graph().find_value("sum"));
  const int x_slot = plan->slot_of(model.graph().find_value("x"));
  const auto& last = plan->steps()[1].release;
  EXPECT_NE(std::find(last.begin(), last.end(), sum_slot), last.end());
  EXPECT_NE(std::find(last.begin(), last.end(), x_slot), last.end());
  const int y_slot = plan->slot_of(model.graph().find_value("y"));
  EXPECT_EQ(std::find(last.begin(), last.end(), y_slot), last.end()) << "outputs are kept";
}

TEST(Registry, NewestRegistrationNotNewerThanTheOpset) {
  OpRegistry registry;
  KernelFactory none = [](const KernelCreateContext&) -> std::unique_ptr<OpKernel> {
    return nullptr;
  };
  registry.add("", "Op", 1, none);
  registry.add("", "Op", 11, none);
  registry.add("", "Op", 13, none);
  EXPECT_EQ(registry.find("", "Op", 10)->since_version, 1);
  EXPECT_EQ(registry.find("ai.onnx", "Op", 12)->since_version, 11);
  EXPECT_EQ(registry.find("", "Op", 17)->since_version, 13);
  EXPECT_EQ(registry.find("", "Op", 0), nullptr);
  EXPECT_EQ(registry.find("com.x", "Op", 13), nullptr);
  EXPECT_THROW(registry.add("", "Op", 11, none), Error);
}

}  // namespace
}  // namespace onnxkit
