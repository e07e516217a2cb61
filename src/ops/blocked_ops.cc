// Reference kernels of the blocked-layout ops (ops/blocked_ops.h): the two reorders as
// element copies, and each Blocked* op as the reference kernel of its standard op between
// reorders, so the blocked graph computes exactly what the graph it came from did.
#include "ops/blocked_ops.h"

#include <string>
#include <vector>

#include "ir/graph_clone.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// Copies between [N, C, HW] and [N, C/16, HW, 16], either direction.
template <typename S>
void reorder_elements(const S* src, S* dst, int64_t batch, int64_t channels, int64_t image,
                      bool to_blocked) {
  const int64_t blocks = channels / kChannelBlock;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t p = 0; p < image; ++p) {
        for (int64_t i = 0; i < kChannelBlock; ++i) {
          const int64_t plain = (n * channels + b * kChannelBlock + i) * image + p;
          const int64_t blocked = ((n * blocks + b) * image + p) * kChannelBlock + i;
          if (to_blocked) {
            dst[blocked] = src[plain];
          } else {
            dst[plain] = src[blocked];
          }
        }
      }
    }
  }
}

Tensor reorder_tensor(const Tensor& x, bool to_blocked, std::string_view what) {
  const Shape plain = to_blocked ? x.shape() : plain_shape(x.shape());
  Tensor y(x.dtype(), to_blocked ? blocked_shape(x.shape()) : plain);
  if (x.dtype() == DType::kString) fail("{}: string tensors have no blocked layout", what);
  dispatch_storage(x.dtype(), what, [&](auto tag) {
    using S = typename decltype(tag)::type;
    reorder_elements<S>(x.data<S>(), y.mutable_data<S>(), plain[0], plain[1], plain[2] * plain[3],
                        to_blocked);
  });
  return y;
}

// Fails naming the node unless `x` fits the reorder.
void check_reorder_input(const KernelContext& context, const Tensor& x, bool to_blocked) {
  if (to_blocked && (x.rank() != 4 || x.shape()[1] % kChannelBlock != 0)) {
    context.fail("X must be [N, C, H, W] with C a multiple of {}, got {}", kChannelBlock,
                 shape_to_string(x.shape()));
  }
  if (!to_blocked && !is_blocked_shape(x.shape())) {
    context.fail("X must be blocked [N, C/{0}, H, W, {0}], got {1}", kChannelBlock,
                 shape_to_string(x.shape()));
  }
}

template <bool kToBlocked>
class ReorderKernel : public OpKernel {
 public:
  explicit ReorderKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    check_reorder_input(context, x, kToBlocked);
    context.set_output(0, reorder_tensor(x, kToBlocked, context.node().describe()));
  }
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
    kernel_ = OpRegistry::builtin().create_kernel(KernelCreateContext(*node_, opset),
                                                  KernelTier::kReference);
  }

  void compute(KernelContext& context) const override {
    std::vector<RuntimeValue> values(context.num_inputs());
    std::vector<const RuntimeValue*> inputs(context.num_inputs(), nullptr);
    for (size_t i = 0; i < context.num_inputs(); ++i) {
      if (!context.has_input(i)) continue;
      const Tensor& tensor = context.input(i);
      // X (input 0) and FusedConv's Z (input 3) carry activations; W and B never do.
      const bool blocked = (i == 0 || i == 3) && tensor.rank() == 5;
      if (blocked) check_reorder_input(context, tensor, false);
      values[i] = RuntimeValue(blocked ? reorder_tensor(tensor, false, "unblock") : tensor);
      inputs[i] = &values[i];
    }
    RuntimeValue output;
    RuntimeValue* outputs[] = {&output};
    KernelContext inner(*node_, inputs, outputs, nullptr, nullptr);
    kernel_->compute(inner);
    const Tensor& y = output.tensor();
    if (y.rank() != 4 || y.shape()[1] % kChannelBlock != 0) {
      context.fail("output {} has no blocked layout (needs [N, C, H, W], C a multiple of {})",
                   shape_to_string(y.shape()), kChannelBlock);
    }
    context.set_output(0, reorder_tensor(y, true, "block"));
  }

 private:
  Graph graph_;
  Node* node_ = nullptr;
  std::unique_ptr<OpKernel> kernel_;
};

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
}

}  // namespace onnxkit
