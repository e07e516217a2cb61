// Pass merge_slices: Consecutive Slices over different axes merge into one.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class MergeSlicesPass : public GraphPass {
 public:
  std::string_view name() const override { return "merge_slices"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_merge_slices_pass() { return std::make_unique<MergeSlicesPass>(); }

}  // namespace onnxkit
