// Pass dead_code_elimination: Nodes whose outputs nothing reads are removed.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class DeadCodeEliminationPass : public GraphPass {
 public:
  std::string_view name() const override { return "dead_code_elimination"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_dead_code_elimination_pass() { return std::make_unique<DeadCodeEliminationPass>(); }

}  // namespace onnxkit
