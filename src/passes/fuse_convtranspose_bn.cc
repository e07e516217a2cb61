// Pass fuse_convtranspose_bn: BatchNormalization (inference mode) after ConvTranspose is
// folded into its weights and bias: with a = scale / sqrt(var + eps) per output channel,
//   W' = W * a,   B' = (B - mean) * a + bias.
// ConvTranspose weights are [C_in, C_out / group, k...]: output channel o = g * (C_out /
// group) + j is W's dim-1 index j within input-channel group g.
// New initializers are created (the old ones may be shared); remove_unused_initializers
// drops the originals once nothing reads them.
#include <cmath>
#include <optional>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool is_onnx_op(const Node* node, std::string_view op_type) {
  return node && node->op_type() == op_type &&
         (node->domain().empty() || node->domain() == "ai.onnx");
}

int64_t int_attr(const Node* node, std::string_view name, int64_t fallback) {
  const Attribute* a = node->find_attribute(name);
  return a && a->type == AttrType::kInt ? a->i : fallback;
}

bool kept(const PassContext& context, const Value* value) {
  return context.keep_values.count(value->name()) > 0;
}

// The elements of a floating-point tensor, as doubles.
std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> values(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), "fuse_convtranspose_bn", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(p[i]);
  });
  return values;
}

Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  dispatch_float(dtype, "fuse_convtranspose_bn", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

// A constant float vector of exactly `n` elements (BatchNormalization's [C] parameters).
std::optional<std::vector<double>> channel_param(const Value* value, int64_t n,
                                                 const PassContext& context) {
  const Tensor* t = constant_value(value, context);
  if (!t || !dtype_is_float(t->dtype()) || t->rank() != 1 || t->numel() != n) return std::nullopt;
  return to_doubles(*t);
}

// True when `bn` computes Y with its stored statistics (not batch statistics).
bool inference_mode(const Node* bn, int64_t opset) {
  if (opset >= 14 && int_attr(bn, "training_mode", 0) != 0) return false;
  // Before opset 14 declaring the extra outputs is what selects training mode.
  for (size_t i = 1; i < bn->outputs().size(); ++i) {
    if (bn->output(i)) return false;
  }
  // Opsets 1-6: is_test defaults to 0 (training); only an explicit is_test=1 is sure.
  if (opset < 7 && int_attr(bn, "is_test", 0) == 0) return false;
  // spatial=0 (before opset 9) normalizes per activation, not per channel.
  if (opset < 9 && int_attr(bn, "spatial", 1) != 1) return false;
  return true;
}

class FuseConvTransposeBnPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_convtranspose_bn"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    // Only the BatchNormalization visited is removed, so the snapshot stays valid.
    for (Node* bn : graph.nodes()) changes += fuse(graph, bn, context) ? 1 : 0;
    return changes;
  }

 private:
  static bool fuse(Graph& graph, Node* bn, const PassContext& context) {
    if (!is_onnx_op(bn, "BatchNormalization") || bn->inputs().size() != 5) return false;
    if (!inference_mode(bn, context.opset(""))) return false;
    Value* x = bn->input(0);
    Value* y = bn->output(0);
    if (!x || !y) return false;
    Node* conv = x->producer();
    if (!is_onnx_op(conv, "ConvTranspose") || conv->graph() != &graph) return false;
    // The ConvTranspose's output changes meaning, so nothing else may read it.
    if (x->uses().size() != 1 || is_graph_output(x) || kept(context, x) || kept(context, y)) {
      return false;
    }
    if (!can_replace(y, x)) return false;

    const Tensor* w = constant_value(conv->input(1), context);
    if (!w || !dtype_is_float(w->dtype()) || w->rank() < 3) return false;
    const int64_t group = int_attr(conv, "group", 1);
    const int64_t in_channels = w->shape()[0];
    const int64_t group_out = w->shape()[1];  // output channels per group
    if (group <= 0 || in_channels <= 0 || group_out <= 0 || in_channels % group != 0) return false;
    const int64_t channels = group * group_out;
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
    std::vector<double> weights = to_doubles(*w);
    const int64_t kernel = static_cast<int64_t>(weights.size()) / (in_channels * group_out);
    const int64_t group_in = in_channels / group;
    for (int64_t i = 0; i < in_channels; ++i) {
      for (int64_t j = 0; j < group_out; ++j) {
        const double f = factor[(i / group_in) * group_out + j];
        double* row = weights.data() + (i * group_out + j) * kernel;
        for (int64_t k = 0; k < kernel; ++k) row[k] *= f;
      }
    }
    std::vector<double> new_bias = b ? to_doubles(*b) : std::vector<double>(channels, 0.0);
    for (int64_t c = 0; c < channels; ++c) {
      new_bias[c] = (new_bias[c] - (*mean)[c]) * factor[c] + (*bias)[c];
    }

    const std::string& base = conv->input(1)->name();
    Value* new_w = graph.add_initializer(graph.unique_name(base + "_bn"),
                                         from_doubles(w->dtype(), w->shape(), weights));
    Value* new_b = graph.add_initializer(graph.unique_name(base + "_bn_bias"),
                                         from_doubles(w->dtype(), {channels}, new_bias));
    graph.set_node_input(conv, 1, new_w);
    graph.set_node_input(conv, 2, new_b);
    replace_value(graph, y, x);
    graph.remove_node(bn);
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_convtranspose_bn_pass() {
  return std::make_unique<FuseConvTransposeBnPass>();
}

}  // namespace onnxkit
