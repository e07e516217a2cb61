// Pass fuse_conv_mul: Mul of a Conv output by a constant that is one value per output
// channel (scalar, [C,1,1], [1,C,1,1], ...) is folded into the Conv: W' = W * s, B' = B * s.
// New initializers are created (the old ones may be shared).
#include <cmath>
#include <optional>

#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool fuse_conv_mul(Graph& graph, Node* mul, const PassContext& context) {
  auto match = match_conv_with_constant(graph, mul, context);
  if (!match) return false;
  Node* conv = match->conv;
  const Tensor& c = *match->constant;
  const Tensor* w = constant_value(conv->input(1), context);
  if (!w || !dtype_is_float(w->dtype()) || w->rank() < 3 || c.dtype() != w->dtype()) {
    return false;
  }
  const int64_t channels = w->shape()[0];
  if (channels <= 0) return false;
  const Tensor* b = nullptr;
  if (conv->input(2)) {
    b = constant_value(conv->input(2), context);
    if (!b || b->dtype() != w->dtype() || b->numel() != channels) return false;
  }
  auto factor = per_channel(c, w->rank(), channels);
  if (!factor) return false;
  // inf or NaN folded into W differs from scaling the sum (e.g. inf * 0 per term).
  for (double f : *factor) {
    if (!std::isfinite(f)) return false;
  }

  const std::string& base = conv->input(1)->name();
  Value* new_w = graph.add_initializer(graph.unique_name(base + "_mul"), scale_runs(*w, *factor));
  graph.set_node_input(conv, 1, new_w);
  if (b) {
    std::vector<double> bias = to_doubles(*b);
    for (int64_t i = 0; i < channels; ++i) bias[i] *= (*factor)[i];
    Value* new_b = graph.add_initializer(graph.unique_name(conv->input(2)->name() + "_mul"),
                                         from_doubles(b->dtype(), b->shape(), bias));
    graph.set_node_input(conv, 2, new_b);
  }
  remove_folded_binary(graph, mul, match->conv_output);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_mul_pass() {
  return make_rule_pass("fuse_conv_mul", {"Mul"}, fuse_conv_mul);
}

}  // namespace onnxkit
