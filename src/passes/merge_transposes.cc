// Pass merge_transposes: Consecutive Transposes become one (or none).
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class MergeTransposesPass : public GraphPass {
 public:
  std::string_view name() const override { return "merge_transposes"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_merge_transposes_pass() { return std::make_unique<MergeTransposesPass>(); }

}  // namespace onnxkit
