// Pass fuse_qdq_into_qlinear: a QDQ model (ONNX Runtime's quantize_static default, and the
// format onnxkit's quantizer writes) states its int8 convolutions and matrix products as
// float ops between DequantizeLinear and QuantizeLinear:
//
//   DQ(xq) -> Conv(., DQ(wq), DQ(bq)?) -> Q -> yq     becomes  QLinearConv(xq, ..., bq)
//   DQ(aq) -> MatMul(., DQ(bq))        -> Q -> yq     becomes  QLinearMatMul(aq, ..., bq)
//   DQ(aq) -> Gemm(., DQ(bq), DQ(cq)?) -> Q -> yq     becomes  Reshape -> QLinearConv -> Reshape
//
// A Gemm [M, K] x [K, N] (+ C) is the 1x1 convolution of [M, K, 1, 1] by [N, K, 1, 1] with
// bias C: QLinearConv's requantization of acc + C is exactly ONNX Runtime's QGemm's (MLAS
// requantizes both the same way), and the int8 conv kernel runs it; the Reshapes hand their
// bytes over. MatMul -> Add with a bias reaches this as a Gemm (fuse_matmul_add_into_gemm).
//
// which the int8 kernels (kernels/dnnl_int8.cc) run on integers, as ONNX Runtime does with
// the same graphs (its QDQ selectors): the result is the requantized int32 product, which
// can differ from the float graph by a rounding step, and is what ORT computes.
//
// Conditions: DQ(x) / Q per tensor with zero points given; the weights an int8 initializer
// quantized per tensor or per output channel (Conv: axis 0; MatMul: per column, axis 1;
// Gemm: its N axis, 0 with transB, else 1; alpha and beta 1, no transA, A of rank 2);
// the bias an int32 initializer whose scale is x_scale * w_scale (as the quantizers write
// it, so bq is QLinearConv's B as it is); the float product read by the Q alone. The DQ
// nodes stay while something else reads them.
#include <cmath>
#include <unordered_set>

#include "ir/graph_clone.h"
#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// A DequantizeLinear / QuantizeLinear node's operands: x, scale, zero point.
struct QuantParams {
  Node* node = nullptr;
  Value* x = nullptr;
  Value* scale = nullptr;
  Value* zero_point = nullptr;
};

bool scalar_type(const Value* value) {
  if (value->has_initializer()) return value->initializer().numel() == 1;
  if (!value->type().is_tensor() || !value->type().shape) return false;
  for (const Dim& dim : *value->type().shape) {
    if (!dim.is_known() || dim.value != 1) return false;
  }
  return true;
}

// `node` as a DequantizeLinear (QuantizeLinear) with a scale and (unless optional) a zero
// point; nullopt otherwise. Blocked quantization and float output types are not int8 QDQ.
std::optional<QuantParams> quant_params(Node* node, std::string_view op_type,
                                        bool zero_point_optional = false) {
  if (!node || !is_onnx_op(node, op_type) || node->inputs().size() < 2 || !node->input(0) ||
      !node->input(1) || !node->output(0)) {
    return std::nullopt;
  }
  Value* zero_point = node->inputs().size() > 2 ? node->input(2) : nullptr;
  if (!zero_point && !zero_point_optional) return std::nullopt;
  if (int_attr(node, "block_size", 0) != 0) return std::nullopt;
  const int64_t output_dtype = int_attr(node, "output_dtype", 0);
  if (op_type == "DequantizeLinear" && output_dtype != 0 &&
      output_dtype != static_cast<int64_t>(DType::kFloat)) {
    return std::nullopt;
  }
  if (op_type == "QuantizeLinear" && int_attr(node, "precision", 0) != 0) return std::nullopt;
  return QuantParams{node, node->input(0), node->input(1), zero_point};
}

DType dtype_of(const Value* value) {
  return value->has_initializer() ? value->initializer().dtype() : value->type().elem_type;
}

// Per-tensor int8 activations: DQ / Q whose scale and zero point are scalars of float and
// u8 / s8.
bool per_tensor_int8(const QuantParams& q) {
  if (!scalar_type(q.scale) || !scalar_type(q.zero_point)) return false;
  const DType zp = dtype_of(q.zero_point);
  const DType scale = dtype_of(q.scale);
  return (zp == DType::kUInt8 || zp == DType::kInt8) && scale == DType::kFloat;
}

