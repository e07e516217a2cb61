// FusedConv and FusedMatMul (com.onnxkit) against the unfused graphs of standard ops they
// stand for: Conv -> Add(Z) -> activation, and Transpose -> MatMul -> Mul(alpha) ->
// Add(Bias) -> activation, over many shapes, attributes and every activation.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "onnxkit/session.h"
#include "op_test_util.h"
#include "ops/fused_ops.h"
#include "runtime/compare.h"
#include "runtime/random_inputs.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

constexpr int64_t kOpset = 14;  // HardSwish needs 14

struct Activation {
  std::string name;  // "" for none
  std::vector<float> params;
};

const std::vector<Activation>& all_activations() {
  static const std::vector<Activation> list = {{"", {}},
                                               {"Relu", {}},
                                               {"LeakyRelu", {0.2f}},
                                               {"Clip", {-0.5f, 0.7f}},
                                               {"Sigmoid", {}},
                                               {"Tanh", {}},
                                               {"HardSigmoid", {0.3f, 0.4f}},
                                               {"HardSwish", {}},
                                               {"Silu", {}},
                                               {"Gelu", {}},
                                               {"GeluTanh", {}}};
  return list;
}

Value* scalar(Graph& g, DType dtype, double value) {
  Tensor t(dtype, Shape{});
  switch (dtype) {
    case DType::kDouble:
      t.mutable_data<double>()[0] = value;
      break;
    case DType::kFloat16:
      t.mutable_data<Float16>()[0] = Float16(static_cast<float>(value));
      break;
    default:
      t.mutable_data<float>()[0] = static_cast<float>(value);
  }
  return g.add_initializer(g.unique_name("c"), std::move(t));
}

Value* op(Graph& g, const std::string& type, std::vector<Value*> inputs) {
  return g.add_node(type, std::move(inputs), {g.unique_name(type)})->output(0);
}

// The activation written with standard ops (opset 14).
Value* unfused_activation(Graph& g, Value* x, const Activation& act, DType dtype) {
  const std::string& n = act.name;
  if (n.empty()) return x;
  if (n == "Relu" || n == "Sigmoid" || n == "Tanh" || n == "HardSwish") return op(g, n, {x});
  if (n == "LeakyRelu" || n == "HardSigmoid") {
    Node* node = g.add_node(n, {x}, {g.unique_name(n)});
    set_float(node, "alpha", act.params[0]);
    if (n == "HardSigmoid") set_float(node, "beta", act.params[1]);
    return node->output(0);
  }
  if (n == "Clip") {
    return op(g, "Clip", {x, scalar(g, dtype, act.params[0]), scalar(g, dtype, act.params[1])});
  }
  if (n == "Silu") return op(g, "Mul", {x, op(g, "Sigmoid", {x})});
  Value* half_x = op(g, "Mul", {x, scalar(g, dtype, 0.5)});
  if (n == "Gelu") {
    Value* e = op(g, "Erf", {op(g, "Div", {x, scalar(g, dtype, std::sqrt(2.0))})});
    return op(g, "Mul", {half_x, op(g, "Add", {e, scalar(g, dtype, 1.0)})});
  }
  // GeluTanh
  Value* cube = op(g, "Mul", {op(g, "Mul", {x, x}), x});
  Value* inner = op(g, "Add", {x, op(g, "Mul", {cube, scalar(g, dtype, 0.044715)})});
  Value* t = op(g, "Tanh", {op(g, "Mul", {inner, scalar(g, dtype, std::sqrt(2.0 / M_PI))})});
  return op(g, "Mul", {half_x, op(g, "Add", {t, scalar(g, dtype, 1.0)})});
}

void set_activation(Node* node, const Activation& act) {
  if (act.name.empty()) return;
  set_string(node, "activation", act.name);
  if (act.params.empty()) return;
  set_floats(node, "activation_params", act.params);
}

Model new_model(bool onnxkit) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", kOpset}};
  if (onnxkit) model.opset_imports.push_back({std::string(kOnnxkitDomain), 1});
  return model;
}

