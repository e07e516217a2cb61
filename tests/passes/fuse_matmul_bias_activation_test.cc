#include <functional>

#include "linear_fusion_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// x [2, 5, 8] -> MatMul(W [8, 6]) "mm" -> tail; types inferred.
Model matmul_model(const Tail& tail, int64_t opset = 14) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 5, 8}));
  Node* mm =
      g.add_node("MatMul", {x, g.add_initializer("W", random_floats({8, 6}, 1))}, {"p"}, "", "mm");
  g.add_output(tail(model, mm->output(0)));
  infer(model);
  return model;
}

// A [4, 8] -> Gemm(B, C?) "gemm" with attributes -> tail.
Model gemm_model(bool trans_b, float alpha, float beta, Value* (*c)(Graph&), const Tail& tail) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* a = g.add_input("a", float_type({4, 8}));
  std::vector<Value*> inputs{
      a, g.add_initializer("B", random_floats(trans_b ? Shape{6, 8} : Shape{8, 6}, 1))};
  if (c) inputs.push_back(c(g));
  Node* gemm = g.add_node("Gemm", inputs, {"p"}, "", "gemm");
  if (trans_b) set_int(gemm, "transB", 1);
  if (alpha != 1.0f) set_float(gemm, "alpha", alpha);
  if (beta != 1.0f) set_float(gemm, "beta", beta);
  g.add_output(tail(model, gemm->output(0)));
  infer(model);
  return model;
}

Value* identity_tail(Model&, Value* y) {
  return y;
}

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_fuse_matmul_bias_activation_pass(), model, std::move(context));
}

// `gives_output`: the FusedMatMul produces the graph output (not so when a Reshape follows).
const Node* expect_fused(Model& model, size_t changes, const Model* reference = nullptr,
                         bool gives_output = true) {
  Model before = reference ? copy_model(*reference) : copy_model(model);
  const std::string output = model.graph().outputs()[0]->name();
  EXPECT_EQ(run_pass(model), changes);
  const Node* fused = only_node(model, "FusedMatMul");
  EXPECT_TRUE(fused);
  if (!fused) return nullptr;
  EXPECT_EQ(fused->domain(), kOnnxkitDomain);
  EXPECT_EQ(count_ops(model, "MatMul") + count_ops(model, "Gemm"), 0u);
  if (gives_output) {
    EXPECT_EQ(fused->output(0)->name(), output) << "the output value stays";
  } else {
    EXPECT_TRUE(model.graph().find_value(output)) << "the output value stays";
  }
  EXPECT_TRUE(imports_onnxkit(model));
  EXPECT_TRUE(same_outputs(before, model));
  return fused;
}

TEST(FuseMatMulBiasActivation, BiasRows) {
  for (const Shape& shape : {Shape{6}, Shape{1, 6}, Shape{1, 1, 6}, Shape{}, Shape{1}}) {
    for (bool bias_first : {false, true}) {
      SCOPED_TRACE(shape_to_string(shape) + (bias_first ? " bias first" : ""));
      Model model = matmul_model([&](Model& m, Value* y) {
        Graph& g = m.graph();
        Value* bias = g.add_initializer("bias", random_floats(shape, 2));
        return bias_first ? add_op(g, "Add", {bias, y}) : add_op(g, "Add", {y, bias});
      });
      const Node* fused = expect_fused(model, 1);
      ASSERT_TRUE(fused);
      ASSERT_TRUE(fused->input(2));
      EXPECT_EQ(fused->input(2)->initializer().shape(), Shape{6});
      EXPECT_EQ(fused->input(2)->name() == "bias", shape == Shape{6}) << "[N] is used as is";
      EXPECT_EQ(model.graph().find_value("bias") != nullptr, shape == Shape{6})
          << "a replaced bias goes";
      EXPECT_FALSE(fused->find_attribute("activation"));
      EXPECT_EQ(count_ops(model, "Add"), 0u);
    }
  }
}

