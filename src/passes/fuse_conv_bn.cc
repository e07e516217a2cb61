// Passes fuse_conv_bn and fuse_convtranspose_bn: BatchNormalization (inference mode) after a
// Conv / ConvTranspose is folded into its weights and bias: with a = scale / sqrt(var + eps)
// per output channel,
//   W' = W * a,   B' = (B - mean) * a + bias.
// Conv weights are [C_out, C_in / group, k...]: output channel o is W's dim-0 index o.
// ConvTranspose weights are [C_in, C_out / group, k...]: output channel o = g * (C_out /
// group) + j is W's dim-1 index j within input-channel group g.
// New initializers are created (the old ones may be shared); remove_unused_initializers
// drops the originals once nothing reads them. Two passes (two names, each skippable) over
// one rule: only the weight layout differs.
#include <cmath>
#include <optional>

#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// Folds BatchNormalization `bn` into the Conv (or, `transposed`, ConvTranspose) it reads.
bool fuse(Graph& graph, Node* bn, const PassContext& context, bool transposed) {
  if (bn->inputs().size() != 5) return false;
  if (!inference_mode(bn, context.opset(""))) return false;
  Value* x = bn->input(0);
  Value* y = bn->output(0);
  if (!x || !y) return false;
  Node* conv = x->producer();
  if (!is_onnx_op(conv, transposed ? "ConvTranspose" : "Conv") || conv->graph() != &graph)
    return false;
  // The convolution's output changes meaning, so nothing else may read it.
  if (x->uses().size() != 1 || is_graph_output(x) || kept(context, x) || kept(context, y)) {
    return false;
  }
  if (!can_replace(y, x)) return false;

  const Tensor* w = constant_value(conv->input(1), context);
  if (!w || !dtype_is_float(w->dtype()) || w->rank() < 3) return false;
  const int64_t group = transposed ? int_attr(conv, "group", 1) : 1;
  const int64_t in_channels = w->shape()[0];  // ConvTranspose only
  const int64_t group_out = w->shape()[1];    // ConvTranspose only: outputs per group
  if (transposed &&
      (group <= 0 || in_channels <= 0 || group_out <= 0 || in_channels % group != 0)) {
    return false;
  }
  const int64_t channels = transposed ? group * group_out : w->shape()[0];
  if (channels <= 0) return false;
  const Tensor* b = nullptr;
  if (conv->input(2)) {
    b = constant_value(conv->input(2), context);
    if (!b || b->dtype() != w->dtype() || b->numel() != channels) return false;
  }
  auto scale = channel_param(bn->input(1), channels, context);
  auto bias = channel_param(bn->input(2), channels, context);
  auto mean = channel_param(bn->input(3), channels, context);
  auto var = channel_param(bn->input(4), channels, context);
  if (!scale || !bias || !mean || !var) return false;
  const Attribute* eps_attr = bn->find_attribute("epsilon");
  const double eps = eps_attr && eps_attr->type == AttrType::kFloat ? eps_attr->f : 1e-5;

  std::vector<double> factor(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double denom = (*var)[c] + eps;
    if (!(denom > 0)) return false;  // NaN or division by zero: leave it to the runtime
    factor[c] = (*scale)[c] / std::sqrt(denom);
    if (!std::isfinite(factor[c])) return false;
  }
  // One factor per run of W: a run is an output channel's weights (Conv), or one
  // kernel window of (input channel, output channel of its group) for ConvTranspose.
  std::vector<double> runs;
  if (transposed) {
    const int64_t group_in = in_channels / group;
    runs.reserve(static_cast<size_t>(in_channels * group_out));
    for (int64_t i = 0; i < in_channels; ++i) {
      for (int64_t j = 0; j < group_out; ++j)
        runs.push_back(factor[(i / group_in) * group_out + j]);
    }
  } else {
    runs = factor;
  }
  std::vector<double> new_bias = b ? to_doubles(*b) : std::vector<double>(channels, 0.0);
  for (int64_t c = 0; c < channels; ++c) {
    new_bias[c] = (new_bias[c] - (*mean)[c]) * factor[c] + (*bias)[c];
  }

  const std::string& base = conv->input(1)->name();
  Value* new_w = graph.add_initializer(graph.unique_name(base + "_bn"), scale_runs(*w, runs));
  Value* new_b = graph.add_initializer(graph.unique_name(base + "_bn_bias"),
                                       from_doubles(w->dtype(), {channels}, new_bias));
  graph.set_node_input(conv, 1, new_w);
  graph.set_node_input(conv, 2, new_b);
  replace_value(graph, y, x);
  graph.remove_node(bn);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_bn_pass() {
  return make_rule_pass("fuse_conv_bn", {"BatchNormalization"},
                        [](Graph& graph, Node* bn, PassContext& context) {
                          return fuse(graph, bn, context, /*transposed=*/false);
                        });
}

std::unique_ptr<GraphPass> make_fuse_convtranspose_bn_pass() {
  return make_rule_pass("fuse_convtranspose_bn", {"BatchNormalization"},
                        [](Graph& graph, Node* bn, PassContext& context) {
                          return fuse(graph, bn, context, /*transposed=*/true);
                        });
}

}  // namespace onnxkit
