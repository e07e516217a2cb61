// RNN, GRU and LSTM (ops/recurrent.cc): the reference kernels, and the same kernels with their
// float matrix products (the input projection and each time step's H * R^T) handed to a
// faster GEMM, for the optimized tier (kernels/dnnl_matmul.cc passes oneDNN's sgemm).
#pragma once

#include <cstdint>
#include <string_view>

#include "ops/op_definition.h"

namespace onnxkit {

// C = alpha * op(A) * op(B) + beta * C, row-major: core/gemm.h's gemm<float>.
using FloatGemm = void (*)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                           float* c, int64_t ldc);

// The kernel of `op_type` ("RNN", "GRU" or "LSTM") computing float (and float16, which
// computes in float) products with `gemm`; double keeps core/gemm.
KernelFactory recurrent_kernel_factory(std::string_view op_type, FloatGemm gemm);

}  // namespace onnxkit
