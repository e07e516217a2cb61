// fuse_qdq_into_int8_maxpool: DQ -> MaxPool -> Q of one scale and zero point becomes MaxPool
// on the int8 values, with the same output bytes; other scales stay as they are.
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

// x -> Q(0.03, zp) -> DQ -> MaxPool 3x3 /2 pad 1 -> Q(q_scale, zp) -> DQ -> y, as ORT's
// quantize_static writes it.
Model qdq_pool(DType type, float q_scale) {
  Model model = empty_model(13);
  Graph& g = model.graph();
  const int zp = type == DType::kUInt8 ? 131 : -5;
  Value* x = g.add_input("x", float_type({1, 4, 7, 7}));
  Value* s = g.add_initializer("s", scalar_of(DType::kFloat, 0.03));
  Value* s2 = g.add_initializer("s2", scalar_of(DType::kFloat, q_scale));
  Value* z = g.add_initializer("z", scalar_of(type, zp));
  Value* xq = g.add_node("QuantizeLinear", {x, s, z}, {"xq"}, "", "quant_x")->output(0);
  Value* xf = g.add_node("DequantizeLinear", {xq, s, z}, {"xf"}, "", "dequant_x")->output(0);
  Node* pool = g.add_node("MaxPool", {xf}, {"pooled"}, "", "maxpool");
  set_ints(pool, "kernel_shape", {3, 3});
  set_ints(pool, "strides", {2, 2});
  set_ints(pool, "pads", {1, 1, 1, 1});
  Value* pq =
      g.add_node("QuantizeLinear", {pool->output(0), s2, z}, {"pq"}, "", "quant_p")->output(0);
  g.add_output(g.add_node("DequantizeLinear", {pq, s2, z}, {"y"}, "", "dequant_p")->output(0));
  infer(model);
  return model;
}

TEST(FuseQdqIntoInt8MaxPool, PoolOfOneScaleRunsOnTheInt8Values) {
  for (DType type : {DType::kUInt8, DType::kInt8}) {
    Model model = qdq_pool(type, 0.03f);
    Model before = copy_model(model);
    EXPECT_EQ(apply_pass(*make_fuse_qdq_into_int8_maxpool_pass(), model), 1u);
    const Node* pool = only_node(model, "MaxPool");
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->input(0)->name(), "xq");
    EXPECT_EQ(pool->output(0)->name(), "pq");
    EXPECT_EQ(count_ops(model, "QuantizeLinear"), 1u);
    EXPECT_EQ(count_ops(model, "DequantizeLinear"), 1u);
    EXPECT_TRUE(same_outputs(before, model, 0, 0));
  }
}

TEST(FuseQdqIntoInt8MaxPool, OtherScalesAndOldOpsetsStay) {
  Model model = qdq_pool(DType::kUInt8, 0.05f);
  EXPECT_EQ(apply_pass(*make_fuse_qdq_into_int8_maxpool_pass(), model), 0u);
  Model old = qdq_pool(DType::kUInt8, 0.03f);
  old.opset_imports = {{"", 11}};
  EXPECT_EQ(apply_pass(*make_fuse_qdq_into_int8_maxpool_pass(), old), 0u);
}

}  // namespace
}  // namespace onnxkit
