// Pass eliminate_identity: Identity and inference-mode Dropout are removed.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class EliminateIdentityPass : public GraphPass {
 public:
  std::string_view name() const override { return "eliminate_identity"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_eliminate_identity_pass() { return std::make_unique<EliminateIdentityPass>(); }

}  // namespace onnxkit
