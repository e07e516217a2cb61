// Pass max_min_into_clip: Max(X, c) with a one-element constant c becomes Clip(X, min=c), and
// Min(X, c) becomes Clip(X, max=c). Exact: Clip with one bound is that Max or Min, NaN
// included (both propagate it). Converted TensorFlow nets clamp every activation this way
// (openWakeWord's embedding net: Conv, LeakyRelu, Max(., c) x 19); a Clip is an activation
// that runtimes fuse or run as a fast elementwise kernel, where a broadcasting Max is not.
// Only when the broadcast keeps X's shape (c's rank at most X's), for the float types
// (which Max and Clip share in every opset), from opset 12 (Clip's bounds are inputs from
// 11; 12 widened its types; the pass keeps to 12+ so one form serves all).
#include <cstring>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool float_type(DType dtype) {
  return dtype == DType::kFloat || dtype == DType::kFloat16 || dtype == DType::kDouble;
}

size_t rewrite(Graph& graph, Node* node, PassContext& context) {
  if (context.opset("") < 12 || node->inputs().size() != 2 || node->outputs().size() != 1) {
    return 0;
  }
  Value* y = node->output(0);
  if (!y || !node->input(0) || !node->input(1) || kept(context, y)) return 0;
  // Which input is the bound: a one-element constant (when both are, folding's job).
  const Tensor* bound = nullptr;
  Value* x = nullptr;
  for (size_t i = 0; i < 2; ++i) {
    const Tensor* t = constant_value(node->input(i), context);
    if (t && t->numel() == 1 && !bound) {
      bound = t;
      x = node->input(1 - i);
    }
  }
  if (!bound || constant_value(x, context)) return 0;
  const ValueType& type = x->type();
  if (!type.is_tensor() || type.elem_type != bound->dtype() || !float_type(bound->dtype())) {
    return 0;
  }
  const std::optional<int64_t> rank = known_rank(x);
  if (!rank || static_cast<int64_t>(bound->rank()) > *rank) return 0;

  Tensor scalar(bound->dtype(), Shape{});
  std::memcpy(scalar.mutable_raw_data(), bound->raw_data(), bound->nbytes());
  const std::string stem = node->name().empty() ? y->name() : node->name();
  Value* limit = graph.add_initializer(graph.unique_name(stem + "_bound"), std::move(scalar));
  const bool lower = node->op_type() == "Max";
  std::vector<Value*> inputs{x, lower ? limit : nullptr};
  if (!lower) inputs.push_back(limit);
  Node* clip = graph.add_node("Clip", std::move(inputs), {graph.unique_name(y->name() + "_clip")},
                              "", graph.unique_name(stem + "_clip"), node);
  clip->output(0)->set_type(y->type());
  replace_value(graph, y, clip->output(0));
  graph.remove_node(node);
  return 1;
}

}  // namespace

std::unique_ptr<GraphPass> make_max_min_into_clip_pass() {
  return make_rule_pass("max_min_into_clip", {"Max", "Min"}, rewrite);
}

}  // namespace onnxkit
