// Pass common_subexpression_elimination: Nodes computing the same op with the same inputs and attributes are merged.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class CommonSubexpressionEliminationPass : public GraphPass {
 public:
  std::string_view name() const override { return "common_subexpression_elimination"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_common_subexpression_elimination_pass() { return std::make_unique<CommonSubexpressionEliminationPass>(); }

}  // namespace onnxkit
