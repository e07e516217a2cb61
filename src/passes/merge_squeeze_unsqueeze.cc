// Pass merge_squeeze_unsqueeze: Consecutive Squeeze/Unsqueeze pairs that cancel are removed; consecutive ones of the same kind merge.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class MergeSqueezeUnsqueezePass : public GraphPass {
 public:
  std::string_view name() const override { return "merge_squeeze_unsqueeze"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_merge_squeeze_unsqueeze_pass() { return std::make_unique<MergeSqueezeUnsqueezePass>(); }

}  // namespace onnxkit
