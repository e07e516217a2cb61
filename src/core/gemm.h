// Cache-blocked general matrix multiply for the reference CPU kernels.
//
// C = alpha * op(A) * op(B) + beta * C, all matrices row-major with leading dimensions
// (the distance in elements between consecutive rows as stored). op(X) is X or X^T.
// Portable C++ only (no intrinsics, no -march): the inner kernel is written so the
// compiler can vectorize it with the baseline instruction set.
#pragma once

#include <cstdint>

namespace onnxkit {

// op(A) is m x k, op(B) is k x n, C is m x n. A stored as given: m x k (lda >= k) or,
// when trans_a, k x m (lda >= m); likewise B. beta == 0 overwrites C (NaNs in C are
// ignored, as BLAS does). Integers wrap on overflow (two's complement).
// Instantiated for float, double, int32_t, int64_t, uint32_t, uint64_t.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

extern template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                 int64_t, const float*, int64_t, float, float*, int64_t);
extern template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                  int64_t, const double*, int64_t, double, double*, int64_t);
extern template void gemm<int32_t>(bool, bool, int64_t, int64_t, int64_t, int32_t, const int32_t*,
                                   int64_t, const int32_t*, int64_t, int32_t, int32_t*, int64_t);
extern template void gemm<int64_t>(bool, bool, int64_t, int64_t, int64_t, int64_t, const int64_t*,
                                   int64_t, const int64_t*, int64_t, int64_t, int64_t*, int64_t);
extern template void gemm<uint32_t>(bool, bool, int64_t, int64_t, int64_t, uint32_t,
                                    const uint32_t*, int64_t, const uint32_t*, int64_t, uint32_t,
                                    uint32_t*, int64_t);
extern template void gemm<uint64_t>(bool, bool, int64_t, int64_t, int64_t, uint64_t,
                                    const uint64_t*, int64_t, const uint64_t*, int64_t, uint64_t,
                                    uint64_t*, int64_t);

}  // namespace onnxkit
