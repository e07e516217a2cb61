// Pass fuse_conv_add: Add of a constant that is one value per output channel (scalar,
// [C,1,1], [1,C,1,1], ...) to a Conv output becomes (part of) the Conv's bias: B' = B + c.
// A new bias initializer is created (the old one may be shared).
#include <optional>

#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool fuse_conv_add(Graph& graph, Node* add, const PassContext& context) {
  auto match = match_conv_with_constant(graph, add, context);
  if (!match) return false;
  Node* conv = match->conv;
  // W gives the output rank, channels and dtype; its values are not needed, so its
  // static type will do when it is not a constant.
  const Value* w_value = conv->input(1);
  if (!w_value) return false;
  DType dtype = DType::kUndefined;
  size_t rank = 0;
  int64_t channels = -1;
  if (const Tensor* w = constant_value(w_value, context)) {
    dtype = w->dtype();
    rank = w->rank();
    channels = rank > 0 ? w->shape()[0] : -1;
  } else if (w_value->type().is_tensor() && w_value->type().shape) {
    const auto& dims = *w_value->type().shape;
    dtype = w_value->type().elem_type;
    rank = dims.size();
    channels = rank > 0 ? dims[0].value : -1;
  }
  const Tensor& c = *match->constant;
  if (!dtype_is_float(dtype) || rank < 3 || channels <= 0 || c.dtype() != dtype) return false;
  const Tensor* b = nullptr;
  if (conv->input(2)) {
    b = constant_value(conv->input(2), context);
    if (!b || b->dtype() != dtype || b->numel() != channels) return false;
  }
  auto shift = per_channel(c, rank, channels);
  if (!shift) return false;

  std::vector<double> bias = b ? to_doubles(*b) : std::vector<double>(channels, 0.0);
  for (int64_t i = 0; i < channels; ++i) bias[i] += (*shift)[i];
  const std::string base = conv->input(2) ? conv->input(2)->name() : w_value->name() + "_bias";
  Value* new_b = graph.add_initializer(graph.unique_name(base + "_add"),
                                       from_doubles(dtype, {channels}, bias));
  graph.set_node_input(conv, 2, new_b);
  remove_folded_binary(graph, add, match->conv_output);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_add_pass() {
  return make_rule_pass("fuse_conv_add", {"Add"}, fuse_conv_add);
}

}  // namespace onnxkit
