// Pass fuse_matmul_bias_activation: MatMul (or a FusedMatMul without bias and activation)
// followed by an Add of a constant bias along the last dim ([N], [1, ..., 1, N], or one value
// to spread over N) and/or an activation becomes one com.onnxkit FusedMatMul:
// act(A @ B + Bias). Gemm becomes FusedMatMul too when its C is absent, a [N] / [1, N] row
// (with beta 1), or a constant such row or scalar (pre-scaled by beta), so the activation
// after it can fuse and one kernel serves every matrix product. An activation after a
// Reshape / Flatten / Squeeze / Unsqueeze of the product fuses too (the reshape moves after).
#include <unordered_set>

#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

using namespace linear_fusion;

// The static dims of `value`: an initializer's shape, else its type's; nullopt when unknown.
std::optional<std::vector<Dim>> static_dims(const Value* value) {
  if (!value) return std::nullopt;
  if (value->has_initializer()) {
    std::vector<Dim> dims;
    for (int64_t d : value->initializer().shape()) dims.push_back(Dim::known(d));
    return dims;
  }
  if (!value->type().is_tensor() || !value->type().shape) return std::nullopt;
  return *value->type().shape;
}

DType static_dtype(const Value* value) {
  if (!value) return DType::kUndefined;
  if (value->has_initializer()) return value->initializer().dtype();
  return value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
}

// A new [n] initializer holding `scale` * the values of `c`, whose single value (or last
// dim, all others 1) spreads over n columns.
Value* row_initializer(Graph& graph, const Tensor& c, int64_t n, double scale,
                       const std::string& base) {
  std::vector<double> values = to_doubles(c);
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) row[j] = scale * values[values.size() == 1 ? 0 : j];
  return graph.add_initializer(graph.unique_name(base + "_row"), from_doubles(c.dtype(), {n}, row));
}

// True when constant `c` (rank <= max_rank) has every dim 1 but the last, which is n or 1.
bool is_row(const Tensor& c, int64_t n, size_t max_rank) {
  if (c.rank() > max_rank) return false;
  for (size_t d = 0; d + 1 < c.rank(); ++d) {
    if (c.shape()[d] != 1) return false;
  }
  return c.rank() == 0 || c.shape().back() == n || c.shape().back() == 1;
}

class FuseMatMulBiasActivationPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_matmul_bias_activation"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    // Fusions remove nodes that may still be ahead in the snapshot.
    std::unordered_set<const Node*> removed;
    for (Node* node : graph.nodes()) {
      if (removed.count(node)) continue;
      if (is_onnx_op(node, "Gemm")) {
        Node* fused = gemm_to_fused(graph, node, context);
        if (!fused) continue;
        removed.insert(node);
        node = fused;
        ++changes;
      } else if (!is_onnx_op(node, "MatMul") && !is_onnxkit_op(node, "FusedMatMul")) {
        continue;
      }
      while (Node* next = fuse_next(graph, node, context, removed)) {
        node = next;
        ++changes;
      }
    }
    return changes;
  }

 private:
  // Absorbs the reader of the product when it fits; returns the FusedMatMul, or nullptr.
  static Node* fuse_next(Graph& graph, Node* matmul, const PassContext& context,
                         std::unordered_set<const Node*>& removed) {
    Value* y = matmul->output(0);
    if (!y || matmul->outputs().size() != 1 || has_activation(matmul)) return nullptr;
    const DType dtype = output_dtype(matmul);
    if (!dtype_is_float(dtype)) return nullptr;
    if (auto activation = match_activation(y, context)) {
      Node* fused = as_fused(graph, matmul, context, removed);
      set_activation(fused, *activation);
      absorb(graph, fused, activation->nodes, removed);
      return fused;
    }
    if (!fusable_intermediate(y, context)) return nullptr;
    if (Node* fused = fuse_across_reshape(graph, matmul, context, removed)) return fused;
    if (matmul->input(2)) return nullptr;
    Node* add = y->uses()[0].node;
    if (!is_onnx_op(add, "Add") || add->graph() != &graph || add->inputs().size() != 2 ||
        !add->output(0)) {
      return nullptr;
    }
    Value* bias_value = add->input(1 - y->uses()[0].input);
    const Tensor* bias = constant_value(bias_value, context);
    if (!bias || bias->dtype() != dtype) return nullptr;
    // B of rank >= 2 (a 1-D B drops N from Y); Y's rank bounds the bias's, so the Add
    // does not broadcast Y to more dims.
    auto b_dims = static_dims(matmul->input(1));
    if (!b_dims || b_dims->size() < 2) return nullptr;
    const bool trans_b = int_attr(matmul, "trans_b", 0) != 0;
    const Dim& n_dim = (*b_dims)[b_dims->size() - (trans_b ? 2 : 1)];
    auto y_dims = static_dims(y);
    const size_t y_rank = y_dims ? y_dims->size() : 1;
    if (!n_dim.is_known() || !is_row(*bias, n_dim.value, y_rank)) return nullptr;
    const int64_t n = n_dim.value;

    Value* row = bias->rank() == 1 && bias->shape()[0] == n
                     ? bias_value
                     : row_initializer(graph, *bias, n, 1.0, bias_value->name());
    Node* fused = as_fused(graph, matmul, context, removed);
    while (fused->inputs().size() < 3) graph.add_node_input(fused, nullptr);
    graph.set_node_input(fused, 2, row);
    absorb(graph, fused, {add}, removed);
    return fused;
  }

  // Product -> Reshape-like -> activation: the activation moves before the reshape (it is
  // elementwise) and into the FusedMatMul; the reshape then gives the activation's output.
  // Exports of 2-D Gemm between Reshapes (GPT-2's Conv1D) look like this.
  static Node* fuse_across_reshape(Graph& graph, Node* matmul, const PassContext& context,
                                   std::unordered_set<const Node*>& removed) {
    Value* y = matmul->output(0);
    const Use& use = y->uses()[0];
    Node* reshape = use.node;
    const bool shape_only = is_onnx_op(reshape, "Reshape") || is_onnx_op(reshape, "Flatten") ||
                            is_onnx_op(reshape, "Squeeze") || is_onnx_op(reshape, "Unsqueeze");
    if (!shape_only || use.input != 0 || reshape->graph() != &graph ||
        reshape->outputs().size() != 1) {
      return nullptr;
    }
    Value* reshaped = reshape->output(0);
    auto activation = match_activation(reshaped, context);
    if (!activation) return nullptr;
    Node* fused = as_fused(graph, matmul, context, removed);
    set_activation(fused, *activation);
    // The reshape takes over the activation's output value; the activation goes.
    Node* last = activation->nodes.back();
    Value* result = last->output(0);
    graph.set_node_output(last, 0, graph.create_value(graph.unique_name(result->name() + "__old")));
    graph.set_node_output(reshape, 0, result);
    removed.insert(activation->nodes.begin(), activation->nodes.end());
    std::string name = fused->name();
    for (Node* node : activation->nodes) {
      name += "+" + (node->name().empty() ? node->op_type() : node->name());
    }
    fused->set_name(name);
    for (auto it = activation->nodes.rbegin(); it != activation->nodes.rend(); ++it) {
      graph.remove_node(*it);
    }
    graph.remove_value(reshaped);
    return fused;
  }

  // Gemm(A, B, C) -> FusedMatMul(A, B, Bias) with Gemm's transposes and alpha; nullptr
  // when C is not a row the FusedMatMul's Bias can hold.
  static Node* gemm_to_fused(Graph& graph, Node* gemm, const PassContext& context) {
    // Before opset 7 C broadcasts only with `broadcast` set.
    if (context.opset("") < 7 || !gemm->output(0) || gemm->outputs().size() != 1) return nullptr;
    const DType dtype = output_dtype(gemm);
    if (!dtype_is_float(dtype)) return nullptr;
    const bool trans_a = int_attr(gemm, "transA", 0) != 0;
    const bool trans_b = int_attr(gemm, "transB", 0) != 0;
    const float alpha = float_attribute(gemm, "alpha", 1.0f);
    const float beta = float_attribute(gemm, "beta", 1.0f);
    Value* bias = nullptr;
    if (Value* c = gemm->input(2)) {
      auto b_dims = static_dims(gemm->input(1));
      if (!b_dims || b_dims->size() != 2) return nullptr;
      const Dim& n_dim = (*b_dims)[trans_b ? 0 : 1];
      if (!n_dim.is_known()) return nullptr;
      const int64_t n = n_dim.value;
      if (const Tensor* constant = constant_value(c, context)) {
        if (constant->dtype() != dtype || !is_row(*constant, n, 2)) return nullptr;
        const bool reusable = beta == 1.0f && constant->rank() == 1 && constant->shape()[0] == n;
        bias = reusable ? c : row_initializer(graph, *constant, n, beta, c->name());
      } else {
        // A computed C must already be a [N] row, and unscaled.
        auto c_dims = static_dims(c);
        if (beta != 1.0f || !c_dims || c_dims->size() != 1 || !(*c_dims)[0].is_known() ||
            (*c_dims)[0].value != n || static_dtype(c) != dtype) {
          return nullptr;
        }
        bias = c;
      }
    }
    Value* c = gemm->input(2);
    Node* fused = promote_to_onnxkit(graph, gemm, "FusedMatMul", false, context);
    if (bias) {
      graph.set_node_input(fused, 2, bias);
      drop_if_unused_initializer(graph, c);
    } else {
      while (fused->inputs().size() > 2) graph.remove_node_input(fused, fused->inputs().size() - 1);
    }
    if (trans_a) set_int_attribute(fused, "trans_a", 1);
    if (trans_b) set_int_attribute(fused, "trans_b", 1);
    if (alpha != 1.0f) set_float_attribute(fused, "alpha", alpha);
    return fused;
  }

  // The element type of the product (from its type, else from B).
  static DType output_dtype(const Node* matmul) {
    const DType dtype = static_dtype(matmul->output(0));
    return dtype != DType::kUndefined ? dtype : static_dtype(matmul->input(1));
  }

  static Node* as_fused(Graph& graph, Node* matmul, const PassContext& context,
                        std::unordered_set<const Node*>& removed) {
    if (is_onnxkit_op(matmul, "FusedMatMul")) return matmul;
    removed.insert(matmul);
    return promote_to_onnxkit(graph, matmul, "FusedMatMul", false, context);
  }

  static void absorb(Graph& graph, Node* fused, const std::vector<Node*>& chain,
                     std::unordered_set<const Node*>& removed) {
    removed.insert(chain.begin(), chain.end());
    absorb_chain(graph, fused, chain);
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_matmul_bias_activation_pass() {
  return std::make_unique<FuseMatMulBiasActivationPass>();
}

}  // namespace onnxkit
