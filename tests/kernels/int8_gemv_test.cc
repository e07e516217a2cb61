// Int8Gemv (kernels/int8_gemv.cc) against plain int32 loops, exactly: k not a multiple of 4
// (zero-padded quads), n not a multiple of 16 (masked stores) or of 64 (a partial tile),
// several rows, and extreme values (255 x -128 in every pair); also tile by tile.
#include "kernels/int8_gemv.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

namespace onnxkit {
namespace {

void check(int64_t rows, int64_t k, int64_t n, bool extreme, std::mt19937_64& rng,
           bool split = false) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(static_cast<size_t>(rows * k));
  std::vector<int8_t> b(static_cast<size_t>(k * n));
  for (uint8_t& v : a) v = extreme ? 255 : static_cast<uint8_t>(byte(rng));
  for (int8_t& v : b) v = extreme ? -128 : static_cast<int8_t>(byte(rng) - 128);
  const Int8Gemv gemv(b.data(), k, n);
  std::vector<int32_t> acc(static_cast<size_t>(rows * n), -1);
  if (split) {
    // One call per tile (as callers that share the columns among threads make them): every
    // tile writes its own columns and no other.
    for (int64_t tile = gemv.tiles() - 1; tile >= 0; --tile) {
      gemv.run(a.data(), rows, acc.data(), tile, tile + 1);
    }
  } else {
    gemv.run(a.data(), rows, acc.data());
  }
  for (int64_t j = 0; j < n; ++j) {
    int32_t column_sum = 0;
    for (int64_t i = 0; i < k; ++i) column_sum += b[i * n + j];
    ASSERT_EQ(gemv.column_sums()[j], column_sum) << "column " << j;
    for (int64_t r = 0; r < rows; ++r) {
      int32_t expected = 0;
      for (int64_t i = 0; i < k; ++i) expected += int32_t{a[r * k + i]} * int32_t{b[i * n + j]};
      ASSERT_EQ(acc[r * n + j], expected)
          << "rows " << rows << " k " << k << " n " << n << " at " << r << "," << j;
    }
  }
}

TEST(Int8Gemv, MatchesIntegerLoops) {
  if (!Int8Gemv::available()) GTEST_SKIP() << "no AVX-512 VNNI here (callers take oneDNN)";
  std::mt19937_64 rng(5);
  for (const auto& [rows, k, n] : std::vector<std::array<int64_t, 3>>{
           {1, 128, 512}, {3, 24, 96}, {2, 21, 84}, {5, 1, 1}, {1, 7, 17}, {8, 130, 1000}}) {
    check(rows, k, n, false, rng);
  }
  check(2, 256, 80, true, rng);
  for (const auto& [rows, k, n] :
       std::vector<std::array<int64_t, 3>>{{1, 2048, 1000}, {3, 24, 300}, {2, 64, 128}}) {
    check(rows, k, n, false, rng, true);
  }
}

}  // namespace
}  // namespace onnxkit
