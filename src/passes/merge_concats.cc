// Pass merge_concats: A Concat feeding only another Concat along the same axis is flattened into it.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class MergeConcatsPass : public GraphPass {
 public:
  std::string_view name() const override { return "merge_concats"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_merge_concats_pass() { return std::make_unique<MergeConcatsPass>(); }

}  // namespace onnxkit
