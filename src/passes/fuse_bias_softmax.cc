// Pass fuse_bias_softmax: Softmax over the last axis of Add(X, Bias), where nothing else
// reads the sum, becomes com.onnxkit BiasSoftmax(X, Bias) (ops/fused_ops.h).
//
// X is the operand whose shape (by its type) is the sum's own, so Bias broadcasts to X as
// the contract wants. Before opset 13 Softmax flattens from `axis` on, which is the last axis
// only when `axis` is the last one.
#include "ops/fused_ops.h"
#include "passes/passes.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

bool fuse(const FusionScope& scope, Node* softmax) {
  const PassContext& context = scope.context();
  if (!is_onnx_op(softmax, "Softmax")) return false;
  Value* sum = softmax->input(0);
  Node* add = scope.single_use(sum) ? scope.producer(sum, "Add") : nullptr;
  const auto rank = rank_of(sum);
  if (!add || !rank || *rank == 0 || !add->input(0) || !add->input(1)) return false;
  const int64_t default_axis = context.opset("") >= 13 ? -1 : 1;
  const int64_t axis = int_attr(softmax, "axis", default_axis);
  if (axis != -1 && axis != *rank - 1) return false;
  const DType dtype = dtype_of(sum);
  if (!dtype_is_float(dtype)) return false;
  for (size_t side = 0; side < 2; ++side) {
    Value* x = add->input(side);
    Value* bias = add->input(1 - side);
    const auto bias_rank = rank_of(bias);
    if (!same_shape(x, sum) || !bias_rank || *bias_rank > *rank || dtype_of(x) != dtype ||
        dtype_of(bias) != dtype || !scope.replaceable(softmax->output(0))) {
      continue;
    }
    Graph& graph = scope.graph();
    import_onnxkit_domain(*context.model);
    Node* fused = graph.add_node("BiasSoftmax", {x, bias},
                                 {graph.unique_name(softmax->output(0)->name() + "_fused")},
                                 std::string(kOnnxkitDomain), softmax->name(), softmax);
    fused->set_attribute(int_attribute("axis", -1));
    replace_subgraph(graph, {{softmax->output(0), fused->output(0)}}, {softmax, add});
    return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_bias_softmax_pass() {
  return make_fusion_pass("fuse_bias_softmax", fuse);
}

}  // namespace onnxkit
