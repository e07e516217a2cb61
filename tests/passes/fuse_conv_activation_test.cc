#include <functional>

#include "linear_fusion_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// x [2, 3, 6, 6] -> Conv(W [4, 3, 3, 3], B, pads 1) "conv" -> tail; types inferred.
Model conv_model(const Tail& tail, int64_t opset = 14) {
  Model model = empty_model(opset);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({2, 3, 6, 6}));
  Node* conv = g.add_node("Conv",
                          {x, g.add_initializer("W", random_floats({4, 3, 3, 3}, 1)),
                           g.add_initializer("B", random_floats({4}, 2))},
                          {"c"}, "", "conv");
  set_ints(conv, "pads", {1, 1, 1, 1});
  g.add_output(tail(model, conv->output(0)));
  infer(model);
  return model;
}

size_t run_pass(Model& model, PassContext context = {}) {
  return apply_pass(*make_fuse_conv_activation_pass(), model, std::move(context));
}

Node* named(Graph& g, const std::string& type, std::vector<Value*> inputs,
            const std::string& name) {
  return g.add_node(type, std::move(inputs), {g.unique_name(name + "_out")}, "", name);
}

// Runs the pass and checks one FusedConv producing the graph output with `activation`.
const Node* expect_fused(Model& model, const std::string& activation,
                         std::vector<float> params = {}, size_t changes = 1) {
  Model before = copy_model(model);
  const std::string output = model.graph().outputs()[0]->name();
  EXPECT_EQ(run_pass(model), changes);
  const Node* fused = only_node(model, "FusedConv");
  EXPECT_TRUE(fused);
  if (!fused) return nullptr;
  EXPECT_EQ(fused->domain(), kOnnxkitDomain);
  EXPECT_EQ(count_ops(model, "Conv"), 0u);
  EXPECT_EQ(fused->output(0)->name(), output) << "the output value stays";
  EXPECT_EQ(string_attribute_of(fused, "activation"), activation);
  EXPECT_EQ(floats_attribute_of(fused, "activation_params"), params);
  const Attribute* pads = fused->find_attribute("pads");
  EXPECT_TRUE(pads && pads->ints == std::vector<int64_t>({1, 1, 1, 1})) << "Conv's attributes";
  EXPECT_TRUE(imports_onnxkit(model));
  EXPECT_TRUE(same_outputs(before, model));
  return fused;
}

