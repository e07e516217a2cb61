// Pass fuse_integer_to_float: ONNX Runtime's dynamic quantization writes every quantized
// MatMul / Conv as MatMulInteger (ConvInteger) -> Cast(float) -> Mul(scale) [-> Add(bias)],
// the scale being a_scale * b_scale computed at run time. The chain becomes one
// com.onnxkit MatMulIntegerToFloat (ConvIntegerToFloat, ops/fused_ops.h), whose kernel
// writes the float output straight from the int32 accumulators instead of three passes
// over them. The float operations stay the same and in the same order: the fused op equals
// the chain bit for bit.
//
// Scale: per tensor, or per column (MatMul: [N], [1, N]) / per output channel (Conv:
// [M, 1, ...] or [1, M, 1, ...]) by its static shape. Bias: a constant of one value per
// column / channel (flattened to [N] / [M]). Intermediate values must have no other reader.
#include <algorithm>
#include <unordered_set>

#include "ops/fused_ops.h"
#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

using namespace linear_fusion;

// Which dim of the product is the channel a per-channel parameter follows, counted from
// the end: MatMul's last dim; Conv's dim 1 of rank `rank`.
struct ChannelAxis {
  int64_t from_end = 0;
  int64_t channels = 0;
};

// Whether a tensor of `dims` broadcasts onto the product (rank `rank`, when known) without
// changing its shape, with every dim 1 except possibly the channel axis: true with
// `per_channel` set when that dim holds the channels.
bool channel_param_shape(const std::vector<int64_t>& dims, std::optional<int64_t> rank,
                         const ChannelAxis& axis, bool& per_channel) {
  per_channel = false;
  const int64_t r = static_cast<int64_t>(dims.size());
  if (r > 1 && (!rank || r > *rank)) return false;
  for (int64_t i = 0; i < r; ++i) {
    const int64_t from_end = r - 1 - i;
    if (dims[i] == 1) continue;
    if (from_end != axis.from_end || dims[i] != axis.channels) return false;
    per_channel = true;
  }
  return true;
}

std::optional<std::vector<int64_t>> static_dims(const Value* value) {
  if (!value->type().is_tensor() || !value->type().shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim& dim : *value->type().shape) {
    if (!dim.is_known()) return std::nullopt;
    dims.push_back(dim.value);
  }
  return dims;
}

size_t fuse(Graph& graph, Node* product, PassContext& context,
            std::unordered_set<const Node*>& removed) {
  const bool conv = is_onnx_op(product, "ConvInteger");
  Value* y = product->output(0);
  const Value* w = product->input(1);
  if (!y || !w || !w->has_initializer() || w->initializer().rank() < 2) return 0;
  const Tensor& weights = w->initializer();
  if (!conv && weights.rank() != 2) return 0;
  ChannelAxis axis;
  std::optional<int64_t> rank;
  if (conv) {
    rank = weights.rank();
    axis = {rank.value() - 2, weights.shape()[0]};
  } else {
    rank = known_rank(product->input(0));
    axis = {0, weights.shape()[1]};
  }
  // Cast to float.
  if (!fusable_intermediate(y, context)) return 0;
  Node* cast = y->uses()[0].node;
  if (!is_onnx_op(cast, "Cast") || cast->graph() != &graph ||
      int_attr(cast, "to", 0) != static_cast<int64_t>(DType::kFloat) || !cast->output(0)) {
    return 0;
  }
  // Mul by the scale.
  Value* cast_out = cast->output(0);
  if (!fusable_intermediate(cast_out, context)) return 0;
  Node* mul = cast_out->uses()[0].node;
  if (!is_onnx_op(mul, "Mul") || mul->graph() != &graph || mul->inputs().size() != 2 ||
      !mul->output(0)) {
    return 0;
  }
  Value* scale = mul->input(1 - cast_out->uses()[0].input);
  const auto scale_dims = scale ? static_dims(scale) : std::nullopt;
  bool per_channel = false;
  if (!scale || !scale->type().is_tensor() || scale->type().elem_type != DType::kFloat ||
      !scale_dims || !channel_param_shape(*scale_dims, rank, axis, per_channel)) {
    return 0;
  }
  std::vector<Node*> chain{cast, mul};
  // Add of a constant bias.
  Value* bias = nullptr;
  Value* scaled = mul->output(0);
  if (fusable_intermediate(scaled, context)) {
    Node* add = scaled->uses()[0].node;
    const Value* other =
        add->inputs().size() == 2 ? add->input(1 - scaled->uses()[0].input) : nullptr;
    const Tensor* constant = other ? constant_value(other, context) : nullptr;
    bool bias_per_channel = false;
    if (is_onnx_op(add, "Add") && add->graph() == &graph && add->output(0) && constant &&
        constant->dtype() == DType::kFloat &&
        channel_param_shape(constant->shape(), rank, axis, bias_per_channel) &&
        (bias_per_channel || axis.channels == 1)) {
      if (constant->rank() == 1) {
        bias = const_cast<Value*>(other);
      } else {
        Tensor flat(DType::kFloat, {axis.channels});
        std::copy_n(constant->data<float>(), axis.channels, flat.mutable_data<float>());
        bias = graph.add_initializer(graph.unique_name(other->name() + "_flat"), std::move(flat));
      }
      chain.push_back(add);
    }
  }
  removed.insert(product);
  removed.insert(chain.begin(), chain.end());
  Node* fused =
      promote_to_onnxkit(graph, product, conv ? "ConvIntegerToFloat" : "MatMulIntegerToFloat",
                         /*copy_attributes=*/true, context);
  while (fused->inputs().size() < 4) graph.add_node_input(fused, nullptr);
  graph.add_node_input(fused, scale);
  if (bias) graph.add_node_input(fused, bias);
  absorb_chain(graph, fused, chain);
  return 1;
}

class FuseIntegerToFloatPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_integer_to_float"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    std::unordered_set<const Node*> removed;
    for (Node* node : graph.nodes()) {
      if (removed.count(node)) continue;
      if (!is_onnx_op(node, "MatMulInteger") && !is_onnx_op(node, "ConvInteger")) continue;
      changes += fuse(graph, node, context, removed);
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_integer_to_float_pass() {
  return std::make_unique<FuseIntegerToFloatPass>();
}

}  // namespace onnxkit
