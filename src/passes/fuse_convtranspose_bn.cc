// Pass fuse_convtranspose_bn: BatchNormalization after ConvTranspose is folded into its weights and bias.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class FuseConvtransposeBnPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_convtranspose_bn"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_convtranspose_bn_pass() { return std::make_unique<FuseConvtransposeBnPass>(); }

}  // namespace onnxkit
