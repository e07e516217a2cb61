#include <cmath>

#include "linear_fusion_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

Tensor scalar_of(DType dtype, double value) {
  Tensor t(dtype, {});
  if (dtype == DType::kFloat) *t.mutable_data<float>() = static_cast<float>(value);
  if (dtype == DType::kUInt8) *t.mutable_data<uint8_t>() = static_cast<uint8_t>(value);
  if (dtype == DType::kInt8) *t.mutable_data<int8_t>() = static_cast<int8_t>(value);
  return t;
}

// A QDQ model as ONNX Runtime's quantize_static writes it: x -> Q -> DQ -> Conv (int8
// weights per output channel, int32 bias of scale x_scale * w_scale) or MatMul -> Q -> DQ.
// `bias_scale_off` writes the bias with a scale that is not x_scale * w_scale.
Model qdq_model(bool conv, bool bias_scale_off = false) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", conv ? float_type({1, 3, 8, 8}) : float_type({2, 5, 16}));
  const float x_scale = 0.02f, y_scale = 0.05f;
  Value* xs = g.add_initializer("xs", scalar_of(DType::kFloat, x_scale));
  Value* xzp = g.add_initializer("xzp", scalar_of(DType::kUInt8, 128));
  Value* xq = g.add_node("QuantizeLinear", {x, xs, xzp}, {"xq"}, "", "q_x")->output(0);
  Value* xf = g.add_node("DequantizeLinear", {xq, xs, xzp}, {"xf"}, "", "dq_x")->output(0);
  const int64_t channels = conv ? 4 : 8;
  std::mt19937_64 rng(3);
  Tensor wq = random_tensor(DType::kInt8, conv ? Shape{4, 3, 3, 3} : Shape{16, 8}, rng);
  Tensor ws = positive_floats({channels}, 4);
  for (int64_t i = 0; i < channels; ++i) ws.mutable_data<float>()[i] *= 0.01f;
  Tensor wzp(DType::kInt8, {channels});
  Node* dq_w = g.add_node(
      "DequantizeLinear",
      {g.add_initializer("wq", wq), g.add_initializer("ws", ws), g.add_initializer("wzp", wzp)},
      {"wf"}, "", "dq_w");
  set_int(dq_w, "axis", conv ? 0 : 1);
  std::vector<Value*> inputs{xf, dq_w->output(0)};
  if (conv) {
    Tensor bq(DType::kInt32, {channels});
    Tensor bs(DType::kFloat, {channels});
    for (int64_t m = 0; m < channels; ++m) {
      bq.mutable_data<int32_t>()[m] = static_cast<int32_t>(m * 100 - 150);
      bs.mutable_data<float>()[m] = x_scale * ws.data<float>()[m] * (bias_scale_off ? 2 : 1);
    }
    Node* dq_b =
        g.add_node("DequantizeLinear", {g.add_initializer("bq", bq), g.add_initializer("bs", bs)},
                   {"bf"}, "", "dq_b");
    set_int(dq_b, "axis", 0);
    inputs.push_back(dq_b->output(0));
  }
  Node* product = g.add_node(conv ? "Conv" : "MatMul", inputs, {"p"}, "", "product");
  if (conv) set_ints(product, "pads", {1, 1, 1, 1});
  Value* ys = g.add_initializer("ys", scalar_of(DType::kFloat, y_scale));
  Value* yzp = g.add_initializer("yzp", scalar_of(DType::kInt8, -3));
  Value* yq =
      g.add_node("QuantizeLinear", {product->output(0), ys, yzp}, {"yq"}, "", "q_y")->output(0);
  g.add_output(g.add_node("DequantizeLinear", {yq, ys, yzp}, {"y"}, "", "dq_y")->output(0));
  infer(model);
  return model;
}

