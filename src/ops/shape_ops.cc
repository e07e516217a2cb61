// Op family: shape and data movement (Identity, ...).
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// Identity: passes the value through (tensors share storage; sequences too).
class IdentityKernel : public OpKernel {
 public:
  explicit IdentityKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    context.set_output_value(0, context.input_value(0));
  }
};

}  // namespace

void register_shape_ops(OpRegistry& registry) {
  registry.add("Identity", {1}, kernel_factory<IdentityKernel>());
}

}  // namespace onnxkit