// Inputs "in0", "in1", ... (undefined tensors are skipped: omitted optional inputs).
std::vector<Value*> add_inputs(Graph& g, const std::vector<Tensor>& tensors) {
  std::vector<Value*> values;
  for (size_t i = 0; i < tensors.size(); ++i) {
    values.push_back(tensors[i].defined() ? g.add_input("in" + std::to_string(i),
                                                        ValueType::tensor(tensors[i].dtype()))
                                          : nullptr);
  }
  return values;
}

// Output 0 of `model`, its inputs "in0", "in1", ... fed from `tensors`.
Tensor first_output(Model model, const std::vector<Tensor>& tensors) {
  NamedValues feeds;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].defined()) feeds.emplace_back("in" + std::to_string(i), tensors[i]);
  }
  return run_model(std::move(model), feeds)[0].second.tensor();
}

::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double rtol) {
  Tolerance tolerance{rtol, 1e-6, /*scale_by_mean=*/true};
  Comparison c = compare_tensors(actual, expected, tolerance);
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << c.message;
}

Tensor random(DType dtype, const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return random_tensor(dtype, shape, rng);
}

// ---- FusedConv ------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;
  bool bias = true;
  bool residual = true;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  std::string auto_pad;
};

ConvCase conv_case(Shape x, Shape w, const std::function<void(ConvCase&)>& adjust = {}) {
  ConvCase c;
  c.x = std::move(x);
  c.w = std::move(w);
  if (adjust) adjust(c);
  return c;
}

void set_conv_attributes(Node* node, const ConvCase& c) {
  if (!c.strides.empty()) set_ints(node, "strides", c.strides);
  if (!c.pads.empty()) set_ints(node, "pads", c.pads);
  if (!c.dilations.empty()) set_ints(node, "dilations", c.dilations);
  if (c.group != 1) set_int(node, "group", c.group);
  if (!c.auto_pad.empty()) set_string(node, "auto_pad", c.auto_pad);
}

// The Conv output shape, by running the plain Conv once.
Shape conv_output_shape(const ConvCase& c, DType dtype) {
  Model model = new_model(false);
  Graph& g = model.graph();
  std::vector<Tensor> tensors{random(dtype, c.x, 1), random(dtype, c.w, 2)};
  std::vector<Value*> in = add_inputs(g, tensors);
  Node* conv = g.add_node("Conv", in, {"y"});
  set_conv_attributes(conv, c);
  g.add_output(conv->output(0));
  return first_output(std::move(model), tensors).shape();
}

void check_conv(const ConvCase& c, const Activation& act, DType dtype = DType::kFloat,
                double rtol = 1e-5) {
  SCOPED_TRACE("x " + shape_to_string(c.x) + " w " + shape_to_string(c.w) + " activation '" +
               act.name + "' " + std::string(dtype_name(dtype)));
  const Shape y_shape = conv_output_shape(c, dtype);
  std::vector<Tensor> tensors{random(dtype, c.x, 3), random(dtype, c.w, 4),
                              c.bias ? random(dtype, {c.w[0]}, 5) : Tensor(),
                              c.residual ? random(dtype, y_shape, 6) : Tensor()};

  Model fused = new_model(true);
  {
    Graph& g = fused.graph();
    Node* node = g.add_node("FusedConv", add_inputs(g, tensors), {"y"}, std::string(kOnnxkitDomain),
                            "fused");
    set_conv_attributes(node, c);
    set_activation(node, act);
    g.add_output(node->output(0));
  }
  Model unfused = new_model(false);
  {
    Graph& g = unfused.graph();
    std::vector<Value*> in = add_inputs(g, tensors);
    std::vector<Value*> conv_in{in[0], in[1]};
    if (in[2]) conv_in.push_back(in[2]);
    Node* conv = g.add_node("Conv", conv_in, {"conv"});
    set_conv_attributes(conv, c);
    Value* sum = in[3] ? op(g, "Add", {conv->output(0), in[3]}) : conv->output(0);
    g.add_output(unfused_activation(g, sum, act, dtype));
  }
  Tensor expected = first_output(std::move(unfused), tensors);
  Tensor actual = first_output(std::move(fused), tensors);
  EXPECT_EQ(actual.shape(), y_shape);
  EXPECT_TRUE(close(actual, expected, rtol));
}

