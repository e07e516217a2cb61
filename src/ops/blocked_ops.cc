// Reference kernels of the blocked-layout ops (ops/blocked_ops.h): the two reorders as
// element copies, and each Blocked* op as the reference kernel of its standard op between
// reorders, so the blocked graph computes exactly what the graph it came from did.
#include "ops/blocked_ops.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/resource_limits.h"
#include "ir/graph_clone.h"
#include "ops/conv_attributes.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// Copies between [N, C, HW] and [N, ceil(C/16), HW, 16], either direction; blocking writes
// zeros into the padding lanes.
template <typename S>
void reorder_elements(const S* src, S* dst, int64_t batch, int64_t channels, int64_t image,
                      bool to_blocked) {
  const int64_t blocks = channel_blocks(channels);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t p = 0; p < image; ++p) {
        for (int64_t i = 0; i < kChannelBlock; ++i) {
          const int64_t c = b * kChannelBlock + i;
          const int64_t blocked = ((n * blocks + b) * image + p) * kChannelBlock + i;
          const int64_t plain = (n * channels + c) * image + p;
          if (to_blocked) {
            dst[blocked] = c < channels ? src[plain] : S{};
          } else if (c < channels) {
            dst[plain] = src[blocked];
          }
        }
      }
    }
  }
}

// `x` blocked (to_blocked: plain, of any C), or unblocked into its first `channels` channels.
Tensor reorder_tensor(const Tensor& x, bool to_blocked, int64_t channels, std::string_view what) {
  const Shape plain = to_blocked ? x.shape() : plain_shape(x.shape(), channels);
  Tensor y(x.dtype(), to_blocked ? blocked_shape(x.shape()) : plain);
  if (x.dtype() == DType::kString) fail("{}: string tensors have no blocked layout", what);
  dispatch_storage(x.dtype(), what, [&](auto tag) {
    using S = typename decltype(tag)::type;
    reorder_elements<S>(x.data<S>(), y.mutable_data<S>(), plain[0], plain[1], plain[2] * plain[3],
                        to_blocked);
  });
  return y;
}

// Fails naming the node unless `x` fits the reorder (unblocking into `channels` channels;
// -1: every lane).
void check_reorder_input(const KernelContext& context, const Tensor& x, bool to_blocked,
                         int64_t channels = -1) {
  if (to_blocked && x.rank() != 4) {
    context.fail("X must be [N, C, H, W], got {}", shape_to_string(x.shape()));
  }
  if (!to_blocked && !is_blocked_shape(x.shape(), channels)) {
    if (channels < 0) {
      context.fail("X must be blocked [N, B, H, W, {}], got {}", kChannelBlock,
                   shape_to_string(x.shape()));
    }
    context.fail("X must be blocked [N, {}, H, W, {}] for {} channels, got {}",
                 channel_blocks(channels), kChannelBlock, channels, shape_to_string(x.shape()));
  }
}

template <bool kToBlocked>
class ReorderKernel : public OpKernel {
 public:
  explicit ReorderKernel(const KernelCreateContext& context)
      : channels_(kToBlocked ? -1 : context.attr_int(kChannelsAttribute, -1)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    check_reorder_input(context, x, kToBlocked, channels_);
    context.set_output(0, reorder_tensor(x, kToBlocked, channels_, context.node().describe()));
  }

 private:
  int64_t channels_;  // ReorderFromBlocked's C (-1: every lane)
};

