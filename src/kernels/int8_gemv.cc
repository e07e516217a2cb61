// See int8_gemv.h.
#include "kernels/int8_gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/vector_math.h"

namespace onnxkit {
namespace {

constexpr int64_t kColumns = 16;  // int32 lanes of a zmm register
constexpr int64_t kTile = 8;      // column blocks per pass: accumulators in flight
static_assert(kColumns * kTile == Int8Gemv::kTileColumns);

// One row of A (k_quads * 4 bytes, zero-padded) against kCount column blocks from `first`;
// the sums of columns [first * 16, n) go to acc_row. kCount is a constant so that the
// accumulators stay in registers.
template <int kCount>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void gemv_tile(const uint8_t* a,
                                                                      const int8_t* packed,
                                                                      int64_t k_quads,
                                                                      int64_t first, int64_t n,
                                                                      int32_t* acc_row) {
  __m512i sums[kCount];
  for (int b = 0; b < kCount; ++b) sums[b] = _mm512_setzero_si512();
  const int8_t* base = packed + first * k_quads * 64;
  for (int64_t q = 0; q < k_quads; ++q) {
    int32_t quad;
    std::memcpy(&quad, a + q * 4, sizeof(quad));
    const __m512i av = _mm512_set1_epi32(quad);
    for (int b = 0; b < kCount; ++b) {
      const __m512i bv = _mm512_loadu_si512(base + (q * kCount + b) * 64);
      sums[b] = _mm512_dpbusd_epi32(sums[b], av, bv);
    }
  }
  for (int b = 0; b < kCount; ++b) {
    const int64_t column = (first + b) * kColumns;
    const int64_t left = std::min<int64_t>(kColumns, n - column);
    const __mmask16 mask = static_cast<__mmask16>((1u << left) - 1u);
    _mm512_mask_storeu_epi32(acc_row + column, mask, sums[b]);
  }
}

using TileFunction = void (*)(const uint8_t*, const int8_t*, int64_t, int64_t, int64_t, int32_t*);
constexpr TileFunction kTiles[kTile + 1] = {nullptr,      gemv_tile<1>, gemv_tile<2>,
                                            gemv_tile<3>, gemv_tile<4>, gemv_tile<5>,
                                            gemv_tile<6>, gemv_tile<7>, gemv_tile<8>};

}  // namespace

bool Int8Gemv::available() {
  static const bool cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return cpu && active_simd_level() == SimdLevel::kAvx512;
}

Int8Gemv::Int8Gemv(const int8_t* b, int64_t k, int64_t n)
    : k_(k), n_(n), k_quads_((k + 3) / 4), blocks_((n + kColumns - 1) / kColumns) {
  packed_.assign(static_cast<size_t>(blocks_ * k_quads_ * 64), 0);
  column_sums_.assign(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int8_t v = b[i * n + j];
      column_sums_[j] += v;
      // Blocks of a tile side by side per quad, so that a pass reads one stream.
      const int64_t block = j / kColumns, lane = j % kColumns;
      const int64_t first = block / kTile * kTile, count = std::min(kTile, blocks_ - first);
      packed_[first * k_quads_ * 64 + ((i / 4 * count + block - first) * kColumns + lane) * 4 +
              i % 4] = v;
    }
  }
}

int64_t Int8Gemv::tiles() const {
  return (blocks_ + kTile - 1) / kTile;
}

void Int8Gemv::run(const uint8_t* a, int64_t rows, int32_t* acc, int64_t first_tile,
                   int64_t end_tile) const {
  thread_local std::vector<uint8_t> padded;
  const bool pad = k_ % 4 != 0;
  for (int64_t row = 0; row < rows; ++row) {
    const uint8_t* ar = a + row * k_;
    if (pad) {
      padded.assign(static_cast<size_t>(k_quads_ * 4), 0);
      std::copy_n(ar, k_, padded.begin());
      ar = padded.data();
    }
    for (int64_t first = first_tile * kTile; first < std::min(blocks_, end_tile * kTile);
         first += kTile) {
      kTiles[std::min(kTile, blocks_ - first)](ar, packed_.data(), k_quads_, first, n_,
                                               acc + row * n_);
    }
  }
}

}  // namespace onnxkit
