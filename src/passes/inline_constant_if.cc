// Pass inline_constant_if: If with a constant condition is replaced by the chosen branch.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class InlineConstantIfPass : public GraphPass {
 public:
  std::string_view name() const override { return "inline_constant_if"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_inline_constant_if_pass() { return std::make_unique<InlineConstantIfPass>(); }

}  // namespace onnxkit
