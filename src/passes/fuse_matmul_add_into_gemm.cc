// Pass fuse_matmul_add_into_gemm: MatMul(A, B) followed by Add(bias) becomes Gemm(A, B, bias)
// when A is 2-D (from its static type), B is a constant matrix and the bias is a constant
// that broadcasts unidirectionally to [M, N] (Gemm's C). Batched MatMul (A of rank 3+) is
// left alone: Gemm is 2-D only.
#include <unordered_set>

#include "passes/passes.h"

namespace onnxkit {
namespace {

// Gemm's element types that MatMul and Add share, at `opset`.
bool gemm_dtype(DType dtype, int64_t opset) {
  return dtype == DType::kFloat || dtype == DType::kDouble || dtype == DType::kFloat16 ||
         (dtype == DType::kBFloat16 && opset >= 13);
}

// True when `bias` broadcasts unidirectionally to [m, n] (m < 0: unknown).
bool broadcasts_to(const Tensor& bias, int64_t m, int64_t n) {
  const Shape& s = bias.shape();
  if (s.size() > 2) return false;
  if (!s.empty() && s.back() != 1 && s.back() != n) return false;
  if (s.size() == 2 && s[0] != 1 && (m < 0 || s[0] != m)) return false;
  return true;
}

class FuseMatMulAddIntoGemmPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_matmul_add_into_gemm"; }

  size_t run(Graph& graph, PassContext& context) override {
    // Gemm's C broadcasts unidirectionally from opset 7 on (before, a `broadcast` flag).
    if (context.opset("") < 7) return 0;
    size_t changes = 0;
    // Each fusion removes a MatMul that may still be ahead in the snapshot.
    std::unordered_set<const Node*> removed;
    for (Node* add : graph.nodes()) {
      if (removed.count(add)) continue;
      if (Node* matmul = fuse(graph, add, context)) {
        removed.insert(matmul);
        ++changes;
      }
    }
    return changes;
  }

 private:
  // Rewrites the pair ending at `add`; returns the removed MatMul, or nullptr.
  static Node* fuse(Graph& graph, Node* add, const PassContext& context) {
    if (!is_onnx_op(add, "Add") || add->inputs().size() != 2 || !add->output(0)) return nullptr;
    for (size_t side = 0; side < 2; ++side) {
      Value* product = add->input(side);
      Node* matmul = product ? product->producer() : nullptr;
      if (!is_onnx_op(matmul, "MatMul") || matmul->graph() != &graph) continue;
      Value* bias = add->input(1 - side);
      if (!constant_value(bias, context)) continue;
      return rewrite(graph, matmul, add, bias, context) ? matmul : nullptr;
    }
    return nullptr;
  }

  static bool rewrite(Graph& graph, Node* matmul, Node* add, Value* bias_value,
                      const PassContext& context) {
    Value* product = matmul->output(0);
    Value* y = add->output(0);
    if (product->uses().size() != 1 || is_graph_output(product) || kept(context, product) ||
        kept(context, y)) {
      return false;
    }
    Value* a = matmul->input(0);
    if (!a || !a->type().is_tensor() || !a->type().shape || a->type().shape->size() != 2) {
      return false;
    }
    const Tensor* b = constant_value(matmul->input(1), context);
    const Tensor* bias = constant_value(bias_value, context);
    if (!b || b->rank() != 2 || !bias) return false;
    const DType dtype = b->dtype();
    if (!gemm_dtype(dtype, context.opset("")) || bias->dtype() != dtype ||
        a->type().elem_type != dtype) {
      return false;
    }
    const Dim& k = (*a->type().shape)[1];
    if (k.is_known() && k.value != b->shape()[0]) return false;
    if (!broadcasts_to(*bias, (*a->type().shape)[0].value, b->shape()[1])) return false;

    Node* gemm = graph.add_node("Gemm", {a, matmul->input(1), bias_value},
                                {graph.unique_name(y->name() + "_gemm")}, "", matmul->name(), add);
    Value* out = gemm->output(0);
    out->set_type(y->type());
    const std::string name = y->name();
    const bool output = is_graph_output(y);
    replace_value(graph, y, out);
    graph.remove_node(add);
    graph.remove_node(matmul);
    // Keep the Add's output name for readers of the model (a graph output already has it).
    if (!output) graph.rename_value(out, name);
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_matmul_add_into_gemm_pass() {
  return std::make_unique<FuseMatMulAddIntoGemmPass>();
}

}  // namespace onnxkit
