// Pass constant_folding: Nodes whose inputs are all constant are computed with the executor and become initializers.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class ConstantFoldingPass : public GraphPass {
 public:
  std::string_view name() const override { return "constant_folding"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_constant_folding_pass() { return std::make_unique<ConstantFoldingPass>(); }

}  // namespace onnxkit
