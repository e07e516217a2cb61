// Pass fuse_conv_add: Add of a per-channel constant after Conv becomes the Conv's bias.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class FuseConvAddPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_conv_add"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_conv_add_pass() { return std::make_unique<FuseConvAddPass>(); }

}  // namespace onnxkit
