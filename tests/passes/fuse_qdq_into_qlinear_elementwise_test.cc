#include "pass_test_util.h"

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

struct QdqBuilder {
  Graph& g;
  DType type;
  int counter = 0;

  // Q then DQ of `x` with its own scale and zero point: the int8 tensor and its float view.
  std::pair<Value*, Value*> qdq(Value* x, float scale, int zero_point) {
    const std::string n = std::to_string(counter++);
    Value* s = g.add_initializer("s" + n, scalar_of(DType::kFloat, scale));
    Value* z = g.add_initializer("z" + n, scalar_of(type, zero_point));
    Value* q = g.add_node("QuantizeLinear", {x, s, z}, {"q" + n}, "", "quant" + n)->output(0);
    Value* f = g.add_node("DequantizeLinear", {q, s, z}, {"f" + n}, "", "dequant" + n)->output(0);
    return {q, f};
  }
  Value* op(const std::string& type_name, std::vector<Value*> inputs) {
    const std::string n = std::to_string(counter++);
    return g.add_node(type_name, std::move(inputs), {"o" + n}, "", type_name + n)->output(0);
  }
};

// As ONNX Runtime's quantize_static writes QDQ: x -> Q/DQ -> Sigmoid -> Q/DQ, Add of both,
// Q/DQ -> LeakyRelu -> Q/DQ, Mul, Q/DQ, GlobalAveragePool -> Q/DQ, Concat with the
// pooled input -> Q/DQ -> y.
Model qdq_model(DType type) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  QdqBuilder b{g, type};
  const int zp = type == DType::kUInt8 ? 128 : 0;
  Value* x = g.add_input("x", float_type({1, 4, 6, 6}));
  auto [xq, xf] = b.qdq(x, 0.02f, zp);
  auto [sq, sf] = b.qdq(b.op("Sigmoid", {xf}), 1.0f / 256, zp - 128);
  auto [aq, af] = b.qdq(b.op("Add", {xf, sf}), 0.025f, zp + 3);
  Value* leaky = b.op("LeakyRelu", {af});
  set_float(leaky->producer(), "alpha", 0.2f);
  auto [lq, lf] = b.qdq(leaky, 0.02f, zp - 7);
  auto [mq, mf] = b.qdq(b.op("Mul", {lf, sf}), 0.01f, zp + 1);
  auto [pq, pf] = b.qdq(b.op("GlobalAveragePool", {mf}), 0.005f, zp);
  auto [x_pool_q, x_pool_f] = b.qdq(b.op("GlobalAveragePool", {xf}), 0.005f, zp - 2);
  Value* cat = b.op("Concat", {pf, x_pool_f});
  set_int(cat->producer(), "axis", 1);
  auto [cq, cf] = b.qdq(cat, 0.006f, zp);
  g.add_output(cf);
  infer(model);
  return model;
}

size_t run_pass(Model& model) {
  return apply_pass(*make_fuse_qdq_into_qlinear_elementwise_pass(), model);
}

TEST(FuseQdqIntoQLinearElementwise, EveryOpBetweenDqAndQBecomesItsQLinearOp) {
  for (DType type : {DType::kUInt8, DType::kInt8}) {
    Model model = qdq_model(type);
    Model before = copy_model(model);
    EXPECT_EQ(run_pass(model), 7u);
    for (const char* op :
         {"QLinearSigmoid", "QLinearAdd", "QLinearLeakyRelu", "QLinearMul", "QLinearConcat"}) {
      const Node* fused = only_node(model, op);
      ASSERT_TRUE(fused) << op;
      EXPECT_EQ(fused->domain(), "com.microsoft");
    }
    EXPECT_EQ(count_ops(model, "QLinearGlobalAveragePool"), 2u);
    EXPECT_FLOAT_EQ(only_node(model, "QLinearLeakyRelu")->find_attribute("alpha")->f, 0.2f);
    EXPECT_EQ(only_node(model, "QLinearConcat")->inputs().size(), 8u);
    for (const char* op : {"Sigmoid", "Add", "LeakyRelu", "Mul", "GlobalAveragePool", "Concat"}) {
      EXPECT_EQ(count_ops(model, op), 0u) << op;
    }
    EXPECT_EQ(count_ops(model, "QuantizeLinear"), 1u) << "only the input's Q stays";
    EXPECT_EQ(count_ops(model, "DequantizeLinear"), 1u) << "only the output's DQ stays";
    EXPECT_EQ(model.opset_version("com.microsoft"), 1);
    // The int8 ops round once where the QDQ graph rounds its float result again: within a
    // few steps of the output's scale after seven ops.
    EXPECT_TRUE(same_outputs(before, model, 0, 3 * 0.006 + 1e-6));
  }
}

TEST(FuseQdqIntoQLinearElementwise, LeavesWhatIsNotPerTensorInt8QdqAlone) {
  // The Add's result is a graph output as well as the Q's input: the float must stay.
  Model model = qdq_model(DType::kUInt8);
  for (Node* node : model.graph().nodes()) {
    if (node->op_type() == "Add") model.graph().add_output(node->output(0));
  }
  EXPECT_EQ(run_pass(model), 6u);
  EXPECT_EQ(count_ops(model, "Add"), 1u);
  // A DQ whose zero point is of another type than the Q's.
  Model mixed = empty_model(13);
  Graph& g = mixed.graph();
  QdqBuilder u8{g, DType::kUInt8};
  QdqBuilder s8{g, DType::kInt8, 100};
  Value* x = g.add_input("x", float_type({2, 3}));
  auto [aq, af] = u8.qdq(x, 0.1f, 128);
  auto [bq, bf] = s8.qdq(x, 0.1f, 0);
  auto [cq, cf] = u8.qdq(u8.op("Add", {af, bf}), 0.2f, 128);
  g.add_output(cf);
  infer(mixed);
  EXPECT_EQ(run_pass(mixed), 0u);
}

}  // namespace
}  // namespace onnxkit
