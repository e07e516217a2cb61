// Pass constant_to_initializer: Constant nodes become initializers, so every constant looks alike to the other passes.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class ConstantToInitializerPass : public GraphPass {
 public:
  std::string_view name() const override { return "constant_to_initializer"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_constant_to_initializer_pass() { return std::make_unique<ConstantToInitializerPass>(); }

}  // namespace onnxkit