// x [3, 16] -> Q -> DQ -> Gemm(., DQ(W) per output column, DQ(int32 bias)) -> Q -> DQ, with
// W [N, K] under transB or [K, N].
Model qdq_gemm_model(bool trans_b) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  Value* x = g.add_input("x", float_type({3, 16}));
  const float x_scale = 0.02f, y_scale = 0.05f;
  Value* xs = g.add_initializer("xs", scalar_of(DType::kFloat, x_scale));
  Value* xzp = g.add_initializer("xzp", scalar_of(DType::kUInt8, 128));
  Value* xq = g.add_node("QuantizeLinear", {x, xs, xzp}, {"xq"}, "", "q_x")->output(0);
  Value* xf = g.add_node("DequantizeLinear", {xq, xs, xzp}, {"xf"}, "", "dq_x")->output(0);
  const int64_t n = 6, k = 16;
  std::mt19937_64 rng(4);
  Tensor wq = random_tensor(DType::kInt8, trans_b ? Shape{n, k} : Shape{k, n}, rng);
  Tensor ws = positive_floats({n}, 5);
  for (int64_t i = 0; i < n; ++i) ws.mutable_data<float>()[i] *= 0.01f;
  Node* dq_w = g.add_node("DequantizeLinear",
                          {g.add_initializer("wq", wq), g.add_initializer("ws", ws),
                           g.add_initializer("wzp", Tensor(DType::kInt8, {n}))},
                          {"wf"}, "", "dq_w");
  set_int(dq_w, "axis", trans_b ? 0 : 1);
  Tensor bq(DType::kInt32, {n});
  Tensor bs(DType::kFloat, {n});
  for (int64_t j = 0; j < n; ++j) {
    bq.mutable_data<int32_t>()[j] = static_cast<int32_t>(j * 70 - 200);
    bs.mutable_data<float>()[j] = x_scale * ws.data<float>()[j];
  }
  Node* dq_b =
      g.add_node("DequantizeLinear", {g.add_initializer("bq", bq), g.add_initializer("bs", bs)},
                 {"bf"}, "", "dq_b");
  set_int(dq_b, "axis", 0);
  Node* gemm = g.add_node("Gemm", {xf, dq_w->output(0), dq_b->output(0)}, {"p"}, "", "fc");
  if (trans_b) set_int(gemm, "transB", 1);
  Value* ys = g.add_initializer("ys", scalar_of(DType::kFloat, y_scale));
  Value* yzp = g.add_initializer("yzp", scalar_of(DType::kUInt8, 120));
  Value* yq =
      g.add_node("QuantizeLinear", {gemm->output(0), ys, yzp}, {"yq"}, "", "q_y")->output(0);
  g.add_output(g.add_node("DequantizeLinear", {yq, ys, yzp}, {"y"}, "", "dq_y")->output(0));
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_qdq_into_qlinear_pass(), model);
}

// The int8 op requantizes its int32 product where the QDQ graph rounds a float product:
// they may differ by one step of the output's scale.
constexpr double kOneStep = 0.05 + 1e-6;

TEST(FuseQdqIntoQLinear, ConvBecomesQLinearConv) {
  Model model = qdq_model(true);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  const Node* fused = only_node(model, "QLinearConv");
  ASSERT_TRUE(fused);
  EXPECT_EQ(fused->inputs().size(), 9u);
  EXPECT_EQ(fused->input(8)->name(), "bq") << "the int32 bias as it is";
  EXPECT_EQ(fused->output(0)->name(), "yq");
  const Attribute* pads = fused->find_attribute("pads");
  EXPECT_TRUE(pads && pads->ints == std::vector<int64_t>({1, 1, 1, 1}));
  EXPECT_EQ(count_ops(model, "Conv"), 0u);
  EXPECT_EQ(count_ops(model, "DequantizeLinear"), 1u) << "only the output's DQ stays";
  EXPECT_EQ(count_ops(model, "QuantizeLinear"), 1u) << "only the input's Q stays";
  EXPECT_TRUE(same_outputs(before, model, 0, kOneStep));
}

TEST(FuseQdqIntoQLinear, MatMulBecomesQLinearMatMul) {
  Model model = qdq_model(false);
  Model before = copy_model(model);
  EXPECT_EQ(run_pass(model), 1u);
  ASSERT_TRUE(only_node(model, "QLinearMatMul"));
  EXPECT_EQ(count_ops(model, "MatMul"), 0u);
  EXPECT_TRUE(same_outputs(before, model, 0, kOneStep));
}

TEST(FuseQdqIntoQLinear, GemmBecomesOneByOneQLinearConv) {
  for (bool trans_b : {true, false}) {
    SCOPED_TRACE(trans_b ? "transB" : "B as [K, N]");
    Model model = qdq_gemm_model(trans_b);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 1u);
    const Node* conv = only_node(model, "QLinearConv");
    ASSERT_TRUE(conv);
    EXPECT_EQ(conv->input(3)->initializer().shape(), (Shape{6, 16, 1, 1}));
    EXPECT_EQ(conv->input(8)->name(), "bq") << "the int32 bias as it is";
    EXPECT_EQ(count_ops(model, "Gemm"), 0u);
    EXPECT_EQ(count_ops(model, "Reshape"), 2u);
    EXPECT_EQ(model.graph().find_value("yq")->producer()->op_type(), "Reshape");
    EXPECT_TRUE(same_outputs(before, model, 0, kOneStep));
  }
}

TEST(FuseQdqIntoQLinear, BiasOfAnotherScaleStays) {
  Model model = qdq_model(true, /*bias_scale_off=*/true);
  EXPECT_EQ(run_pass(model), 0u);
  EXPECT_EQ(count_ops(model, "Conv"), 1u);
}

}  // namespace
}  // namespace onnxkit