TEST(FuseConvActivation, EachActivation) {
  struct Case {
    std::string op;
    std::function<void(Node*)> attrs;
    std::string activation;
    std::vector<float> params;
  };
  const std::vector<Case> cases = {
      {"Relu", {}, "Relu", {}},
      {"Sigmoid", {}, "Sigmoid", {}},
      {"Tanh", {}, "Tanh", {}},
      {"HardSwish", {}, "HardSwish", {}},
      {"LeakyRelu", [](Node* n) { set_float(n, "alpha", 0.3f); }, "LeakyRelu", {0.3f}},
      {"LeakyRelu", {}, "LeakyRelu", {0.01f}},
      {"HardSigmoid",
       [](Node* n) {
         set_float(n, "alpha", 0.25f);
         set_float(n, "beta", 0.4f);
       },
       "HardSigmoid",
       {0.25f, 0.4f}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    Model model = conv_model([&](Model& m, Value* y) {
      Node* act = named(m.graph(), c.op, {y}, "act");
      if (c.attrs) c.attrs(act);
      return act->output(0);
    });
    const Node* fused = expect_fused(model, c.activation, c.params);
    if (fused) {
      EXPECT_EQ(fused->name(), "conv+act");
    }
  }
}

TEST(FuseConvActivation, ClipBoundsFromInputsOrAttributes) {
  {  // opset 11+: constant inputs, either may be omitted
    Model model = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      return add_op(g, "Clip", {y, float_scalar(g, 0.0f), float_scalar(g, 6.0f)});
    });
    expect_fused(model, "Clip", {0.0f, 6.0f});
    Model upper_only = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      return add_op(g, "Clip", {y, nullptr, float_scalar(g, 6.0f)});
    });
    expect_fused(upper_only, "Clip", {std::numeric_limits<float>::lowest(), 6.0f});
  }
  {  // before opset 11: attributes
    Model model = conv_model(
        [](Model& m, Value* y) {
          Node* clip = m.graph().add_node("Clip", {y}, {"r"});
          set_float(clip, "min", -1.0f);
          set_float(clip, "max", 1.0f);
          return clip->output(0);
        },
        10);
    expect_fused(model, "Clip", {-1.0f, 1.0f});
  }
  {  // a computed bound stays a Clip
    Model model = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* lo = g.add_input("lo", ValueType::tensor(DType::kFloat, std::vector<Dim>{}));
      return add_op(g, "Clip", {y, lo});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseConvActivation, SiluInBothOperandOrders) {
  for (bool sigmoid_first : {false, true}) {
    SCOPED_TRACE(sigmoid_first);
    Model model = conv_model([&](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* s = add_op(g, "Sigmoid", {y});
      return sigmoid_first ? add_op(g, "Mul", {s, y}) : add_op(g, "Mul", {y, s});
    });
    expect_fused(model, "Silu");
    EXPECT_EQ(count_ops(model, "Sigmoid"), 0u);
    EXPECT_EQ(count_ops(model, "Mul"), 0u);
  }
  {  // a Sigmoid read elsewhere too is no Silu
    Model model = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* s = add_op(g, "Sigmoid", {y});
      g.add_output(s);
      return add_op(g, "Mul", {y, s});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // x * Sigmoid(other) is no Silu
    Model model = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* s = add_op(g, "Sigmoid", {g.find_value("x")});
      return add_op(g, "Mul", {y, add_op(g, "ReduceMean", {s})});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseConvActivation, HardSwishAsPaddleWritesIt) {
  // x * Clip(x + 3, 0, 6) / 6 at opset 11 (rapidocr's PP-OCR nets), the Mul's operands either
  // way, / 6 also as * (1/6).
  for (bool clip_first : {false, true}) {
    for (bool times_sixth : {false, true}) {
      SCOPED_TRACE(std::to_string(clip_first) + std::to_string(times_sixth));
      Model model = conv_model(
          [&](Model& m, Value* y) {
            Graph& g = m.graph();
            Value* shifted = add_op(g, "Add", {y, float_scalar(g, 3.0f)});
            Value* gate =
                add_op(g, "Clip", {shifted, float_scalar(g, 0.0f), float_scalar(g, 6.0f)});
            Value* product = clip_first ? add_op(g, "Mul", {gate, y}) : add_op(g, "Mul", {y, gate});
            return times_sixth ? add_op(g, "Mul", {product, float_scalar(g, 1.0f / 6.0f)})
                               : add_op(g, "Div", {product, float_scalar(g, 6.0f)});
          },
          11);
      expect_fused(model, "HardSwish");
      for (const char* op : {"Add", "Clip", "Mul", "Div"}) EXPECT_EQ(count_ops(model, op), 0u);
    }
  }
  {  // Clip(x + 3, 0, 5): no HardSwish (a plain Clip is not fused either: Add comes first)
    Model model = conv_model(
        [](Model& m, Value* y) {
          Graph& g = m.graph();
          Value* shifted = add_op(g, "Add", {y, float_scalar(g, 3.0f)});
          Value* gate = add_op(g, "Clip", {shifted, float_scalar(g, 0.0f), float_scalar(g, 5.0f)});
          return add_op(g, "Div", {add_op(g, "Mul", {y, gate}), float_scalar(g, 6.0f)});
        },
        11);
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // 6 / (x * gate) is no scaling
    Model model = conv_model(
        [](Model& m, Value* y) {
          Graph& g = m.graph();
          Value* shifted = add_op(g, "Add", {y, float_scalar(g, 3.0f)});
          Value* gate = add_op(g, "Clip", {shifted, float_scalar(g, 0.0f), float_scalar(g, 6.0f)});
          return add_op(g, "Div", {float_scalar(g, 6.0f), add_op(g, "Mul", {y, gate})});
        },
        11);
    EXPECT_EQ(run_pass(model), 0u);
  }
}

TEST(FuseConvActivation, OnnxkitGelu) {
  for (std::string approximate : {"none", "tanh"}) {
    SCOPED_TRACE(approximate);
    Model model = conv_model(
        [&](Model& m, Value* y) { return testing::add_onnxkit_gelu(m, y, approximate); });
    Model reference = testing::expand_gelu(model);
    EXPECT_EQ(run_pass(model), 1u);
    const Node* fused = only_node(model, "FusedConv");
    ASSERT_TRUE(fused);
    EXPECT_EQ(string_attribute_of(fused, "activation"),
              approximate == "none" ? "Gelu" : "GeluTanh");
    EXPECT_EQ(count_ops(model, "Gelu"), 0u);
    EXPECT_TRUE(same_outputs(reference, model));
  }
}

TEST(FuseConvActivation, ResidualAddThenActivation) {
  for (bool conv_first : {true, false}) {
    SCOPED_TRACE(conv_first);
    Model model = conv_model([&](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* z = g.add_input("z", float_type({2, 4, 6, 6}));
      Node* add = named(g, "Add", conv_first ? std::vector{y, z} : std::vector{z, y}, "add");
      return named(g, "Relu", {add->output(0)}, "relu")->output(0);
    });
    const Node* fused = expect_fused(model, "Relu", {}, 2);
    ASSERT_TRUE(fused);
    ASSERT_EQ(fused->inputs().size(), 4u);
    EXPECT_EQ(fused->input(3)->name(), "z");
    EXPECT_EQ(fused->input(2)->name(), "B");
    EXPECT_EQ(fused->name(), "conv+add+relu");
    EXPECT_EQ(count_ops(model, "Add"), 0u);
  }
}

TEST(FuseConvActivation, ResidualWithoutActivation) {
  Model model = conv_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    return add_op(g, "Add", {y, g.add_input("z", float_type({2, 4, 6, 6}))});
  });
  expect_fused(model, "");
}

