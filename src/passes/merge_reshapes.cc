// Pass merge_reshapes: Consecutive Reshape/Flatten become one Reshape.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class MergeReshapesPass : public GraphPass {
 public:
  std::string_view name() const override { return "merge_reshapes"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_merge_reshapes_pass() { return std::make_unique<MergeReshapesPass>(); }

}  // namespace onnxkit
