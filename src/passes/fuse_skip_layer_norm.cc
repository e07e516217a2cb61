// Pass fuse_skip_layer_norm: a residual Add feeding a layer normalization over the last axis
//   S = Add(X, Skip) [with X = Add(X', bias[C]) read only here];  Y = LayerNormalization(S)
// becomes com.onnxkit SkipLayerNormalization(X, Skip, Gamma, Beta, Bias) -> Y, Sum
// (ops/fused_ops.h). When S has other readers (the next residual), they read the Sum output.
//
// The contract wants Skip of X's shape: the two Add operands must have the same shape by
// their types (same numbers or same symbols), so a broadcasting Add (position embeddings
// [1, S, C] added to [B, S, C]) is never fused. Gamma and Beta must be [C].
#include "ops/fused_ops.h"
#include "passes/passes.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

bool is_layer_norm(const Node* node, const PassContext& context) {
  if (!node) return false;
  if (node->domain() == kOnnxkitDomain) return node->op_type() == "LayerNormalization";
  return is_onnx_op(node, "LayerNormalization") && context.opset("") >= 17;
}

// True when `value` is a 1-D tensor of `channels` elements of `dtype`.
bool is_channel_vector(const Value* value, int64_t channels, DType dtype) {
  if (value && value->has_initializer()) {
    const Tensor& t = value->initializer();
    return t.rank() == 1 && t.shape()[0] == channels && t.dtype() == dtype;
  }
  const auto dims = dims_of(value);
  return dims && dims->size() == 1 && (*dims)[0].is_known() && (*dims)[0].value == channels &&
         dtype_of(value) == dtype;
}

bool fuse(const FusionScope& scope, Node* norm) {
  const PassContext& context = scope.context();
  if (!is_layer_norm(norm, context)) return false;
  for (size_t i = 1; i < norm->outputs().size(); ++i) {
    if (norm->output(i) && !is_unused(norm->output(i))) return false;
  }
  Value* sum = norm->input(0);
  Node* add = scope.producer(sum, "Add");
  const auto dims = dims_of(sum);
  const DType dtype = dtype_of(sum);
  if (!add || !dims || dims->empty() || !dims->back().is_known() || !dtype_is_float(dtype)) {
    return false;
  }
  const auto rank = static_cast<int64_t>(dims->size());
  const int64_t axis = int_attr(norm, "axis", -1);
  if (axis != -1 && axis != rank - 1) return false;
  const int64_t channels = dims->back().value;
  Value* gamma = norm->input(1);
  Value* beta = norm->input(2);
  if (!is_channel_vector(gamma, channels, dtype) ||
      (beta && !is_channel_vector(beta, channels, dtype))) {
    return false;
  }
  // Equal operand shapes make the sum's shape theirs (its own type may carry a stale symbol).
  if (!add->input(0) || !add->input(1) || !same_shape(add->input(0), add->input(1)) ||
      dtype_of(add->input(0)) != dtype || dtype_of(add->input(1)) != dtype) {
    return false;
  }

  // A bias Add on either operand, read only by the residual Add, joins the fused op.
  std::vector<Node*> matched{norm, add};
  Value* x = add->input(0);
  Value* skip = add->input(1);
  Value* bias = nullptr;
  for (size_t side = 0; side < 2 && !bias; ++side) {
    Value* operand = add->input(side);
    Node* bias_add = scope.single_use(operand) ? scope.producer(operand, "Add") : nullptr;
    if (!bias_add || !bias_add->input(0) || !bias_add->input(1)) continue;
    for (size_t b = 0; b < 2; ++b) {
      Value* candidate = bias_add->input(b);
      Value* main = bias_add->input(1 - b);
      if (constant_value(candidate, context) && is_channel_vector(candidate, channels, dtype) &&
          same_shape(main, add->input(1 - side))) {
        x = main;
        skip = add->input(1 - side);
        bias = candidate;
        matched.push_back(bias_add);
        break;
      }
    }
  }

  if (!scope.replaceable(sum) || !scope.replaceable(norm->output(0))) return false;
  Graph& graph = scope.graph();
  import_onnxkit_domain(*context.model);
  const bool wants_sum = !scope.single_use(sum);
  std::vector<Value*> inputs{x, skip, gamma};
  if (beta || bias) inputs.push_back(beta);
  if (bias) inputs.push_back(bias);
  std::vector<std::string> outputs{graph.unique_name(norm->output(0)->name() + "_fused")};
  if (wants_sum) outputs.push_back(graph.unique_name(sum->name() + "_fused"));
  Node* fused = graph.add_node("SkipLayerNormalization", inputs, outputs,
                               std::string(kOnnxkitDomain), norm->name(), norm);
  if (const Attribute* epsilon = norm->find_attribute("epsilon")) {
    fused->set_attribute(float_attribute("epsilon", epsilon->f));
  }
  std::vector<std::pair<Value*, Value*>> replaced{{norm->output(0), fused->output(0)}};
  if (wants_sum) replaced.emplace_back(sum, fused->output(1));
  replace_subgraph(graph, replaced, matched);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_skip_layer_norm_pass() {
  return make_fusion_pass("fuse_skip_layer_norm", fuse);
}

}  // namespace onnxkit