// A Blocked* op run as its standard op: X (and Z) unblocked, the standard op's reference
// kernel on a private copy of the node, Y blocked again.
class BlockedReferenceKernel : public OpKernel {
 public:
  BlockedReferenceKernel(const KernelCreateContext& context, std::string_view standard) {
    const Node& node = context.node();
    std::string op(standard), domain;
    int64_t opset = 1;
    if (op == "FusedConv") {
      conv_ = true;
      group_ = context.attr_int("group", 1);
      // Conv when nothing is fused, so the plain case needs no FusedConv kernel.
      const bool fused = node.find_attribute("activation") || node.input(3);
      if (fused) {
        domain = kOnnxkitDomain;
        opset = kOnnxkitDomainVersion;
      } else {
        op = "Conv";
        opset = 11;
      }
    } else if (op == "MaxPool") {
      opset = 12;
    } else if (op == "AveragePool") {
      opset = 11;
    }
    std::vector<Value*> inputs;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      inputs.push_back(node.input(i) ? graph_.create_value("input" + std::to_string(i)) : nullptr);
    }
    node_ = graph_.add_node(op, inputs, {"output"}, domain, node.name());
    for (const Attribute& attribute : node.attributes()) {
      node_->set_attribute(clone_attribute(attribute, &graph_, {}));
    }
    kernel_ = context.registry().create_kernel(
        KernelCreateContext(*node_, opset, context.registry()), KernelTier::kReference);
  }

  void compute(KernelContext& context) const override {
    std::vector<RuntimeValue> values(context.num_inputs());
    std::vector<const RuntimeValue*> inputs(context.num_inputs(), nullptr);
    // A conv's channel counts come from W (X: W.shape[1] * group, Z: W.shape[0]); pools
    // pool every lane.
    int64_t x_channels = -1, z_channels = -1;
    if (conv_ && context.has_input(1) && context.input(1).rank() >= 2) {
      const Shape& w = context.input(1).shape();
      x_channels = checked_mul(w[1], group_, "W's dim 1 x group");
      z_channels = w[0];
    }
    for (size_t i = 0; i < context.num_inputs(); ++i) {
      if (!context.has_input(i)) continue;
      const Tensor& tensor = context.input(i);
      // X (input 0) and FusedConv's Z (input 3) carry activations; W and B never do.
      const bool blocked = (i == 0 || i == 3) && tensor.rank() == 5;
      const int64_t channels = i == 0 ? x_channels : z_channels;
      if (blocked) check_reorder_input(context, tensor, false, channels);
      values[i] =
          RuntimeValue(blocked ? reorder_tensor(tensor, false, channels, "unblock") : tensor);
      inputs[i] = &values[i];
    }
    RuntimeValue output;
    RuntimeValue* outputs[] = {&output};
    KernelContext inner(*node_, inputs, outputs, nullptr, nullptr);
    kernel_->compute(inner);
    const Tensor& y = output.tensor();
    if (y.rank() != 4) {
      context.fail("output {} has no blocked layout (needs [N, C, H, W])",
                   shape_to_string(y.shape()));
    }
    context.set_output(0, reorder_tensor(y, true, -1, "block"));
  }

 private:
  bool conv_ = false;
  int64_t group_ = 1;
  Graph graph_;
  Node* node_ = nullptr;
  std::unique_ptr<OpKernel> kernel_;
};

}  // namespace

void zero_channel_padding(float* data, const Shape& blocked, int64_t channels) {
  const int64_t used = channels % kChannelBlock;
  if (used == 0 || !is_blocked_shape(blocked, channels)) return;
  const int64_t blocks = blocked[1], image = blocked[2] * blocked[3];
  for (int64_t n = 0; n < blocked[0]; ++n) {
    float* last = data + ((n * blocks + blocks - 1) * image) * kChannelBlock;
    for (int64_t p = 0; p < image; ++p) {
      std::fill(last + p * kChannelBlock + used, last + (p + 1) * kChannelBlock, 0.0f);
    }
  }
}