// Weights: int8 initializers quantized per tensor, or per `channel_axis` (its size values).
bool constant_int8_weights(const QuantParams& q, int64_t channel_axis) {
  if (!q.x->has_initializer() || !q.scale->has_initializer() || !q.zero_point->has_initializer()) {
    return false;
  }
  const Tensor& w = q.x->initializer();
  const Tensor& scale = q.scale->initializer();
  const Tensor& zp = q.zero_point->initializer();
  if ((w.dtype() != DType::kInt8 && w.dtype() != DType::kUInt8) || zp.dtype() != w.dtype() ||
      scale.dtype() != DType::kFloat || w.rank() < 2) {
    return false;
  }
  if (scale.numel() == 1 && zp.numel() == 1) return true;
  int64_t axis = int_attr(q.node, "axis", 1);
  if (axis < 0) axis += w.rank();
  return axis == channel_axis && scale.rank() == 1 && zp.shape() == scale.shape() &&
         scale.numel() == w.shape()[channel_axis];
}

// The int32 bias of a QLinearConv: DQ(bq) with zero point 0 and scale x_scale * w_scale[m]
// (to float rounding), or nullptr when it is not that.
Value* quantized_bias(const QuantParams& b, const QuantParams& x, const QuantParams& w,
                      int64_t maps) {
  if (!b.x->has_initializer() || !b.scale->has_initializer() || !x.scale->has_initializer()) {
    return nullptr;
  }
  const Tensor& bq = b.x->initializer();
  const Tensor& bs = b.scale->initializer();
  if (bq.dtype() != DType::kInt32 || bq.numel() != maps || bq.rank() != 1 ||
      bs.dtype() != DType::kFloat || (bs.numel() != 1 && bs.numel() != maps)) {
    return nullptr;
  }
  if (b.zero_point) {
    if (!b.zero_point->has_initializer()) return nullptr;
    const Tensor& zp = b.zero_point->initializer();
    if (zp.dtype() != DType::kInt32) return nullptr;
    for (int64_t i = 0; i < zp.numel(); ++i) {
      if (zp.data<int32_t>()[i] != 0) return nullptr;
    }
  }
  const float x_scale = x.scale->initializer().data<float>()[0];
  const Tensor& ws = w.scale->initializer();
  for (int64_t m = 0; m < maps; ++m) {
    const float want = x_scale * ws.data<float>()[ws.numel() == 1 ? 0 : m];
    const float got = bs.data<float>()[bs.numel() == 1 ? 0 : m];
    if (std::fabs(got - want) > 1e-6f * std::fabs(want)) return nullptr;
  }
  return b.x;
}

// Replaces `product` and the Q after it by `op_type` with `inputs`, taking over the Q's
// output; drops the DQ nodes and constants nothing reads any more.
void replace(Graph& graph, Node* product, Node* quantize, const std::string& op_type,
             const std::vector<Value*>& inputs, const std::vector<Node*>& dequantizers,
             std::unordered_set<const Node*>& removed, bool copy_attributes) {
  Node* fused = graph.add_node(op_type, inputs, {}, "", product->name(), quantize);
  if (copy_attributes) {
    for (const Attribute& attribute : product->attributes()) {
      fused->set_attribute(clone_attribute(attribute, &graph, {}));
    }
  }
  Value* y = quantize->output(0);
  graph.set_node_output(quantize, 0, graph.create_value(graph.unique_name(y->name() + "__old")));
  graph.set_node_output(fused, 0, y);
  removed.insert(product);
  removed.insert(quantize);
  std::vector<Value*> read = quantize->inputs();
  read.insert(read.end(), product->inputs().begin(), product->inputs().end());
  graph.remove_node(quantize);
  graph.remove_node(product);
  for (Node* dq : dequantizers) {
    if (!dq || removed.count(dq) || !is_unused(dq->output(0))) continue;
    read.insert(read.end(), dq->inputs().begin(), dq->inputs().end());
    removed.insert(dq);
    graph.remove_node(dq);
  }
  for (Value* value : read) linear_fusion::drop_if_unused_initializer(graph, value);
}

