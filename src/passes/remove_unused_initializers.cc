// Pass remove_unused_initializers: Initializers nothing reads are removed.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class RemoveUnusedInitializersPass : public GraphPass {
 public:
  std::string_view name() const override { return "remove_unused_initializers"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_remove_unused_initializers_pass() { return std::make_unique<RemoveUnusedInitializersPass>(); }

}  // namespace onnxkit