TEST(FusedConv, EveryActivationWithAndWithoutResidual) {
  for (const Activation& act : all_activations()) {
    check_conv(conv_case({2, 3, 7, 6}, {4, 3, 3, 3},
                         [](ConvCase& c) {
                           c.pads = {1, 1, 1, 1};
                         }),
               act);
    check_conv(conv_case({1, 4, 5, 5}, {6, 4, 1, 1},
                         [](ConvCase& c) {
                           c.bias = false;
                           c.residual = false;
                         }),
               act);
  }
}

TEST(FusedConv, Geometries) {
  const Activation relu{"Relu", {}};
  const std::vector<ConvCase> cases = {
      conv_case({2, 3, 9, 8}, {5, 3, 3, 3},  // strides, asymmetric pads
                [](ConvCase& c) {
                  c.strides = {2, 2};
                  c.pads = {1, 0, 1, 2};
                }),
      conv_case({1, 4, 9, 9}, {4, 1, 3, 3},  // depthwise
                [](ConvCase& c) {
                  c.pads = {1, 1, 1, 1};
                  c.group = 4;
                }),
      conv_case({2, 6, 7, 7}, {4, 3, 3, 3},  // dilated groups, no bias
                [](ConvCase& c) {
                  c.bias = false;
                  c.pads = {2, 2, 2, 2};
                  c.dilations = {2, 2};
                  c.group = 2;
                }),
      conv_case({1, 3, 8, 7}, {5, 3, 3, 3},
                [](ConvCase& c) {
                  c.strides = {2, 2};
                  c.auto_pad = "SAME_UPPER";
                }),
      conv_case({3, 2, 11}, {4, 2, 3},  // 1-D
                [](ConvCase& c) {
                  c.strides = {2};
                  c.pads = {1, 1};
                }),
      conv_case({1, 2, 4, 5, 3}, {3, 2, 2, 3, 1}),  // 3-D
      conv_case({1, 5, 4, 4}, {7, 5, 1, 1}),        // 1x1
  };
  for (const ConvCase& c : cases) {
    check_conv(c, relu);
    check_conv(c, {"Silu", {}});
  }
}

TEST(FusedConv, OtherFloatTypes) {
  const ConvCase c = conv_case({2, 3, 6, 5}, {4, 3, 3, 3}, [](ConvCase& c) {
    c.pads = {1, 1, 1, 1};
  });
  check_conv(c, {"Clip", {0.0f, 6.0f}}, DType::kDouble, 1e-12);
  check_conv(c, {"HardSwish", {}}, DType::kFloat16, 1e-2);
}

TEST(FusedConv, DefaultActivationParams) {
  const ConvCase c = conv_case({1, 2, 5, 5}, {3, 2, 3, 3}, [](ConvCase& c) { c.residual = false; });
  // Absent params: the standalone op's defaults.
  Activation leaky{"LeakyRelu", {}};
  Activation hard{"HardSigmoid", {}};
  std::vector<Tensor> tensors{random(DType::kFloat, c.x, 1), random(DType::kFloat, c.w, 2),
                              random(DType::kFloat, {3}, 3)};
  for (auto [act, defaults] : {std::pair{leaky, Activation{"LeakyRelu", {0.01f}}},
                               std::pair{hard, Activation{"HardSigmoid", {0.2f, 0.5f}}}}) {
    Model a = new_model(true);
    Model b = new_model(true);
    for (auto [model, activation] : {std::pair{&a, act}, std::pair{&b, defaults}}) {
      Graph& g = model->graph();
      Node* node = g.add_node("FusedConv", add_inputs(g, tensors), {"y"},
                              std::string(kOnnxkitDomain), "fused");
      set_activation(node, activation);
      g.add_output(node->output(0));
    }
    EXPECT_TRUE(close(first_output(std::move(a), tensors), first_output(std::move(b), tensors), 0));
  }
}