// ResNet's downsampling block: Add(conv_a, conv_b) -> Relu. One Conv takes the other's
// output as Z.
TEST(FuseConvActivation, TwoConvBranches) {
  Model model = conv_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    Node* other = g.add_node(
        "Conv", {g.find_value("x"), g.add_initializer("W2", random_floats({4, 3, 1, 1}))}, {"c2"},
        "", "down");
    return add_op(g, "Relu", {add_op(g, "Add", {y, other->output(0)})});
  });
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  EXPECT_EQ(count_ops(model, "FusedConv"), 1u);
  EXPECT_EQ(count_ops(model, "Conv"), 1u);
  EXPECT_EQ(count_ops(model, "Add") + count_ops(model, "Relu"), 0u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseConvActivation, AddsThatAreNoResidual) {
  // Broadcasting adds, another shape, an unknown shape: left alone.
  for (const ValueType& type : {float_type({1, 4, 1, 1}), float_type({2, 4, 6, 1}),
                                float_type({-1, 4, 6, 6}), ValueType::tensor(DType::kFloat)}) {
    Model model = conv_model([&](Model& m, Value* y) {
      Graph& g = m.graph();
      return add_op(g, "Relu", {add_op(g, "Add", {y, g.add_input("z", type)})});
    });
    Model before = copy_model(model);
    // The Relu after the Add is not the Conv's: nothing to fuse.
    EXPECT_EQ(run_pass(model), 0u) << symbolic_shape_to_string(type.shape);
  }
}

TEST(FuseConvActivation, FusedConvTakesOneResidual) {
  Model model = conv_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    Value* first = add_op(g, "Add", {y, g.add_input("z1", float_type({2, 4, 6, 6}))});
    return add_op(g, "Add", {first, g.add_input("z2", float_type({2, 4, 6, 6}))});
  });
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "FusedConv"), 1u);
  EXPECT_EQ(count_ops(model, "Add"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
  EXPECT_EQ(run_pass(model), 0u) << "a second pass changes nothing";
}

TEST(FuseConvActivation, NothingFollowsTheActivation) {
  Model model = conv_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    Value* r = add_op(g, "Relu", {y});
    return add_op(g, "Sigmoid",
                  {add_op(g, "Add", {r, g.add_input("z", float_type({2, 4, 6, 6}))})});
  });
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  EXPECT_EQ(count_ops(model, "Add"), 1u);
  EXPECT_EQ(count_ops(model, "Sigmoid"), 1u);
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseConvActivation, PerChannelConstantGoesIntoTheBias) {
  // FusedConv + Add([C,1,1] constant): B' = B + c (a plain Conv is fuse_conv_add's job).
  Model model = conv_model([](Model& m, Value* y) {
    Graph& g = m.graph();
    Value* z = add_op(g, "Add", {y, g.add_input("z", float_type({2, 4, 6, 6}))});
    return add_op(g, "Add", {z, g.add_initializer("shift", random_floats({4, 1, 1}, 7))});
  });
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 2u);
  const Node* fused = only_node(model, "FusedConv");
  ASSERT_TRUE(fused);
  EXPECT_EQ(count_ops(model, "Add"), 0u);
  EXPECT_NE(fused->input(2)->name(), "B");
  EXPECT_TRUE(same_outputs(before, model));
}

TEST(FuseConvActivation, IntermediatesThatMustStay) {
  {  // a second reader
    Model model = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      g.add_output(add_op(g, "Neg", {y}));
      return add_op(g, "Relu", {y});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // a graph output
    Model model = conv_model([](Model& m, Value* y) {
      m.graph().add_output(y);
      return add_op(m.graph(), "Relu", {y});
    });
    EXPECT_EQ(run_pass(model), 0u);
  }
  {  // kept by the user
    Model model = conv_model([](Model& m, Value* y) { return add_op(m.graph(), "Relu", {y}); });
    PassContext context;
    context.keep_values = {"c"};
    EXPECT_EQ(run_pass(model, context), 0u);
  }
  {  // the residual's intermediate read twice
    Model model = conv_model([](Model& m, Value* y) {
      Graph& g = m.graph();
      Value* sum = add_op(g, "Add", {y, g.add_input("z", float_type({2, 4, 6, 6}))});
      g.add_output(sum);
      return add_op(g, "Relu", {sum});
    });
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u) << "the Add joins, the Relu cannot";
    EXPECT_EQ(count_ops(model, "Relu"), 1u);
    EXPECT_TRUE(same_outputs(before, model));
  }
}

TEST(FuseConvActivation, NonFloatAndOtherOpsAreLeftAlone) {
  Model model = conv_model([](Model& m, Value* y) { return add_op(m.graph(), "Elu", {y}); });
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_FALSE(imports_onnxkit(model));
}

}  // namespace
}  // namespace onnxkit
