// Pass fuse_qdq_into_qlinear_elementwise: a QDQ model states the int8 ops between its
// convolutions (residual adds, gates, pools, concatenations, activations) as float ops
// between DequantizeLinear and QuantizeLinear. As ONNX Runtime does at level all (its QDQ
// selectors for binary, unary and variadic ops), they become com.microsoft's int8 ops:
//
//   DQ(a), DQ(b) -> Add / Mul -> Q            QLinearAdd / QLinearMul
//   DQ(x) -> GlobalAveragePool -> Q           QLinearGlobalAveragePool
//   DQ(x) -> Sigmoid / LeakyRelu -> Q         QLinearSigmoid / QLinearLeakyRelu
//   DQ(x0), DQ(x1), ... -> Concat -> Q        QLinearConcat
//
// so the int8 tensors flow on without a float round trip; the results are those of ORT's
// kernels for these ops (ops/quantization_microsoft.cc), which round once instead of twice.
// Conditions: every DQ and the Q per tensor, with zero points given, all of one int8 type;
// the float result read by the Q alone. The DQ nodes stay while something else reads them.
// Conv / MatMul / Gemm are fuse_qdq_into_qlinear's.
#include <unordered_set>

#include "ir/domain.h"
#include "ir/graph_clone.h"
#include "passes/fusion_util.h"
#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

struct QuantOperands {
  Node* node = nullptr;
  Value* x = nullptr;
  Value* scale = nullptr;
  Value* zero_point = nullptr;
};

DType value_dtype(const Value* value) {
  return value->has_initializer() ? value->initializer().dtype() : value->type().elem_type;
}

bool one_element(const Value* value) {
  if (value->has_initializer()) return value->initializer().numel() == 1;
  if (!value->type().is_tensor() || !value->type().shape) return false;
  for (const Dim& dim : *value->type().shape) {
    if (!dim.is_known() || dim.value != 1) return false;
  }
  return true;
}

// `node` as a per-tensor int8 DequantizeLinear / QuantizeLinear with a zero point.
std::optional<QuantOperands> per_tensor(Node* node, std::string_view op_type) {
  if (!node || !is_onnx_op(node, op_type) || node->inputs().size() < 3 || !node->input(0) ||
      !node->input(1) || !node->input(2) || !node->output(0)) {
    return std::nullopt;
  }
  if (int_attr(node, "block_size", 0) != 0 || int_attr(node, "output_dtype", 0) != 0 ||
      int_attr(node, "precision", 0) != 0) {
    return std::nullopt;
  }
  QuantOperands q{node, node->input(0), node->input(1), node->input(2)};
  const DType zp = value_dtype(q.zero_point);
  if (!one_element(q.scale) || !one_element(q.zero_point) ||
      value_dtype(q.scale) != DType::kFloat || (zp != DType::kUInt8 && zp != DType::kInt8)) {
    return std::nullopt;
  }
  return q;
}

std::optional<QuantOperands> dequantized(Value* value) {
  if (!value || !value->producer()) return std::nullopt;
  return per_tensor(value->producer(), "DequantizeLinear");
}

// The Q that alone reads `node`'s output.
std::optional<QuantOperands> only_quantize(Node* node, const PassContext& context) {
  Value* y = node->outputs().size() == 1 ? node->output(0) : nullptr;
  if (!y || !linear_fusion::fusable_intermediate(y, context)) return std::nullopt;
  Node* reader = y->uses()[0].node;
  if (reader->graph() != node->graph() || y->uses()[0].input != 0) return std::nullopt;
  return per_tensor(reader, "QuantizeLinear");
}

class FuseQdqIntoQLinearElementwisePass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_qdq_into_qlinear_elementwise"; }

  size_t run(Graph& graph, PassContext& context) override {
    if (context.opset("") < 10) return 0;
    size_t changes = 0;
    std::unordered_set<const Node*> removed;
    for (Node* node : graph.nodes()) {
      if (removed.count(node) || !node->domain().empty()) continue;
      changes += fuse(graph, node, context, removed);
    }
    if (changes && context.model && context.model->opset_version(kMicrosoftDomain) < 1) {
      context.model->opset_imports.push_back({std::string(kMicrosoftDomain), 1});
    }
    return changes;
  }

 private:
  static size_t fuse(Graph& graph, Node* node, const PassContext& context,
                     std::unordered_set<const Node*>& removed) {
    const std::string& op = node->op_type();
    const bool binary = op == "Add" || op == "Mul";
    const bool unary = op == "GlobalAveragePool" || op == "Sigmoid" || op == "LeakyRelu";
    const bool concat = op == "Concat";
    if (!binary && !unary && !concat) return 0;
    if (binary && node->inputs().size() != 2) return 0;
    if (unary && node->inputs().size() != 1) return 0;
    if (concat && node->inputs().empty()) return 0;
    const auto q = only_quantize(node, context);
    if (!q) return 0;
    const DType dtype = value_dtype(q->zero_point);
    std::vector<QuantOperands> dqs;
    for (Value* input : node->inputs()) {
      auto dq = dequantized(input);
      if (!dq || value_dtype(dq->zero_point) != dtype) return 0;
      dqs.push_back(*dq);
    }
    std::vector<Value*> inputs;
    if (concat) {
      inputs = {q->scale, q->zero_point};
      for (const QuantOperands& dq : dqs) {
        inputs.insert(inputs.end(), {dq.x, dq.scale, dq.zero_point});
      }
    } else {
      for (const QuantOperands& dq : dqs) {
        inputs.insert(inputs.end(), {dq.x, dq.scale, dq.zero_point});
      }
      inputs.insert(inputs.end(), {q->scale, q->zero_point});
    }
    Node* fused = graph.add_node("QLinear" + op, inputs, {}, std::string(kMicrosoftDomain),
                                 node->name(), q->node);
    for (const Attribute& attribute : node->attributes()) {
      fused->set_attribute(clone_attribute(attribute, &graph, {}));
    }
    Value* y = q->node->output(0);
    graph.set_node_output(q->node, 0, graph.create_value(graph.unique_name(y->name() + "__old")));
    graph.set_node_output(fused, 0, y);
    removed.insert(node);
    removed.insert(q->node);
    graph.remove_node(q->node);
    graph.remove_node(node);
    for (const QuantOperands& dq : dqs) {
      if (removed.count(dq.node) || !is_unused(dq.node->output(0))) continue;
      removed.insert(dq.node);
      graph.remove_node(dq.node);
    }
    return 1;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_qdq_into_qlinear_elementwise_pass() {
  return std::make_unique<FuseQdqIntoQLinearElementwisePass>();
}

}  // namespace onnxkit
