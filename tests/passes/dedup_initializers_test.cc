#include <cmath>

#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_vector<float>(DType::kFloat, std::move(shape), values);
}

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_dedup_initializers_pass(), model, std::move(context));
}

// y = Sum(x, c_0, ..., c_n) over the given initializers.
Model sum_of(std::vector<Tensor> constants) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2}));
  std::vector<Value*> inputs{x};
  for (size_t i = 0; i < constants.size(); ++i) {
    const std::string name{'c', static_cast<char>('0' + i)};
    inputs.push_back(g.add_initializer(name, constants[i]));
  }
  Node* sum = g.add_node("Sum", inputs, {"y"});
  g.add_output(sum->output(0));
  return model;
}

TEST(DedupInitializers, IdenticalContentsMergeIntoTheFirst) {
  Model model =
      sum_of({floats({2}, {1, 2}), floats({2}, {3, 4}), floats({2}, {1, 2}), floats({2}, {1, 2})});
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  const Graph& g = model.graph();
  ASSERT_EQ(g.initializers().size(), 2u);
  EXPECT_EQ(g.initializers()[0]->name(), "c0");
  EXPECT_EQ(g.initializers()[1]->name(), "c1");
  const Node* sum = g.nodes()[0];
  EXPECT_EQ(sum->input(3)->name(), "c0");
  EXPECT_EQ(sum->input(4)->name(), "c0");
  EXPECT_EQ(g.find_value("c2"), nullptr);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_EQ(run_pass(model), 0u);
}

TEST(DedupInitializers, DtypeAndShapeMatterNotJustBytes) {
  // The same 8 bytes as float[2], int32[2] and float[1,2].
  Model model = empty_model();
  Graph& g = model.graph();
  Value* a = g.add_initializer("a", floats({2}, {0, 0}));
  Value* b = g.add_initializer("b", Tensor::from_vector<int32_t>(DType::kInt32, {2}, {0, 0}));
  Value* c = g.add_initializer("c", floats({1, 2}, {0, 0}));
  Value* x = g.add_input("x", float_type({2}));
  Node* cast = g.add_node("Cast", {b}, {"bf"});
  set_int(cast, "to", static_cast<int64_t>(DType::kFloat));
  Node* sum = g.add_node("Sum", {x, a, cast->output(0), c}, {"y"});
  g.add_output(sum->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.initializers().size(), 3u);
}

TEST(DedupInitializers, NaNsWithTheSameBitsAreEqualAndSignedZerosAreNot) {
  const float nan = std::nanf("");
  Model model = sum_of({floats({2}, {nan, 1}), floats({2}, {nan, 1}), floats({2}, {0.0f, 1}),
                        floats({2}, {-0.0f, 1})});
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(model.graph().initializers().size(), 3u);
  EXPECT_EQ(model.graph().find_value("c1"), nullptr);
  EXPECT_NE(model.graph().find_value("c3"), nullptr);
}

TEST(DedupInitializers, GraphInputsAndOutputsAreNeverMerged) {
  Model model = sum_of({floats({2}, {1, 2}), floats({2}, {1, 2}), floats({2}, {1, 2})});
  Graph& g = model.graph();
  // c0 is an overridable default and c2 is also returned: c1, the only plain one, has
  // nothing to merge with.
  g.add_input(g.find_value("c0"));
  g.add_output(g.find_value("c2"));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.initializers().size(), 3u);
  // A fourth copy merges with c1, the first plain one.
  Value* c3 = g.add_initializer("c3", floats({2}, {1, 2}));
  Node* neg = g.add_node("Neg", {c3}, {"n"});
  g.add_output(neg->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(neg->input(0)->name(), "c1");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(DedupInitializers, MutableInitializersAreLeftAlone) {
  Model model = sum_of({floats({2}, {1, 2}), floats({2}, {1, 2})});
  PassContext context;
  context.mutable_initializers = true;
  EXPECT_EQ(run_pass(model, context), 0u);
}

TEST(DedupInitializers, StringsAndSubgraphReaders) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* s1 = g.add_initializer("s1", Tensor::from_strings({2}, {"a", "b"}));
  Value* s2 = g.add_initializer("s2", Tensor::from_strings({2}, {"a", "b"}));
  Value* s3 = g.add_initializer("s3", Tensor::from_strings({2}, {"a", "c"}));
  Value* f1 = g.add_initializer("f1", floats({2}, {5, 6}));
  Value* f2 = g.add_initializer("f2", floats({2}, {5, 6}));
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  Node* concat = g.add_node("Concat", {s1, s2, s3}, {"s"});
  set_int(concat, "axis", 0);
  g.add_output(concat->output(0));
  // f2 is read only inside a branch.
  auto then_branch = std::make_unique<Graph>(&g);
  Node* inner = then_branch->add_node("Neg", {f2}, {"then_out"});
  then_branch->add_output(inner->output(0));
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(else_branch->add_node("Abs", {f1}, {"else_out"})->output(0));
  Node* if_node = g.add_node("If", {cond}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  EXPECT_EQ(concat->input(1), s1);
  EXPECT_EQ(concat->input(2), s3);
  EXPECT_EQ(inner->input(0), f1);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(DedupInitializers, InitializerReturnedBySubgraphStays) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* f1 = g.add_initializer("f1", floats({2}, {5, 6}));
  Value* f2 = g.add_initializer("f2", floats({2}, {5, 6}));
  Value* cond = g.add_input("cond", ValueType::tensor(DType::kBool, std::vector<Dim>{}));
  auto then_branch = std::make_unique<Graph>(&g);
  then_branch->add_output(f2);
  auto else_branch = std::make_unique<Graph>(&g);
  else_branch->add_output(f1);
  Node* if_node = g.add_node("If", {cond}, {"y"});
  if_node->set_attribute(graph_attribute("then_branch", std::move(then_branch)));
  if_node->set_attribute(graph_attribute("else_branch", std::move(else_branch)));
  g.add_output(if_node->output(0));
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(g.initializers().size(), 2u);
}

TEST(DedupInitializers, LargeAndManyTensors) {
  Model model = empty_model();
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({1000}));
  Value* current = x;
  for (int i = 0; i < 200; ++i) {
    // Ten distinct contents, twenty copies each; one element differs between them.
    std::vector<float> data(1000, 1.0f);
    data[999] = static_cast<float>(i % 10);
    Value* c = g.add_initializer(numbered('w', i), floats({1000}, data));
    current = g.add_node("Add", {current, c}, {numbered('a', i)})->output(0);
  }
  g.add_output(current);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 190u);
  EXPECT_EQ(g.initializers().size(), 10u);
  EXPECT_TRUE(same_outputs(before, model));
}

}  // namespace
}  // namespace onnxkit