namespace {

// Type inference (ops/type_inference.h).

// Channels as blocks of kChannelBlock: ceil(channels / block).
Dim channel_blocks(const Dim& channels) {
  return map_dim(channels, [](int64_t c) { return c / kChannelBlock + (c % kChannelBlock != 0); });
}

// ReorderToBlocked [N, C, H, W] -> [N, ceil(C / 16), H, W, 16]; ReorderFromBlocked back, C
// from `channels` (default every lane).
template <bool kToBlocked>
void infer_reorder(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const size_t rank = kToBlocked ? 4 : 5;
  if (x && x->size() != rank) fail("X has rank {}, needs {}", x->size(), rank);
  const std::vector<Dim> dims = x ? *x : unknown_dims(rank);
  if (kToBlocked) {
    context.set_output(
        0, tensor_type(dtype, std::vector<Dim>{dims[0], channel_blocks(dims[1]), dims[2], dims[3],
                                               Dim::known(kChannelBlock)}));
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  const Dim channels = attributes.has_attribute(kChannelsAttribute)
                           ? Dim::known(attributes.attr_int(kChannelsAttribute))
                           : map_dim(dims[1], [](int64_t blocks) {
                               return checked_mul(blocks, kChannelBlock, "channel blocks");
                             });
  context.set_output(0, tensor_type(dtype, std::vector<Dim>{dims[0], channels, dims[2], dims[3]}));
}

// The blocked ops: [N, blocks, H', W', 16], H' and W' those of the op they stand for
// (BlockedConv: FusedConv, blocks from W's output channels; the pools: MaxPool at opset 12,
// AveragePool at 11, the global pools 1 x 1).
void infer_blocked(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::string& op = context.node().op_type();
  const std::vector<Dim>* x = input_dims(context, 0);
  const bool conv = op == kBlockedConv;
  if (x && x->size() != 5 && !(conv && x->size() == 4)) {
    fail("X has rank {}, needs 5 (blocked){}", x->size(), conv ? " or 4" : "");
  }
  const std::vector<Dim> spatial_in = x ? std::vector<Dim>{(*x)[2], (*x)[3]} : unknown_dims(2);
  std::vector<Dim> out{x ? (*x)[0] : Dim{}, x && x->size() == 5 ? (*x)[1] : Dim{}};
  std::vector<Dim> spatial;
  const KernelCreateContext attributes = attribute_reader(context);
  if (conv) {
    const ConvAttributes attrs(attributes);
    const std::vector<Dim>* w = input_dims(context, 1);
    if (w && w->size() != 4) fail("W has rank {}, needs 4", w->size());
    out[1] = w ? channel_blocks((*w)[0]) : Dim{};
    const std::vector<Dim> kernel = !attrs.kernel_shape.empty() ? known_dims(attrs.kernel_shape)
                                    : w                         ? std::vector<Dim>{(*w)[2], (*w)[3]}
                                                                : unknown_dims(2);
    spatial = window_dims(attrs, spatial_in, kernel);
  } else if (op == "BlockedMaxPool" || op == "BlockedAveragePool") {
    const ConvAttributes attrs = ConvAttributes::pool(attributes, op == "BlockedMaxPool", true);
    spatial = window_dims(attrs, spatial_in, known_dims(attrs.kernel_shape));
  } else {
    spatial = {Dim::known(1), Dim::known(1)};
  }
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(Dim::known(kChannelBlock));
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_blocked_ops(OpRegistry& registry) {
  const std::string domain(kOnnxkitDomain);
  registry.add(domain, std::string(kReorderToBlocked), 1, kernel_factory<ReorderKernel<true>>());
  registry.add(domain, std::string(kReorderFromBlocked), 1, kernel_factory<ReorderKernel<false>>());
  for (const BlockedOp& op : kBlockedOps) {
    registry.add(domain, std::string(op.blocked), 1,
                 [standard = op.standard](const KernelCreateContext& context) {
                   return std::make_unique<BlockedReferenceKernel>(context, standard);
                 });
  }

  // Type inference, every version.
  registry.set_type_rule(domain, kReorderToBlocked, infer_reorder<true>);
  registry.set_type_rule(domain, kReorderFromBlocked, infer_reorder<false>);
  for (const BlockedOp& op : kBlockedOps) registry.set_type_rule(domain, op.blocked, infer_blocked);
}

}  // namespace onnxkit
