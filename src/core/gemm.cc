// Cache-blocked GEMM in the Goto/BLIS layout: B is packed into k-by-kNr column panels that
// stay in L1, A (times alpha) into kMr-row panels of a block that stays in L2, and a
// kMr x kNr register tile accumulates each panel product. Edges are zero-padded while
// packing so the micro-kernel always runs full tiles.
#include "core/gemm.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace onnxkit {
namespace {

template <typename T>
struct Blocking {
  static constexpr int64_t kMr = 4;               // rows of a register tile
  static constexpr int64_t kNr = 32 / sizeof(T);  // columns: two 16-byte vectors a row
  static constexpr int64_t kMc = 64;              // rows of A per packed block (L2)
  static constexpr int64_t kKc = 256;             // depth of a packed panel
  static constexpr int64_t kNc = 2048;            // columns of B per packed block
};

// Packs rows [row0, row0 + rows) x depth [p0, p0 + kc) of alpha * op(A) into kMr-row panels:
// panel r holds, for each p, the kMr values of its rows (zero past the edge).
template <typename T>
void pack_a(bool trans_a, const T* a, int64_t lda, int64_t row0, int64_t rows, int64_t p0,
            int64_t kc, T alpha, T* dst) {
  constexpr int64_t kMr = Blocking<T>::kMr;
  for (int64_t r = 0; r < rows; r += kMr) {
    const int64_t mr = std::min(kMr, rows - r);
    for (int64_t i = 0; i < kMr; ++i) {
      T* out = dst + i;
      if (i >= mr) {
        for (int64_t p = 0; p < kc; ++p) out[p * kMr] = T(0);
        continue;
      }
      const int64_t row = row0 + r + i;
      if (trans_a) {
        const T* src = a + p0 * lda + row;
        for (int64_t p = 0; p < kc; ++p) out[p * kMr] = alpha * src[p * lda];
      } else {
        const T* src = a + row * lda + p0;
        for (int64_t p = 0; p < kc; ++p) out[p * kMr] = alpha * src[p];
      }
    }
    dst += kMr * kc;
  }
}

// Packs depth [p0, p0 + kc) x columns [col0, col0 + cols) of op(B) into kNr-column panels.
template <typename T>
void pack_b(bool trans_b, const T* b, int64_t ldb, int64_t p0, int64_t kc, int64_t col0,
            int64_t cols, T* dst) {
  constexpr int64_t kNr = Blocking<T>::kNr;
  for (int64_t c = 0; c < cols; c += kNr) {
    const int64_t nr = std::min(kNr, cols - c);
    for (int64_t p = 0; p < kc; ++p) {
      T* out = dst + p * kNr;
      if (trans_b) {
        const T* src = b + (col0 + c) * ldb + p0 + p;
        for (int64_t j = 0; j < nr; ++j) out[j] = src[j * ldb];
      } else {
        const T* src = b + (p0 + p) * ldb + col0 + c;
        for (int64_t j = 0; j < nr; ++j) out[j] = src[j];
      }
      for (int64_t j = nr; j < kNr; ++j) out[j] = T(0);
    }
    dst += kNr * kc;
  }
}

// acc = (packed A panel) * (packed B panel) over depth kc. Fixed trip counts let the
// compiler keep the tile in vector registers.
template <typename T>
void micro_kernel(int64_t kc, const T* __restrict a, const T* __restrict b,
                  T (&acc)[Blocking<T>::kMr][Blocking<T>::kNr]) {
  constexpr int64_t kMr = Blocking<T>::kMr;
  constexpr int64_t kNr = Blocking<T>::kNr;
  T tile[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t i = 0; i < kMr; ++i) {
      const T ai = a[i];
      for (int64_t j = 0; j < kNr; ++j) tile[i][j] += ai * b[j];
    }
    a += kMr;
    b += kNr;
  }
  for (int64_t i = 0; i < kMr; ++i) {
    for (int64_t j = 0; j < kNr; ++j) acc[i][j] = tile[i][j];
  }
}

template <typename T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

template <typename T>
void gemm_impl(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  using B = Blocking<T>;
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == T(0)) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  const int64_t nc_max = std::min(B::kNc, n);
  const int64_t kc_max = std::min(B::kKc, k);
  const int64_t mc_max = std::min(B::kMc, m);
  std::vector<T> b_pack(static_cast<size_t>(kc_max * ((nc_max + B::kNr - 1) / B::kNr) * B::kNr));
  std::vector<T> a_pack(static_cast<size_t>(kc_max * ((mc_max + B::kMr - 1) / B::kMr) * B::kMr));
  T acc[B::kMr][B::kNr];

  for (int64_t jc = 0; jc < n; jc += B::kNc) {
    const int64_t nc = std::min(B::kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += B::kKc) {
      const int64_t kc = std::min(B::kKc, k - pc);
      // The first depth block applies beta; later ones accumulate.
      const T block_beta = pc == 0 ? beta : T(1);
      pack_b(trans_b, b, ldb, pc, kc, jc, nc, b_pack.data());
      for (int64_t ic = 0; ic < m; ic += B::kMc) {
        const int64_t mc = std::min(B::kMc, m - ic);
        pack_a(trans_a, a, lda, ic, mc, pc, kc, alpha, a_pack.data());
        for (int64_t jr = 0; jr < nc; jr += B::kNr) {
          const int64_t nr = std::min(B::kNr, nc - jr);
          const T* b_panel = b_pack.data() + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += B::kMr) {
            const int64_t mr = std::min(B::kMr, mc - ir);
            micro_kernel<T>(kc, a_pack.data() + ir * kc, b_panel, acc);
            T* c_tile = c + (ic + ir) * ldc + jc + jr;
            for (int64_t i = 0; i < mr; ++i) {
              T* row = c_tile + i * ldc;
              if (block_beta == T(0)) {
                for (int64_t j = 0; j < nr; ++j) row[j] = acc[i][j];
              } else if (block_beta == T(1)) {
                for (int64_t j = 0; j < nr; ++j) row[j] += acc[i][j];
              } else {
                for (int64_t j = 0; j < nr; ++j) row[j] = block_beta * row[j] + acc[i][j];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    // Unsigned arithmetic wraps with the same bits as two's complement, without UB.
    using U = std::make_unsigned_t<T>;
    gemm_impl<U>(trans_a, trans_b, m, n, k, static_cast<U>(alpha), reinterpret_cast<const U*>(a),
                 lda, reinterpret_cast<const U*>(b), ldb, static_cast<U>(beta),
                 reinterpret_cast<U*>(c), ldc);
  } else {
    gemm_impl<T>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);
template void gemm<int32_t>(bool, bool, int64_t, int64_t, int64_t, int32_t, const int32_t*, int64_t,
                            const int32_t*, int64_t, int32_t, int32_t*, int64_t);
template void gemm<int64_t>(bool, bool, int64_t, int64_t, int64_t, int64_t, const int64_t*, int64_t,
                            const int64_t*, int64_t, int64_t, int64_t*, int64_t);
template void gemm<uint32_t>(bool, bool, int64_t, int64_t, int64_t, uint32_t, const uint32_t*,
                             int64_t, const uint32_t*, int64_t, uint32_t, uint32_t*, int64_t);
template void gemm<uint64_t>(bool, bool, int64_t, int64_t, int64_t, uint64_t, const uint64_t*,
                             int64_t, const uint64_t*, int64_t, uint64_t, uint64_t*, int64_t);

}  // namespace onnxkit
