// Pass eliminate_noop: Cast to the same type, Reshape/Flatten to the same shape, identity Transpose, zero Pad, full Slice, Expand to the same shape, single-input Concat, single-output Split are removed.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class EliminateNoopPass : public GraphPass {
 public:
  std::string_view name() const override { return "eliminate_noop"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_eliminate_noop_pass() { return std::make_unique<EliminateNoopPass>(); }

}  // namespace onnxkit