TEST(FusedConv, ErrorsNameTheNode) {
  auto run = [](Shape z_shape, const std::string& activation, std::vector<float> params = {}) {
    std::vector<Tensor> tensors{random(DType::kFloat, {1, 2, 5, 5}, 1),
                                random(DType::kFloat, {3, 2, 3, 3}, 2), Tensor(),
                                random(DType::kFloat, z_shape, 3)};
    Model model = new_model(true);
    Graph& g = model.graph();
    Node* node =
        g.add_node("FusedConv", add_inputs(g, tensors), {"y"}, std::string(kOnnxkitDomain), "fc");
    set_activation(node, {activation, params});
    g.add_output(node->output(0));
    return first_output(std::move(model), tensors);
  };
  EXPECT_NO_THROW(run({1, 3, 3, 3}, "Relu"));
  try {
    run({1, 3, 3, 1}, "Relu");
    ADD_FAILURE() << "a Z of the wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fc'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Z"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run({1, 3, 3, 3}, "Elu"), Error);
  EXPECT_THROW(run({1, 3, 3, 3}, "LeakyRelu", {0.1f, 0.2f}), Error);
}

// ---- FusedMatMul ----------------------------------------------------------------------

struct MatMulCase {
  MatMulCase(Shape a_shape, Shape b_shape, bool transpose_a = false, bool transpose_b = false,
             float scale = 1.0f, bool with_bias = true)
      : a(std::move(a_shape)),
        b(std::move(b_shape)),
        trans_a(transpose_a),
        trans_b(transpose_b),
        alpha(scale),
        bias(with_bias) {}
  Shape a, b;  // as stored (already transposed when trans_*)
  bool trans_a;
  bool trans_b;
  float alpha;
  bool bias;
};

Value* transposed(Graph& g, Value* x, size_t rank) {
  Node* t = g.add_node("Transpose", {x}, {g.unique_name("t")});
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  set_ints(t, "perm", perm);
  return t->output(0);
}

// The product's shape, from a plain MatMul of the transposed operands.
Shape matmul_output_shape(const MatMulCase& c) {
  Model model = new_model(false);
  Graph& g = model.graph();
  std::vector<Tensor> tensors{random(DType::kFloat, c.a, 1), random(DType::kFloat, c.b, 2)};
  std::vector<Value*> in = add_inputs(g, tensors);
  Value* a = c.trans_a && c.a.size() >= 2 ? transposed(g, in[0], c.a.size()) : in[0];
  Value* b = c.trans_b && c.b.size() >= 2 ? transposed(g, in[1], c.b.size()) : in[1];
  g.add_output(op(g, "MatMul", {a, b}));
  return first_output(std::move(model), tensors).shape();
}

void check_matmul(const MatMulCase& c, const Activation& act, DType dtype = DType::kFloat,
                  double rtol = 1e-5) {
  SCOPED_TRACE("a " + shape_to_string(c.a) + (c.trans_a ? "^T" : "") + " b " +
               shape_to_string(c.b) + (c.trans_b ? "^T" : "") + " alpha " +
               std::to_string(c.alpha) + " activation '" + act.name + "' " +
               std::string(dtype_name(dtype)));
  const Shape y_shape = matmul_output_shape(c);
  const int64_t last = y_shape.empty() ? 1 : y_shape.back();
  std::vector<Tensor> tensors{random(dtype, c.a, 3), random(dtype, c.b, 4),
                              c.bias ? random(dtype, {last}, 5) : Tensor()};
  Model fused = new_model(true);
  {
    Graph& g = fused.graph();
    Node* node = g.add_node("FusedMatMul", add_inputs(g, tensors), {"y"},
                            std::string(kOnnxkitDomain), "fused");
    if (c.trans_a) set_int(node, "trans_a", 1);
    if (c.trans_b) set_int(node, "trans_b", 1);
    if (c.alpha != 1.0f) set_float(node, "alpha", c.alpha);
    set_activation(node, act);
    g.add_output(node->output(0));
  }
  Model unfused = new_model(false);
  {
    Graph& g = unfused.graph();
    std::vector<Value*> in = add_inputs(g, tensors);
    Value* a = c.trans_a && c.a.size() >= 2 ? transposed(g, in[0], c.a.size()) : in[0];
    Value* b = c.trans_b && c.b.size() >= 2 ? transposed(g, in[1], c.b.size()) : in[1];
    Value* y = op(g, "MatMul", {a, b});
    if (c.alpha != 1.0f) y = op(g, "Mul", {y, scalar(g, dtype, c.alpha)});
    if (in[2]) y = op(g, "Add", {y, in[2]});
    g.add_output(unfused_activation(g, y, act, dtype));
  }
  Tensor expected = first_output(std::move(unfused), tensors);
  Tensor actual = first_output(std::move(fused), tensors);
  EXPECT_EQ(actual.shape(), y_shape);
  EXPECT_TRUE(close(actual, expected, rtol));
}

