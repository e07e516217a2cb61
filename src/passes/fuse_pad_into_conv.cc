// Pass fuse_pad_into_conv: A constant-zero Pad before Conv / AveragePool / MaxPool becomes the op's pads.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class FusePadIntoConvPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_pad_into_conv"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_pad_into_conv_pass() { return std::make_unique<FusePadIntoConvPass>(); }

}  // namespace onnxkit
