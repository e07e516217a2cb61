// Pass shape_folding: Shape computations (Shape, Size, Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, arithmetic) fold to constants where the dims they read are known, even when other dims stay symbolic.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class ShapeFoldingPass : public GraphPass {
 public:
  std::string_view name() const override { return "shape_folding"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_shape_folding_pass() { return std::make_unique<ShapeFoldingPass>(); }

}  // namespace onnxkit
