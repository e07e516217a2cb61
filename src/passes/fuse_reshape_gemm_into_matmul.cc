// Pass fuse_reshape_gemm_into_matmul: a Gemm applied to rows of a higher-rank tensor, as
// exporters write a linear layer through a 2-D matrix product (torch.addmm, GPT-2's
// Conv1D):
//
//   X [d0, ..., dk, K] -> Reshape [-1, K] -> Gemm(W [K, N], bias) -> Reshape [d0, ..., dk, N]
//
// becomes MatMul(X, W) followed by Add(bias) (or the MatMul alone without a bias): two nodes
// instead of three, and no shape computation for the second Reshape. MatMul treats the
// leading dims as a batch of rows, which is what the flattening did.
//
// It applies when the first Reshape flattens every leading dim into one (target [-1, K],
// or the product when all are known), the Gemm is a plain product (no transposes,
// alpha = beta = 1, constant W and a bias that broadcasts as a row), each intermediate has
// one reader, and the second Reshape's inferred shape is X's leading dims followed by N
// (known dims equal, symbolic ones by name: the same symbol is the same size at run time).
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool same_dim(const Dim& a, const Dim& b) {
  if (a.is_known() || b.is_known()) return a.value == b.value;
  return a.is_symbolic() && b.is_symbolic() && a.param == b.param;
}

class FuseReshapeGemmIntoMatMulPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_reshape_gemm_into_matmul"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    std::vector<Node*> gemms;
    for (Node* node : graph.nodes()) {
      if (is_onnx_op(node, "Gemm")) gemms.push_back(node);
    }
    for (Node* gemm : gemms) changes += rewrite(graph, gemm, context) ? 1 : 0;
    return changes;
  }

 private:
  static bool rewrite(Graph& graph, Node* gemm, const PassContext& context) {
    if (gemm->inputs().size() < 2 || gemm->outputs().size() != 1 || !gemm->output(0)) {
      return false;
    }
    if (int_attr(gemm, "transA", 0) != 0 || int_attr(gemm, "transB", 0) != 0) return false;
    for (const char* scale : {"alpha", "beta"}) {
      if (const Attribute* a = gemm->find_attribute(scale); a && a->f != 1.0f) return false;
    }
    // The first Reshape: X -> [rows, K].
    Value* rows = gemm->input(0);
    Node* flatten = rows ? rows->producer() : nullptr;
    if (!is_onnx_op(flatten, "Reshape") || flatten->graph() != &graph) return false;
    if (rows->uses().size() != 1 || is_graph_output(rows) || kept(context, rows)) return false;
    Value* x = flatten->input(0);
    const Tensor* target = constant_value(flatten->input(1), context);
    const Tensor* w = constant_value(gemm->input(1), context);
    if (!x || !target || !w || w->rank() != 2) return false;
    const ValueType& x_type = x->type();
    if (!x_type.is_tensor() || !x_type.shape || x_type.shape->size() < 3) return false;
    const std::vector<Dim>& x_dims = *x_type.shape;
    const int64_t k = w->shape()[0], n = w->shape()[1];
    if (!x_dims.back().is_known() || x_dims.back().value != k) return false;
    if (!flattens_leading_dims(*target, x_dims, k)) return false;
    // The bias must broadcast over rows as a row vector (or a scalar).
    Value* bias = gemm->inputs().size() > 2 ? gemm->input(2) : nullptr;
    if (bias) {
      const Tensor* c = constant_value(bias, context);
      if (!c || c->rank() > 2 || (c->rank() == 2 && c->shape()[0] != 1)) return false;
      if (c->rank() >= 1 && c->shape().back() != n && c->shape().back() != 1) return false;
    }
    // The second Reshape: [rows, N] -> X's leading dims + [N].
    Value* product = gemm->output(0);
    if (product->uses().size() != 1 || is_graph_output(product) || kept(context, product)) {
      return false;
    }
    Node* unflatten = product->uses()[0].node;
    if (!is_onnx_op(unflatten, "Reshape") || product->uses()[0].input != 0) return false;
    Value* y = unflatten->output(0);
    const ValueType& y_type = y->type();
    if (!y_type.is_tensor() || !y_type.shape || y_type.shape->size() != x_dims.size()) return false;
    const std::vector<Dim>& y_dims = *y_type.shape;
    for (size_t i = 0; i + 1 < x_dims.size(); ++i) {
      if (!same_dim(x_dims[i], y_dims[i])) return false;
    }
    if (!y_dims.back().is_known() || y_dims.back().value != n) return false;

    const std::string base = y->name();
    Node* matmul = graph.add_node("MatMul", {x, gemm->input(1)},
                                  {graph.unique_name(base + "_matmul")}, "", gemm->name(), gemm);
    Value* out = matmul->output(0);
    if (bias) {
      out->set_type(y_type);
      Node* add = graph.add_node("Add", {out, bias}, {graph.unique_name(base + "_bias")}, "",
                                 graph.unique_name(gemm->name() + "_bias"), gemm);
      out = add->output(0);
    }
    out->set_type(y_type);
    const bool output = is_graph_output(y);
    replace_value(graph, y, out);
    graph.remove_node(unflatten);
    graph.remove_node(gemm);
    if (is_unused(rows)) graph.remove_node(flatten);
    if (!output) graph.rename_value(out, base);
    return true;
  }

  // True when `target` reshapes X (dims `x_dims`, last = k) to [product of the rest, k].
  static bool flattens_leading_dims(const Tensor& target, const std::vector<Dim>& x_dims,
                                    int64_t k) {
    if (target.rank() != 1 || target.numel() != 2 || target.dtype() != DType::kInt64) {
      return false;
    }
    const int64_t* t = target.data<int64_t>();
    if (t[1] != k) return false;
    if (t[0] == -1) return k > 0;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < x_dims.size(); ++i) {
      if (!x_dims[i].is_known()) return false;
      rows *= x_dims[i].value;
    }
    return t[0] == rows;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_reshape_gemm_into_matmul_pass() {
  return std::make_unique<FuseReshapeGemmIntoMatMulPass>();
}

}  // namespace onnxkit
