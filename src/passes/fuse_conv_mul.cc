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

class FuseConvMulPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_conv_mul"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    // Only the Mul visited is removed, so the snapshot stays valid.
    for (Node* mul : graph.nodes()) changes += fuse(graph, mul, context) ? 1 : 0;
    return changes;
  }

 private:
  static bool fuse(Graph& graph, Node* mul, const PassContext& context) {
    if (!is_onnx_op(mul, "Mul") || mul->inputs().size() != 2 || !mul->output(0)) return false;
    for (size_t side = 0; side < 2; ++side) {
      Value* x = mul->input(side);
      Node* conv = x ? x->producer() : nullptr;
      if (!is_onnx_op(conv, "Conv") || conv->graph() != &graph) continue;
      const Tensor* c = constant_value(mul->input(1 - side), context);
      if (c) return fold(graph, conv, mul, x, *c, context);
    }
    return false;
  }

  static bool fold(Graph& graph, Node* conv, Node* mul, Value* x, const Tensor& c,
                   const PassContext& context) {
    Value* y = mul->output(0);
    // The Conv's output changes meaning, so nothing else may read it.
    if (x->uses().size() != 1 || is_graph_output(x) || kept(context, x) || kept(context, y)) {
      return false;
    }
    if (!can_replace(y, x)) return false;
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
    replace_value(graph, y, x);
    graph.remove_node(mul);
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_mul_pass() {
  return std::make_unique<FuseConvMulPass>();
}

}  // namespace onnxkit
