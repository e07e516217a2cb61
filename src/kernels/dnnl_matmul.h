// oneDNN-backed kernels for the matrix side of the runtime: MatMul, Gemm and com.onnxkit
// FusedMatMul on float32 (dnnl_matmul.cc), and com.onnxkit Attention (attention.cc).
//
// Every oneDNN primitive these kernels create uses a user-provided scratchpad: one kernel
// may run concurrently from several threads (parallel execution, or the per-head loop of
// Attention), and a per-thread scratchpad keeps their temporaries apart.
#pragma once

#include "kernels/dnnl_common.h"

#include <memory>

#include "ops/kernel.h"

namespace onnxkit {

class OpRegistry;

// out = A @ B (+ bias, N floats added to every row) for a constant float32 B [K, N], packed
// once by oneDNN as the MatMul kernel packs its weights; A is [..., K] float32 and `out` has
// A's shape with N last. For kernels of fused ops with a weight product inside
// (com.microsoft Attention, kernels/transformer_microsoft.cc).
class ConstantFloatMatMul {
 public:
  virtual ~ConstantFloatMatMul() = default;
  virtual int64_t k() const = 0;
  virtual int64_t n() const = 0;
  // Fails naming the context's node on shapes MatMul rejects or oneDNN errors.
  virtual void run(const KernelContext& context, const Tensor& a, const float* bias,
                   Tensor& out) const = 0;
};
// `b`: a 2-D float32 tensor (an initializer: its memory outlives the product).
std::unique_ptr<const ConstantFloatMatMul> make_constant_float_matmul(const Tensor& b);

// Optimized MatMul (ai.onnx 1, 9, 13), Gemm (7, 9, 11, 13) and FusedMatMul (com.onnxkit 1).
void register_dnnl_matmul_kernels(OpRegistry& registry);
// Optimized com.onnxkit Attention.
void register_attention_kernels(OpRegistry& registry);

namespace dnnl_util {

// Attributes with a user-managed scratchpad (see above); add post-ops and scales to it.
dnnl::primitive_attr user_scratchpad_attr();

// Runs `primitive` (created with user_scratchpad_attr()) synchronously on this thread's
// stream, with this thread's scratchpad of at least `scratchpad` bytes (its memory object
// cached under `owner`, role kScratchpadRole: the other roles are the caller's).
constexpr int kScratchpadRole = 15;
void execute(const dnnl::primitive& primitive, const dnnl::memory::desc& scratchpad, uint64_t owner,
             ExecArgs args);

}  // namespace dnnl_util
}  // namespace onnxkit
