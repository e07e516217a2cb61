// A few rows of u8 activations times constant s8 weights on AVX-512 VNNI (VPDPBUSD),
// without oneDNN's fixed cost per call (about 0.6 us on these machines: more than the
// product itself for an RNN's recurrent step at batch 1, K = N / 4 = 128). The int32 sums
// are exact, the same as oneDNN's; callers take the zero points off (integer_epilogue).
#pragma once

#include <cstdint>
#include <vector>

namespace onnxkit {

class Int8Gemv {
 public:
  // Whether the CPU has AVX-512 VNNI and the active SIMD level (vector_math.h) is AVX-512:
  // forcing a lower level (tests) makes callers take their oneDNN path.
  static bool available();

  // `b`: s8 [k, n], row-major.
  Int8Gemv(const int8_t* b, int64_t k, int64_t n);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  // Sum over k of b[k, j], per column.
  const std::vector<int32_t>& column_sums() const { return column_sums_; }

  // acc[row * n + j] = sum_i a[row * k + i] * b[i, j] for row < rows (no zero points).
  // Only when available().
  void run(const uint8_t* a, int64_t rows, int32_t* acc) const { run(a, rows, acc, 0, tiles()); }

  // Tiles of up to kTileColumns columns, for callers that share the columns among threads.
  static constexpr int64_t kTileColumns = 128;
  int64_t tiles() const;
  // As run(), for the columns of tiles [first_tile, end_tile) only.
  void run(const uint8_t* a, int64_t rows, int32_t* acc, int64_t first_tile,
           int64_t end_tile) const;

 private:
  int64_t k_, n_;
  int64_t k_quads_;  // k / 4, rounded up (B is zero-padded)
  int64_t blocks_;   // n / 16, rounded up
  // Per tile of up to 8 column blocks: [k_quad][block][16 columns][4 k], one VPDPBUSD
  // operand per (block, k_quad).
  std::vector<int8_t> packed_;
  std::vector<int32_t> column_sums_;
};

}  // namespace onnxkit