// The Q reading `product`'s output alone (per tensor, int8), or nullopt.
std::optional<QuantParams> only_quantize(Node* product, const PassContext& context) {
  Value* y = product->output(0);
  if (!y || !linear_fusion::fusable_intermediate(y, context)) return std::nullopt;
  Node* reader = y->uses()[0].node;
  if (reader->graph() != product->graph() || y->uses()[0].input != 0) return std::nullopt;
  auto q = quant_params(reader, "QuantizeLinear");
  if (!q || !per_tensor_int8(*q)) return std::nullopt;
  return q;
}

std::optional<QuantParams> dequantized(Value* value, bool per_tensor,
                                       bool zero_point_optional = false) {
  if (!value || !value->producer()) return std::nullopt;
  auto dq = quant_params(value->producer(), "DequantizeLinear", zero_point_optional);
  if (!dq || (per_tensor && !per_tensor_int8(*dq))) return std::nullopt;
  return dq;
}

size_t fuse_conv(Graph& graph, Node* conv, const PassContext& context,
                 std::unordered_set<const Node*>& removed) {
  const auto q = only_quantize(conv, context);
  const auto x = dequantized(conv->input(0), true);
  const auto w = dequantized(conv->input(1), false);
  if (!q || !x || !w || !constant_int8_weights(*w, 0)) return 0;
  const int64_t maps = w->x->initializer().shape()[0];
  Value* bias = nullptr;
  std::optional<QuantParams> b;
  if (conv->inputs().size() > 2 && conv->input(2)) {
    b = dequantized(conv->input(2), false, /*zero_point_optional=*/true);
    if (!b || !(bias = quantized_bias(*b, *x, *w, maps))) return 0;
  }
  std::vector<Value*> inputs{x->x,     x->scale,      x->zero_point, w->x,
                             w->scale, w->zero_point, q->scale,      q->zero_point};
  if (bias) inputs.push_back(bias);
  replace(graph, conv, q->node, "QLinearConv", inputs, {x->node, w->node, b ? b->node : nullptr},
          removed, /*copy_attributes=*/true);
  return 1;
}

size_t fuse_matmul(Graph& graph, Node* matmul, const PassContext& context,
                   std::unordered_set<const Node*>& removed) {
  const auto q = only_quantize(matmul, context);
  const auto a = dequantized(matmul->input(0), true);
  const auto b = dequantized(matmul->input(1), false);
  if (!q || !a || !b || !constant_int8_weights(*b, 1) || b->x->initializer().rank() != 2) {
    return 0;
  }
  replace(graph, matmul, q->node, "QLinearMatMul",
          {a->x, a->scale, a->zero_point, b->x, b->scale, b->zero_point, q->scale, q->zero_point},
          {a->node, b->node}, removed, /*copy_attributes=*/false);
  return 1;
}

Value* int64_initializer(Graph& graph, const std::string& stem,
                         const std::vector<int64_t>& values) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
  return graph.add_initializer(graph.unique_name(stem), std::move(t));
}

// W as [N, K, 1, 1] from Gemm's B ([N, K] with transB, else [K, N]).
Tensor conv_weights(const Tensor& b, bool trans_b) {
  const int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
  const int64_t k = trans_b ? b.shape()[1] : b.shape()[0];
  Tensor w(b.dtype(), {n, k, 1, 1});
  const auto* from = static_cast<const uint8_t*>(b.raw_data());
  auto* to = static_cast<uint8_t*>(w.mutable_raw_data());
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < k; ++i) to[j * k + i] = trans_b ? from[j * k + i] : from[i * n + j];
  }
  return w;
}

