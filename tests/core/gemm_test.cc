// The blocked GEMM against a naive triple loop, over sizes that straddle every block edge.
#include "core/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace onnxkit {
namespace {

// C = alpha * op(A) * op(B) + beta * C, one dot product at a time (double accumulation for
// floats); beta == 0 overwrites.
template <typename T>
void naive_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                const std::vector<T>& a, int64_t lda, const std::vector<T>& b, int64_t ldb, T beta,
                std::vector<T>& c, int64_t ldc) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T x = trans_a ? a[p * lda + i] : a[i * lda + p];
        const T y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        sum += static_cast<Acc>(x) * static_cast<Acc>(y);
      }
      T& out = c[i * ldc + j];
      out = static_cast<T>(static_cast<Acc>(alpha) * sum +
                           (beta == T(0) ? Acc(0) : static_cast<Acc>(beta) * out));
    }
  }
}

template <typename T>
std::vector<T> random_values(size_t count, std::mt19937& rng) {
  std::vector<T> values(count);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (T& v : values) v = static_cast<T>(dist(rng));
  } else {
    std::uniform_int_distribution<int> dist(-9, 9);
    for (T& v : values) v = static_cast<T>(dist(rng));
  }
  return values;
}

// Runs one configuration through both and compares every element of C, including the
// padding columns between rows (which must stay untouched).
template <typename T>
void check_case(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, T beta,
                std::mt19937& rng) {
  const int64_t pad = 3;  // leading dimensions larger than the rows they hold
  const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
  const auto a = random_values<T>(static_cast<size_t>(a_rows * lda), rng);
  const auto b = random_values<T>(static_cast<size_t>(b_rows * ldb), rng);
  auto c = random_values<T>(static_cast<size_t>(m * ldc), rng);
  auto expected = c;
  gemm<T>(trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  naive_gemm<T>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, expected, ldc);
  for (size_t i = 0; i < c.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      const double tolerance = (std::is_same_v<T, float> ? 2e-6 : 1e-13) * (k + 1);
      ASSERT_NEAR(c[i], expected[i], tolerance) << "m=" << m << " n=" << n << " k=" << k
                                                << " trans " << trans_a << trans_b << " at " << i;
    } else {
      ASSERT_EQ(c[i], expected[i]) << "m=" << m << " n=" << n << " k=" << k << " at " << i;
    }
  }
}

const int64_t kSizes[] = {1, 3, 17, 65, 130};

TEST(Gemm, FloatMatchesNaiveOverOddSizesAndTransposes) {
  std::mt19937 rng(7);
  for (int64_t m : kSizes) {
    for (int64_t n : kSizes) {
      for (int64_t k : kSizes) {
        for (int t = 0; t < 4; ++t) {
          check_case<float>(t & 1, t & 2, m, n, k, 1.0f, 0.0f, rng);
        }
      }
    }
  }
}

TEST(Gemm, FloatAlphaBetaAndDeepK) {
  std::mt19937 rng(11);
  // k = 300 spans two depth blocks (the second accumulates onto the first's beta * C).
  check_case<float>(false, false, 70, 33, 300, 0.5f, 2.0f, rng);
  check_case<float>(true, true, 9, 260, 513, -1.5f, 1.0f, rng);
  check_case<float>(false, true, 130, 5, 257, 1.0f, -0.25f, rng);
}

TEST(Gemm, WideOutputSpansColumnBlocks) {
  std::mt19937 rng(13);
  check_case<float>(false, false, 5, 2100, 7, 1.0f, 0.5f, rng);
}

TEST(Gemm, DoubleMatchesNaive) {
  std::mt19937 rng(17);
  for (int64_t size : kSizes) {
    check_case<double>(false, false, size, 130 - size + 1, 65, 1.0, 0.0, rng);
    check_case<double>(true, false, size, 17, 130, 2.0, 3.0, rng);
    check_case<double>(false, true, 3, size, 257, -1.0, 1.0, rng);
  }
}

TEST(Gemm, IntegerTypesMatchNaive) {
  std::mt19937 rng(19);
  for (int64_t size : kSizes) {
    check_case<int32_t>(false, true, size, 17, 65, 2, 1, rng);
    check_case<int64_t>(true, false, 17, size, 130, 1, 0, rng);
    check_case<uint32_t>(false, false, 3, 65, size, 1, 3, rng);
    check_case<uint64_t>(true, true, size, size, 17, 1, 0, rng);
  }
}

TEST(Gemm, SignedIntegersWrapLikeTwosComplement) {
  const std::vector<int32_t> a{std::numeric_limits<int32_t>::max(), 1};
  const std::vector<int32_t> b{2, 1};
  int32_t c = 0;
  gemm<int32_t>(false, false, 1, 1, 2, 1, a.data(), 2, b.data(), 1, 0, &c, 1);
  EXPECT_EQ(c, -1);  // 2 * (2^31 - 1) + 1 = 2^32 - 1 -> -1
}

TEST(Gemm, BetaZeroIgnoresNanInC) {
  const std::vector<float> a{1, 2, 3, 4};
  const std::vector<float> b{1, 0, 0, 1};
  std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
  gemm<float>(false, false, 2, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4}));
}

TEST(Gemm, ZeroDepthScalesC) {
  std::vector<float> c{1, 2, 3, 4, 5, 6};
  gemm<float>(false, false, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 2.0f, c.data(), 3);
  EXPECT_EQ(c, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  gemm<float>(false, false, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 0.0f, c.data(), 3);
  EXPECT_EQ(c, (std::vector<float>(6, 0.0f)));
}

TEST(Gemm, EmptyOutputTouchesNothing) {
  float c = 42;
  gemm<float>(false, false, 0, 1, 5, 1.0f, nullptr, 5, nullptr, 1, 0.0f, &c, 1);
  gemm<float>(false, false, 1, 0, 5, 1.0f, nullptr, 5, nullptr, 1, 0.0f, &c, 1);
  EXPECT_EQ(c, 42);
}

}  // namespace
}  // namespace onnxkit
