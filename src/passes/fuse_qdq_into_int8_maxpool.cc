// Pass fuse_qdq_into_int8_maxpool: ONNX Runtime's quantization tool writes a QDQ model's
// MaxPool between a DequantizeLinear and a QuantizeLinear of the same scale and zero point.
// As ORT's QDQ rules drop those (MaxPool from opset 12 takes int8 and uint8), the pool runs
// on the int8 values:
//
//   DQ(x; s, z) -> MaxPool -> Q(; s, z)        MaxPool(x)
//
// Exact: with s > 0 dequantization is monotonic, so the maximum commutes with it, and
// Q(DQ(m)) = m (the float round trip of (m - z) * s / s is within 2^-14 of m - z for the
// normal scales required here). A window entirely in the padding gives the lowest value
// both ways. Conditions: DQ and Q per tensor with constant, equal scales and zero points, the
// pool's float output read by the Q alone, no Indices output used. This lets
// int8_channels_last keep the pool inside a chain (ResNet-50's after conv1).
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// The constant one-element scale of a per-tensor DQ / Q: positive, normal and small enough
// that 256 * scale stays normal.
std::optional<float> usable_scale(const Value* scale) {
  if (!scale || !scale->has_initializer()) return std::nullopt;
  const Tensor& t = scale->initializer();
  if (t.dtype() != DType::kFloat || t.numel() != 1) return std::nullopt;
  const float s = t.data<float>()[0];
  if (!std::isnormal(s) || s <= 0 || s < 1e-30f || s > 1e30f) return std::nullopt;
  return s;
}

bool same_constant(const Value* a, const Value* b) {
  if (a == b) return true;
  if (!a || !b || !a->has_initializer() || !b->has_initializer()) return false;
  const Tensor& x = a->initializer();
  const Tensor& y = b->initializer();
  return x.dtype() == y.dtype() && x.numel() == 1 && y.numel() == 1 &&
         std::memcmp(x.raw_data(), y.raw_data(), dtype_size(x.dtype())) == 0;
}

// A per-tensor int8 DQ / Q of `op_type` with constant scale and zero point.
bool per_tensor_int8(const Node* node, std::string_view op_type) {
  if (!node || !is_onnx_op(node, op_type) || node->inputs().size() != 3 || !node->input(2) ||
      int_attr(node, "block_size", 0) != 0 || int_attr(node, "output_dtype", 0) != 0 ||
      int_attr(node, "axis", 1) != 1 || !usable_scale(node->input(1))) {
    return false;
  }
  const Value* zp = node->input(2);
  if (!zp->has_initializer() || zp->initializer().numel() != 1) return false;
  const DType dtype = zp->initializer().dtype();
  return dtype == DType::kUInt8 || dtype == DType::kInt8;
}

class FuseQdqIntoInt8MaxPoolPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_qdq_into_int8_maxpool"; }

  size_t run(Graph& graph, PassContext& context) override {
    if (context.opset("") < 12) return 0;
    size_t changes = 0;
    std::unordered_set<const Node*> removed;  // nodes() is a snapshot
    for (Node* pool : graph.nodes()) {
      if (removed.count(pool) || !is_onnx_op(pool, "MaxPool") || pool->inputs().size() != 1 ||
          !pool->input(0) || !pool->output(0)) {
        continue;
      }
      if (pool->outputs().size() > 1 && pool->output(1) && !is_unused(pool->output(1))) continue;
      Node* dq = pool->input(0)->producer();
      Value* y = pool->output(0);
      if (!per_tensor_int8(dq, "DequantizeLinear") ||
          !linear_fusion::fusable_intermediate(y, context)) {
        continue;
      }
      Node* q = y->uses()[0].node;
      if (q->graph() != &graph || y->uses()[0].input != 0 ||
          !per_tensor_int8(q, "QuantizeLinear") || !same_constant(dq->input(1), q->input(1)) ||
          !same_constant(dq->input(2), q->input(2))) {
        continue;
      }
      // The pool reads the int8 X and writes what the Q wrote.
      graph.set_node_input(pool, 0, dq->input(0));
      Value* out = q->output(0);
      graph.set_node_output(q, 0, graph.create_value(graph.unique_name(out->name() + "__old")));
      graph.set_node_output(pool, 0, out);
      removed.insert(q);
      graph.remove_node(q);
      if (is_unused(dq->output(0))) {
        removed.insert(dq);
        graph.remove_node(dq);
      }
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_qdq_into_int8_maxpool_pass() {
  return std::make_unique<FuseQdqIntoInt8MaxPoolPass>();
}

}  // namespace onnxkit
