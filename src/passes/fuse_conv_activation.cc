// Pass fuse_conv_activation: a Conv (or FusedConv) followed by an Add of a tensor of exactly
// its output's shape (the residual of ResNet-style blocks) and/or an activation becomes one
// com.onnxkit FusedConv: act(Conv(X, W, B) + Z). A FusedConv takes one Z, and nothing
// after its activation; an Add of a per-channel constant to a FusedConv without an
// activation goes into its bias instead (the basic level does that for plain Conv).
// The intermediate values must have no other reader and not be graph outputs.
#include <unordered_set>

#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

using namespace linear_fusion;

class FuseConvActivationPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_conv_activation"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    // Fusions remove nodes that may still be ahead in the snapshot.
    std::unordered_set<const Node*> removed;
    for (Node* node : graph.nodes()) {
      if (removed.count(node)) continue;
      if (!is_onnx_op(node, "Conv") && !is_onnxkit_op(node, "FusedConv")) continue;
      // Absorb what follows until nothing more fits: Add, then the activation.
      while (Node* next = fuse_next(graph, node, context, removed)) {
        node = next;
        ++changes;
      }
    }
    return changes;
  }

 private:
  // Absorbs the reader of `conv`'s output when it fits; returns the FusedConv, or nullptr.
  static Node* fuse_next(Graph& graph, Node* conv, const PassContext& context,
                         std::unordered_set<const Node*>& removed) {
    Value* y = conv->output(0);
    if (!y || conv->outputs().size() != 1 || has_activation(conv)) return nullptr;
    if (!float_conv(conv, y)) return nullptr;
    if (auto activation = match_activation(y, context)) {
      Node* fused = as_fused_conv(graph, conv, context, removed);
      set_activation(fused, *activation);
      absorb(graph, fused, activation->nodes, removed);
      return fused;
    }
    if (!fusable_intermediate(y, context)) return nullptr;
    Node* add = y->uses()[0].node;
    if (!is_onnx_op(add, "Add") || add->graph() != &graph || add->inputs().size() != 2 ||
        !add->output(0)) {
      return nullptr;
    }
    Value* other = add->input(1 - y->uses()[0].input);
    if (!other) return nullptr;
    // The residual: a tensor of exactly Y's shape becomes Z.
    if (!conv->input(3) && same_tensor_type(y->type(), other->type())) {
      Node* fused = as_fused_conv(graph, conv, context, removed);
      while (fused->inputs().size() < 3) graph.add_node_input(fused, nullptr);
      graph.add_node_input(fused, other);
      absorb(graph, fused, {add}, removed);
      return fused;
    }
    // A per-channel constant: into the bias of a FusedConv (Conv: fuse_conv_add's job).
    if (is_onnxkit_op(conv, "FusedConv")) {
      if (fold_bias(graph, conv, other, context)) {
        absorb(graph, conv, {add}, removed);
        return conv;
      }
    }
    return nullptr;
  }

  // Conv over a float type (the only ones FusedConv takes).
  static bool float_conv(const Node* conv, const Value* y) {
    if (y->type().is_tensor() && y->type().elem_type != DType::kUndefined) {
      return dtype_is_float(y->type().elem_type);
    }
    const Value* w = conv->input(1);
    if (!w) return false;
    if (w->has_initializer()) return dtype_is_float(w->initializer().dtype());
    return w->type().is_tensor() && dtype_is_float(w->type().elem_type);
  }

  static Node* as_fused_conv(Graph& graph, Node* conv, const PassContext& context,
                             std::unordered_set<const Node*>& removed) {
    if (is_onnxkit_op(conv, "FusedConv")) return conv;
    removed.insert(conv);
    return promote_to_onnxkit(graph, conv, "FusedConv", /*copy_attributes=*/true, context);
  }

  static void absorb(Graph& graph, Node* fused, const std::vector<Node*>& chain,
                     std::unordered_set<const Node*>& removed) {
    removed.insert(chain.begin(), chain.end());
    absorb_chain(graph, fused, chain);
  }

  // B' = B + c for a constant c that is one value per output channel.
  static bool fold_bias(Graph& graph, Node* conv, const Value* shift_value,
                        const PassContext& context) {
    const Tensor* shift = constant_value(shift_value, context);
    const Value* y = conv->output(0);
    if (!shift || !y->type().is_tensor() || !y->type().shape) return false;
    const auto& dims = *y->type().shape;
    if (dims.size() < 3 || !dims[1].is_known()) return false;
    const int64_t channels = dims[1].value;
    const DType dtype = y->type().elem_type;
    if (shift->dtype() != dtype) return false;
    auto per_channel_shift = per_channel(*shift, dims.size(), channels);
    if (!per_channel_shift) return false;
    std::vector<double> bias(static_cast<size_t>(channels), 0.0);
    if (Value* b = conv->input(2)) {
      const Tensor* old = constant_value(b, context);
      if (!old || old->dtype() != dtype || old->numel() != channels) return false;
      bias = to_doubles(*old);
    }
    for (int64_t i = 0; i < channels; ++i) bias[i] += (*per_channel_shift)[i];
    const std::string base =
        conv->input(2) ? conv->input(2)->name() : conv->input(1)->name() + "_bias";
    Value* new_b = graph.add_initializer(graph.unique_name(base + "_add"),
                                         from_doubles(dtype, {channels}, bias));
    Value* old_b = conv->input(2);
    while (conv->inputs().size() < 3) graph.add_node_input(conv, nullptr);
    graph.set_node_input(conv, 2, new_b);
    drop_if_unused_initializer(graph, old_b);
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_activation_pass() {
  return std::make_unique<FuseConvActivationPass>();
}

}  // namespace onnxkit
