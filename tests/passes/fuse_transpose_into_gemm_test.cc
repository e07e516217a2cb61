#include "pass_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct Options {
  bool transpose_a = true;
  bool transpose_b = false;
  int64_t trans_a = 0;  // the Gemm's own flags
  int64_t trans_b = 0;
  bool with_perm = true;
};

// Gemm(Transpose(a)?, Transpose(b)?, c) -> y, shapes chosen so that every flag combination
// computes a [3, 5] product.
Model gemm_model(const Options& o) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  // The Gemm reads A as [3, 4] (after its own transA) and B as [4, 5].
  const bool a_rows_first = (o.trans_a != 0) == o.transpose_a;  // a is [3, 4]
  const bool b_rows_first = (o.trans_b != 0) == o.transpose_b;  // b is [4, 5]
  Value* a = g.add_input(
      "a", float_type(a_rows_first ? std::vector<int64_t>{3, 4} : std::vector<int64_t>{4, 3}));
  Value* b = g.add_initializer("b", random_floats(b_rows_first ? Shape{4, 5} : Shape{5, 4}, 1));
  Value* c = g.add_initializer("c", random_floats({5}, 2));
  auto transposed = [&](Value* v, const std::string& name) {
    Node* t = g.add_node("Transpose", {v}, {name}, "", name);
    if (o.with_perm) set_ints(t, "perm", {1, 0});
    return t->output(0);
  };
  if (o.transpose_a) a = transposed(a, "at");
  if (o.transpose_b) b = transposed(b, "bt");
  Node* gemm = g.add_node("Gemm", {a, b, c}, {"y"}, "", "gemm");
  if (o.trans_a) gemm->set_attribute(int_attribute("transA", 1));
  if (o.trans_b) gemm->set_attribute(int_attribute("transB", 1));
  g.add_output(gemm->output(0));
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_transpose_into_gemm_pass(), model);
}

int64_t flag(const Model& model, const char* name) {
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() != "Gemm") continue;
    const Attribute* a = node->find_attribute(name);
    return a ? a->i : 0;
  }
  return -1;
}

TEST(FuseTransposeIntoGemm, TogglesTransAAndTransB) {
  for (int combo = 0; combo < 8; ++combo) {
    Options o;
    o.transpose_a = combo & 1;
    o.transpose_b = !o.transpose_a || (combo & 2);
    o.trans_a = (combo >> 2) & 1;
    o.trans_b = (combo >> 1) & 1;
    SCOPED_TRACE(combo);
    Model model = gemm_model(o);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), size_t{o.transpose_a} + size_t{o.transpose_b});
    EXPECT_EQ(count_ops(model, "Transpose"), 0u);
    EXPECT_EQ(flag(model, "transA"), o.trans_a ^ int64_t{o.transpose_a});
    EXPECT_EQ(flag(model, "transB"), o.trans_b ^ int64_t{o.transpose_b});
    EXPECT_TRUE(same_outputs(before, model));
  }
}

TEST(FuseTransposeIntoGemm, DefaultPermOfAMatrix) {
  Options o;
  o.with_perm = false;
  Model model = gemm_model(o);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(flag(model, "transA"), 1);
  EXPECT_TRUE(same_outputs(before, model));
  // Without perm and without a known rank, the Transpose may be anything.
  Model unknown = gemm_model(o);
  unknown.graph().find_value("a")->set_type(ValueType::tensor(DType::kFloat));
  EXPECT_EQ(run_pass(unknown), 0u);
}

TEST(FuseTransposeIntoGemm, NegativeCases) {
  {  // the transposed value has a second reader
    Model model = gemm_model({});
    Graph& g = model.graph();
    g.add_output(g.add_node("Relu", {g.find_value("at")}, {"r"})->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // the transposed value is a graph output
    Model model = gemm_model({});
    model.graph().add_output(model.graph().find_value("at"));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a Transpose feeding C
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* a = g.add_input("a", float_type({3, 3}));
    Node* t = g.add_node("Transpose", {g.add_input("c", float_type({3, 3}))}, {"ct"});
    set_ints(t, "perm", {1, 0});
    g.add_output(g.add_node("Gemm", {a, a, t->output(0)}, {"y"})->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // an identity perm is no transpose
    Model model = gemm_model({});
    set_ints(model.graph().find_value("at")->producer(), "perm", {0, 1});
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // not a Gemm
    Model model = empty_model(13);
    Graph& g = model.graph();
    Node* t = g.add_node("Transpose", {g.add_input("a", float_type({3, 4}))}, {"at"});
    set_ints(t, "perm", {1, 0});
    g.add_output(g.add_node("MatMul", {t->output(0), g.add_input("b", float_type({3, 2}))}, {"y"})
                     ->output(0));
    EXPECT_EQ(run_pass(model), 0u);
  }
}

}  // namespace
}  // namespace onnxkit
