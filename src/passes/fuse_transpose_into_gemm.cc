// Pass fuse_transpose_into_gemm: Transpose of a Gemm input becomes the Gemm's transA/transB.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class FuseTransposeIntoGemmPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_transpose_into_gemm"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_transpose_into_gemm_pass() { return std::make_unique<FuseTransposeIntoGemmPass>(); }

}  // namespace onnxkit