size_t fuse_gemm(Graph& graph, Node* gemm, const PassContext& context,
                 std::unordered_set<const Node*>& removed) {
  if (linear_fusion::float_attribute(gemm, "alpha", 1.0f) != 1.0f ||
      linear_fusion::float_attribute(gemm, "beta", 1.0f) != 1.0f || int_attr(gemm, "transA", 0)) {
    return 0;
  }
  const bool trans_b = int_attr(gemm, "transB", 0) != 0;
  const auto q = only_quantize(gemm, context);
  const auto a = dequantized(gemm->input(0), true);
  const auto b = dequantized(gemm->input(1), false);
  if (!q || !a || !b || !constant_int8_weights(*b, trans_b ? 0 : 1)) return 0;
  const ValueType& a_type = a->x->type();
  if (!a_type.is_tensor() || !a_type.shape || a_type.shape->size() != 2) return 0;
  const Tensor& bq = b->x->initializer();
  if (bq.rank() != 2) return 0;
  const int64_t n = trans_b ? bq.shape()[0] : bq.shape()[1];
  const int64_t k = trans_b ? bq.shape()[1] : bq.shape()[0];
  Value* bias = nullptr;
  std::optional<QuantParams> c;
  if (gemm->inputs().size() > 2 && gemm->input(2)) {
    c = dequantized(gemm->input(2), false, /*zero_point_optional=*/true);
    if (!c || !(bias = quantized_bias(*c, *a, *b, n))) return 0;
  }
  const std::string& stem = gemm->name().empty() ? q->node->output(0)->name() : gemm->name();
  const Dim rows = (*a_type.shape)[0];
  Node* to_image = graph.add_node(
      "Reshape", {a->x, int64_initializer(graph, stem + "_image_shape", {0, k, 1, 1})},
      {graph.unique_name(stem + "_image")}, "", stem + "_image", q->node);
  to_image->output(0)->set_type(ValueType::tensor(
      a_type.elem_type, std::vector<Dim>{rows, Dim::known(k), Dim::known(1), Dim::known(1)}));
  Value* w = graph.add_initializer(graph.unique_name(stem + "_weights"), conv_weights(bq, trans_b));
  std::vector<Value*> inputs{to_image->output(0), a->scale, a->zero_point, w, b->scale,
                             b->zero_point,       q->scale, q->zero_point};
  if (bias) inputs.push_back(bias);
  const ValueType& y_type = q->node->output(0)->type();
  Node* conv = graph.add_node("QLinearConv", inputs, {graph.unique_name(stem + "_product")}, "",
                              gemm->name(), q->node);
  conv->output(0)->set_type(
      ValueType::tensor(y_type.is_tensor() ? y_type.elem_type : dtype_of(q->zero_point),
                        std::vector<Dim>{rows, Dim::known(n), Dim::known(1), Dim::known(1)}));
  std::vector<Node*> dequantizers{a->node, b->node, c ? c->node : nullptr};
  // The Reshape back takes over the Q's output, as replace() does for the other products.
  Node* to_matrix = graph.add_node(
      "Reshape", {conv->output(0), int64_initializer(graph, stem + "_matrix_shape", {0, n})}, {},
      "", stem + "_matrix", q->node);
  Value* y = q->node->output(0);
  graph.set_node_output(q->node, 0, graph.create_value(graph.unique_name(y->name() + "__old")));
  graph.set_node_output(to_matrix, 0, y);
  removed.insert(gemm);
  removed.insert(q->node);
  std::vector<Value*> read = q->node->inputs();
  read.insert(read.end(), gemm->inputs().begin(), gemm->inputs().end());
  graph.remove_node(q->node);
  graph.remove_node(gemm);
  for (Node* dq : dequantizers) {
    if (!dq || removed.count(dq) || !is_unused(dq->output(0))) continue;
    read.insert(read.end(), dq->inputs().begin(), dq->inputs().end());
    removed.insert(dq);
    graph.remove_node(dq);
  }
  for (Value* value : read) linear_fusion::drop_if_unused_initializer(graph, value);
  return 1;
}

class FuseQdqIntoQLinearPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_qdq_into_qlinear"; }

  size_t run(Graph& graph, PassContext& context) override {
    if (context.opset("") < 10) return 0;
    size_t changes = 0;
    std::unordered_set<const Node*> removed;
    for (Node* node : graph.nodes()) {
      if (removed.count(node)) continue;
      if (is_onnx_op(node, "Conv")) {
        changes += fuse_conv(graph, node, context, removed);
      } else if (is_onnx_op(node, "MatMul")) {
        changes += fuse_matmul(graph, node, context, removed);
      } else if (is_onnx_op(node, "Gemm")) {
        changes += fuse_gemm(graph, node, context, removed);
      }
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_qdq_into_qlinear_pass() {
  return std::make_unique<FuseQdqIntoQLinearPass>();
}

}  // namespace onnxkit
