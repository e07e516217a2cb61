// Pass fuse_transpose_into_gemm: a 2-D Transpose (perm [1, 0]) whose only reader is Gemm's
// input A or B disappears into the Gemm by toggling transA / transB.
#include "passes/passes.h"

namespace onnxkit {
namespace {

// True when `transpose` swaps the two axes of a matrix.
bool swaps_matrix_axes(const Node* transpose) {
  if (const Attribute* perm = transpose->find_attribute("perm")) {
    return perm->type == AttrType::kInts && perm->ints == std::vector<int64_t>{1, 0};
  }
  // No perm: the axes are reversed, which is [1, 0] only for a known rank of 2.
  const Value* x = transpose->input(0);
  return x && x->type().is_tensor() && x->type().shape && x->type().shape->size() == 2;
}

bool fuse(Graph& graph, Node* transpose, const PassContext& context) {
  if (!swaps_matrix_axes(transpose)) return false;
  Value* x = transpose->input(0);
  Value* t = transpose->output(0);
  if (!x || !t || t->uses().size() != 1 || is_graph_output(t) || kept(context, t)) {
    return false;
  }
  const Use use = t->uses()[0];
  Node* gemm = use.node;
  if (!is_onnx_op(gemm, "Gemm") || gemm->graph() != &graph || use.input > 1) return false;
  const char* flag = use.input == 0 ? "transA" : "transB";
  const Attribute* current = gemm->find_attribute(flag);
  if (current && current->type != AttrType::kInt) return false;
  gemm->set_attribute(int_attribute(flag, current && current->i != 0 ? 0 : 1));
  graph.set_node_input(gemm, use.input, x);
  graph.remove_node(transpose);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_transpose_into_gemm_pass() {
  return make_rule_pass("fuse_transpose_into_gemm", {"Transpose"}, fuse);
}

}  // namespace onnxkit