TEST(FuseMatMulBiasActivation, AddsThatAreNoBias) {
  for (const Shape& shape : {Shape{5, 6}, Shape{2, 1, 6}, Shape{1, 1, 1, 6}, Shape{6, 1}}) {
    SCOPED_TRACE(shape_to_string(shape));
    Model model = matmul_model([&](Model& m, Value* y) {
      Graph& g = m.graph();
      return add_op(g, "Add", {y, g.add_initializer("bias", random_floats(shape, 2))});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a computed bias
    Model model = matmul_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      return add_op(g, "Add", {y, g.add_input("bias", float_type({6}))});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseMatMulBiasActivation, BiasThenActivation) {
  Model model = matmul_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    Node* add =
        g.add_node("Add", {y, g.add_initializer("bias", random_floats({6}, 2))}, {"s"}, "", "add");
    Node* act = g.add_node("LeakyRelu", {add->output(0)}, {"r"}, "", "act");
    set_float(act, "alpha", 0.2f);
    return act->output(0);
  });
  const Node* fused = expect_fused(model, 2);
  ASSERT_TRUE(fused);
  EXPECT_EQ(string_attribute_of(fused, "activation"), "LeakyRelu");
  EXPECT_EQ(floats_attribute_of(fused, "activation_params"), std::vector<float>{0.2f});
  EXPECT_EQ(fused->name(), "mm+add+act");
}

TEST(FuseMatMulBiasActivation, ActivationWithoutBias) {
  for (std::string op : {"Relu", "Tanh", "Sigmoid", "HardSwish"}) {
    Model model = matmul_model([&](Model& m, Value* y) { return add_op(m.graph(), op, {y}); });
    const Node* fused = expect_fused(model, 1);
    ASSERT_TRUE(fused);
    EXPECT_EQ(string_attribute_of(fused, "activation"), op);
    EXPECT_EQ(fused->inputs().size(), 2u);
  }
  {  // Silu
    Model model = matmul_model([](Model& m, Value* y) {
      return add_op(m.graph(), "Mul", {add_op(m.graph(), "Sigmoid", {y}), y});
    });
    const Node* fused = expect_fused(model, 1);
    ASSERT_TRUE(fused);
    EXPECT_EQ(string_attribute_of(fused, "activation"), "Silu");
  }
}

TEST(FuseMatMulBiasActivation, BiasThenGelu) {
  for (std::string approximate : {"none", "tanh"}) {
    Model model = matmul_model([&](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* s = add_op(g, "Add", {y, g.add_initializer("bias", random_floats({6}, 2))});
      return testing::add_onnxkit_gelu(m, s, approximate);
    });
    Model reference = testing::expand_gelu(model);
    const Node* fused = expect_fused(model, 2, &reference);
    ASSERT_TRUE(fused);
    EXPECT_EQ(string_attribute_of(fused, "activation"),
              approximate == "none" ? "Gelu" : "GeluTanh");
  }
}

TEST(FuseMatMulBiasActivation, ActivationAfterAReshape) {
  // Gemm -> Reshape -> activation (GPT-2's Conv1D): the activation joins, the Reshape stays.
  for (std::string op : {"Relu", "Silu", "Gelu"}) {
    SCOPED_TRACE(op);
    Model model = gemm_model(
        false, 1.0f, 1.0f, [](Graph& g) { return g.add_initializer("C", random_floats({6}, 3)); },
        [&](Model& m, Value* y) {
          Graph& g = m.graph();
          Tensor shape(DType::kInt64, Shape{3});
          int64_t* dims = shape.mutable_data<int64_t>();
          dims[0] = 2;
          dims[1] = 2;
          dims[2] = 6;
          Value* r = add_op(g, "Reshape", {y, g.add_initializer("shape", std::move(shape))});
          if (op == "Gelu") return testing::add_onnxkit_gelu(m, r, "none");
          if (op == "Silu") return add_op(g, "Mul", {r, add_op(g, "Sigmoid", {r})});
          return add_op(g, op, {r});
        });
    Model reference = testing::expand_gelu(model);
    const Node* fused = expect_fused(model, 2, &reference, /*gives_output=*/false);
    ASSERT_TRUE(fused);
    EXPECT_EQ(string_attribute_of(fused, "activation"), op);
    const Node* reshape = only_node(model, "Reshape");
    ASSERT_TRUE(reshape);
    EXPECT_EQ(reshape->input(0), fused->output(0));
    EXPECT_TRUE(model.graph().is_output(reshape->output(0)));
    EXPECT_EQ(model.graph().nodes().size(), 2u);
  }
  {  // the reshaped product read twice: nothing moves
    Model model = matmul_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* r = add_op(g, "Flatten", {y});
      g.add_output(add_op(g, "Neg", {r}));
      return add_op(g, "Relu", {r});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseMatMulBiasActivation, NothingAfterTheActivation) {
  Model model = matmul_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    Value* r = add_op(g, "Relu", {y});
    return add_op(g, "Add", {r, g.add_initializer("bias", random_floats({6}, 2))});
  });
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Add"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseMatMulBiasActivation, IntermediatesThatMustStay) {
  {
    Model model = matmul_model([](Model& m, Value* y) {
      m.graph().add_output(y);
      return add_op(m.graph(), "Relu", {y});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
  {
    Model model = matmul_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      g.add_output(add_op(g, "Neg", {y}));
      return add_op(g, "Add", {y, g.add_initializer("bias", random_floats({6}, 2))});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // integer products are not FusedMatMul's
    Model model = empty_model(13);
    Graph& g = model.graph();
    Value* x = g.add_input(
        "x", ValueType::tensor(DType::kInt32, std::vector<Dim>{Dim::known(2), Dim::known(3)}));
    Value* p = add_op(g, "MatMul", {x, x});
    g.add_output(add_op(g, "Relu", {p}));
    infer(model);
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseMatMulBiasActivation, GemmBecomesFusedMatMul) {
  struct Case {
    std::string what;
    bool trans_b;
    float alpha, beta;
    Value* (*c)(Graph&);
    bool c_kept;  // the Bias is C itself
  };
  const std::vector<Case> cases = {
      {"no C", false, 1.0f, 1.0f, nullptr, false},
      {"C [N]", true, 0.5f, 1.0f,
       [](Graph& g) { return g.add_initializer("C", random_floats({6}, 3)); }, true},
      {"C [1, N]", false, 1.0f, 1.0f,
       [](Graph& g) {
         return g.add_initializer("C", random_floats({1, 6}, 3));
       },
       false},
      {"C scalar, beta 2", true, 1.0f, 2.0f,
       [](Graph& g) { return g.add_initializer("C", random_floats({}, 3)); }, false},
      {"C [N], beta 3", false, 2.0f, 3.0f,
       [](Graph& g) { return g.add_initializer("C", random_floats({6}, 3)); }, false},
      {"computed C [N]", false, 1.0f, 1.0f,
       [](Graph& g) { return g.add_input("C", float_type({6})); }, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Model model = gemm_model(c.trans_b, c.alpha, c.beta, c.c, identity_tail);
    const Node* fused = expect_fused(model, 1);
    ASSERT_TRUE(fused);
    EXPECT_EQ(int_attr(fused, "trans_b", 0), c.trans_b ? 1 : 0);
    EXPECT_EQ(int_attr(fused, "trans_a", 0), 0);
    const Attribute* alpha = fused->find_attribute("alpha");
    EXPECT_EQ(alpha ? alpha->f : 1.0f, c.alpha);
    EXPECT_EQ(fused->inputs().size(), c.c ? 3u : 2u);
    if (c.c) {
      EXPECT_EQ(fused->input(2)->name() == "C", c.c_kept);
    }
  }
}

TEST(FuseMatMulBiasActivation, GemmThenActivation) {
  Model model = gemm_model(
      true, 1.0f, 1.0f, [](Graph& g) { return g.add_initializer("C", random_floats({6}, 3)); },
      [](Model& m, Value* y) { return add_op(m.graph(), "Relu", {y}); });
  const Node* fused = expect_fused(model, 2);
  ASSERT_TRUE(fused);
  EXPECT_EQ(string_attribute_of(fused, "activation"), "Relu");
}

TEST(FuseMatMulBiasActivation, GemmsLeftAlone) {
  // C that varies along M, a computed C that is scaled or not [N].
  std::vector<Value* (*)(Graph&)> cs = {
      [](Graph& g) {
        return g.add_initializer("C", random_floats({4, 6}, 3));
      },
      [](Graph& g) {
        return g.add_initializer("C", random_floats({4, 1}, 3));
      },
      [](Graph& g) {
        return g.add_input("C", float_type({1, 6}));
      },
  };
  for (auto c : cs) {
    Model model = gemm_model(false, 1.0f, 1.0f, c, identity_tail);
    EXPECT_EQ(run_pass(model), 0u);
  }
  Model scaled = gemm_model(
      false, 1.0f, 2.0f, [](Graph& g) { return g.add_input("C", float_type({6})); }, identity_tail);
  EXPECT_EQ(run_pass(scaled), 0u);
}

}  // namespace
}  // namespace onnxkit