TEST(FusedMatMul, EveryActivation) {
  for (const Activation& act : all_activations()) {
    check_matmul({{5, 7}, {7, 3}}, act);
    check_matmul({{2, 4, 6}, {3, 6}, false, true, 0.5f}, act);
  }
}

TEST(FusedMatMul, ShapesTransposesAndBroadcasting) {
  const std::vector<MatMulCase> cases = {
      {{1, 1}, {1, 1}},
      {{3, 5}, {5, 4}, false, false, 1.0f, false},
      {{5, 3}, {5, 4}, true, false},              // A^T
      {{3, 5}, {4, 5}, false, true},              // B^T
      {{5, 3}, {4, 5}, true, true, 0.125f},       // both, alpha
      {{2, 3, 4, 5}, {5, 6}},                     // batched A, one B: one tall GEMM
      {{2, 3, 5, 4}, {5, 6}, true, false, 2.0f},  // batched A^T
      {{2, 1, 4, 5}, {3, 5, 6}},                  // batch broadcast both ways
      {{2, 1, 5, 4}, {3, 6, 5}, true, true},      // ... transposed
      {{4, 5}, {3, 5, 6}},                        // batched B only
      {{4, 5}, {3, 6, 5}, false, true},
      {{5}, {5, 6}},                               // 1-D A
      {{5}, {2, 6, 5}, true, true},                // 1-D A ignores trans_a
      {{3, 4, 5}, {5}, false, false, 1.0f, true},  // 1-D B: Bias along M
      {{7}, {7}, false, false, 1.0f, false},       // dot product
      {{2, 3, 0}, {0, 4}},                         // K = 0
      {{0, 3}, {3, 4}},                            // M = 0
  };
  for (const MatMulCase& c : cases) {
    check_matmul(c, {});
    check_matmul(c, {"Tanh", {}});
  }
}

TEST(FusedMatMul, OtherFloatTypes) {
  const MatMulCase c{{2, 3, 5}, {4, 5}, false, true, 0.5f};
  check_matmul(c, {"Gelu", {}}, DType::kDouble, 1e-12);
  check_matmul(c, {"Relu", {}}, DType::kFloat16, 1e-2);
}

TEST(FusedMatMul, ErrorsNameTheNode) {
  auto run = [](Shape a, Shape b, Shape bias, DType dtype = DType::kFloat) {
    std::vector<Tensor> tensors{random(dtype, a, 1), random(dtype, b, 2),
                                bias.empty() ? Tensor() : random(dtype, bias, 3)};
    Model model = new_model(true);
    Graph& g = model.graph();
    Node* node =
        g.add_node("FusedMatMul", add_inputs(g, tensors), {"y"}, std::string(kOnnxkitDomain), "fm");
    g.add_output(node->output(0));
    return first_output(std::move(model), tensors);
  };
  EXPECT_NO_THROW(run({2, 3}, {3, 4}, {4}));
  for (auto [a, b, bias] :
       {std::tuple{Shape{2, 3}, Shape{4, 4}, Shape{}}, std::tuple{Shape{3}, Shape{3}, Shape{1}},
        std::tuple{Shape{2, 3}, Shape{3, 4}, Shape{2, 4}},
        std::tuple{Shape{2, 3}, Shape{3, 4}, Shape{3}},
        std::tuple{Shape{2, 2, 3}, Shape{3, 3, 4}, Shape{}}}) {
    try {
      run(a, b, bias);
      ADD_FAILURE() << shape_to_string(a) << " x " << shape_to_string(b) << " + "
                    << shape_to_string(bias) << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'fm'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(run({2, 3}, {3, 4}, {}, DType::kInt32), Error);
}

}  // namespace
}  // namespace onnxkit
