// Pass fuse_conv_bn: BatchNormalization after Conv is folded into the Conv's weights and bias.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class FuseConvBnPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_conv_bn"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_bn_pass() { return std::make_unique<FuseConvBnPass>(); }

}  // namespace onnxkit
