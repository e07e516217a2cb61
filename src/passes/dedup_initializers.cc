// Pass dedup_initializers: Initializers with identical contents are merged.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class DedupInitializersPass : public GraphPass {
 public:
  std::string_view name() const override { return "dedup_initializers"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_dedup_initializers_pass() { return std::make_unique<DedupInitializersPass>(); }

}  // namespace onnxkit
