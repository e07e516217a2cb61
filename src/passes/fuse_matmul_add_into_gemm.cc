// Pass fuse_matmul_add_into_gemm: MatMul of a 2-D input by a constant matrix followed by Add of a bias becomes Gemm.
// (not implemented yet)
#include "passes/passes.h"

namespace onnxkit {
namespace {

class FuseMatmulAddIntoGemmPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_matmul_add_into_gemm"; }
  size_t run(Graph&, PassContext&) override { return 0; }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_matmul_add_into_gemm_pass() { return std::make_unique<FuseMatmulAddIntoGemmPass>(); }

}  // namespace onnxkit
