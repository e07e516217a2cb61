// vector_math's loops at every instruction-set level this CPU has, against double-precision
// references: accuracy of exp/tanh/erf/sigmoid, exactness of the arithmetic, tails and
// aliasing, special values, rows (softmax, layer norm) and the 2-D transpose.
#include "kernels/vector_math.h"

#include "ops/fused_activation.h"
#include "ops/fused_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

namespace onnxkit {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> result{SimdLevel::kScalar};
  if (detected_simd_level() >= SimdLevel::kAvx2) result.push_back(SimdLevel::kAvx2);
  if (detected_simd_level() >= SimdLevel::kAvx512) result.push_back(SimdLevel::kAvx512);
  return result;
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Evenly spaced points over [lo, hi], plus the special values every function must handle.
std::vector<float> sweep(float lo, float hi, int count) {
  std::vector<float> xs;
  for (int i = 0; i <= count; ++i) xs.push_back(lo + (hi - lo) * static_cast<float>(i) / count);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 1e-5f, -3e-4f, 0.5f, -0.5f, 1.0f,
                  -1.0f, 3.9f, -3.9f, 80.0f, -80.0f, kInf, -kInf, kNaN}) {
    xs.push_back(v);
  }
  return xs;
}

struct ErrorBound {
  double relative;  // |y - ref| <= relative * |ref| + absolute
  double absolute;
};

// Checks `op` at `level` against `reference` on xs; returns the worst relative error seen.
double check_unary(SimdLevel level, UnaryOp op, const std::vector<float>& xs,
                   const std::function<double(double)>& reference, ErrorBound bound,
                   float p0 = 0.0f, float p1 = 0.0f) {
  std::vector<float> ys(xs.size());
  vector_kernels(level).unary[static_cast<int>(op)](xs.data(), ys.data(),
                                                    static_cast<int64_t>(xs.size()), p0, p1);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = reference(static_cast<double>(xs[i]));
    const auto expected = static_cast<float>(ref);
    if (std::isnan(ref) || std::isinf(expected)) {
      EXPECT_TRUE(same_float(ys[i], expected))
          << simd_level_name(level) << " op " << static_cast<int>(op) << " x=" << xs[i] << " got "
          << ys[i] << " want " << expected;
      continue;
    }
    const double error = std::abs(static_cast<double>(ys[i]) - ref);
    EXPECT_LE(error, bound.relative * std::abs(ref) + bound.absolute)
        << simd_level_name(level) << " op " << static_cast<int>(op) << " x=" << xs[i] << " got "
        << ys[i] << " want " << ref;
    if (std::abs(ref) > 1e-30) worst = std::max(worst, error / std::abs(ref));
  }
  return worst;
}

TEST(VectorMath, LevelsAndOverride) {
  const SimdLevel detected = detected_simd_level();
  EXPECT_EQ(active_simd_level(), detected);
  {
    SimdLevelOverride scalar(SimdLevel::kScalar);
    EXPECT_EQ(active_simd_level(), SimdLevel::kScalar);
    EXPECT_EQ(vector_kernels().level, SimdLevel::kScalar);
    {
      SimdLevelOverride best(SimdLevel::kAvx512);
      EXPECT_EQ(active_simd_level(), detected);  // clamped to what the CPU has
    }
    EXPECT_EQ(active_simd_level(), SimdLevel::kScalar);
  }
  EXPECT_EQ(active_simd_level(), detected);
  std::printf("[ measured ] detected SIMD level: %s\n",
              std::string(simd_level_name(detected)).c_str());
}

TEST(VectorMath, ExpIsAccurate) {
  const auto xs = sweep(-104.0f, 89.0f, 200000);
  for (SimdLevel level : levels()) {
    const double worst =
        check_unary(level, UnaryOp::kExp, xs, [](double x) { return std::exp(x); }, {3e-7, 2e-45});
    std::printf("[ measured ] exp %s: max relative error %.3g\n",
                std::string(simd_level_name(level)).c_str(), worst);
  }
}

TEST(VectorMath, TanhErfSigmoidAreAccurate) {
  for (SimdLevel level : levels()) {
    const std::string name(simd_level_name(level));
    const double tanh_error = check_unary(level, UnaryOp::kTanh, sweep(-10, 10, 200000),
                                          [](double x) { return std::tanh(x); }, {1e-6, 1e-37});
    const double erf_error = check_unary(level, UnaryOp::kErf, sweep(-5, 5, 200000),
                                         [](double x) { return std::erf(x); }, {1e-6, 1e-37});
    const double sigmoid_error =
        check_unary(level, UnaryOp::kSigmoid, sweep(-110, 110, 200000),
                    [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, {1e-6, 1e-38});
    std::printf("[ measured ] %s max relative error: tanh %.3g, erf %.3g, sigmoid %.3g\n",
                name.c_str(), tanh_error, erf_error, sigmoid_error);
  }
}

TEST(VectorMath, GeluAndSiluAreAccurate) {
  // For x << 0 Gelu computes 1 + (a number near -1): absolute error ~|x| * 6e-8, as the
  // unfused graph of standard ops has too. GeluTanh, as x / (1 + exp(-2u)), stays relative.
  const auto xs = sweep(-12, 12, 50000);
  for (SimdLevel level : levels()) {
    check_unary(level, UnaryOp::kGelu, xs,
                [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); },
                {2e-6, 1e-6});
    // x/2 * (1 + tanh(u)) written as x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
    // the same function, without the reference's own cancellation for x << 0. In the tail
    // the float argument's rounding (~|2u| * 6e-8) leaves a relative error of up to ~1e-5
    // (x = -8: values ~1e-24); the tanh form was off there by up to 1e-6 absolute.
    check_unary(level, UnaryOp::kGeluTanh, xs,
                [](double x) {
                  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
                  return x / (1.0 + std::exp(-2.0 * u));
                },
                {1e-5, 1e-30});
    check_unary(level, UnaryOp::kSilu, xs, [](double x) { return x / (1.0 + std::exp(-x)); },
                {2e-6, 1e-38});
  }
}

// Ops that must give exactly what the reference kernels' float expressions give.
TEST(VectorMath, ExactUnaryOpsMatchScalarExpressions) {
  auto xs = sweep(-8, 8, 997);
  const float alpha = 0.2f, beta = 0.5f;
  struct Case {
    UnaryOp op;
    float p0, p1;
    std::function<float(float)> f;
  };
  const std::vector<Case> cases = {
      {UnaryOp::kRelu, 0, 0, [](float v) { return v > 0.0f ? v : 0.0f; }},
      {UnaryOp::kLeakyRelu, 0.01f, 0, [](float v) { return v < 0.0f ? 0.01f * v : v; }},
      {UnaryOp::kClip, -1.5f, 2.0f,
       [](float v) {
         const float t = v < -1.5f ? -1.5f : v;
         return t > 2.0f ? 2.0f : t;
       }},
      {UnaryOp::kSqrt, 0, 0, [](float v) { return std::sqrt(v); }},
      {UnaryOp::kReciprocal, 0, 0, [](float v) { return 1.0f / v; }},
      {UnaryOp::kNeg, 0, 0, [](float v) { return -v; }},
      {UnaryOp::kAbs, 0, 0, [](float v) { return std::abs(v); }},
      {UnaryOp::kSquare, 0, 0, [](float v) { return v * v; }},
      {UnaryOp::kPowHalf, 0, 0, [](float v) { return std::pow(v, 0.5f); }},
  };
  for (SimdLevel level : levels()) {
    for (const Case& c : cases) {
      std::vector<float> ys(xs.size());
      vector_kernels(level).unary[static_cast<int>(c.op)](
          xs.data(), ys.data(), static_cast<int64_t>(xs.size()), c.p0, c.p1);
      for (size_t i = 0; i < xs.size(); ++i) {
        ASSERT_TRUE(same_float(ys[i], c.f(xs[i])))
            << simd_level_name(level) << " op " << static_cast<int>(c.op) << " x=" << xs[i]
            << " got " << ys[i] << " want " << c.f(xs[i]);
      }
    }
    // HardSigmoid/HardSwish fuse a multiply-add: within an ulp or two.
    check_unary(
        level, UnaryOp::kHardSigmoid, xs,
        [&](double v) { return std::max(0.0, std::min(1.0, alpha * v + beta)); }, {3e-7, 1e-7},
        alpha, beta);
    check_unary(level, UnaryOp::kHardSwish, xs,
                [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); },
                {3e-7, 1e-7});
    check_unary(level, UnaryOp::kCube, xs, [](double v) { return v * v * v; }, {3e-7, 1e-44});
  }
}

TEST(VectorMath, BinaryLoopsAreExactForEveryLengthAndAlias) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (SimdLevel level : levels()) {
    const VectorKernels& k = vector_kernels(level);
    for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 31, 33, 100, 1023}) {
      std::vector<float> a(n), b(n);
      for (auto& v : a) v = normal(rng);
      for (auto& v : b) v = normal(rng);
      if (n > 3) a[1] = kNaN, b[2] = kInf, a[3] = -0.0f;
      for (int op = 0; op < static_cast<int>(BinaryOp::kCount); ++op) {
        const auto apply = [op](float x, float y) {
          switch (static_cast<BinaryOp>(op)) {
            case BinaryOp::kAdd:
              return x + y;
            case BinaryOp::kSub:
              return x - y;
            case BinaryOp::kMul:
              return x * y;
            default:
              return x / y;
          }
        };
        std::vector<float> out(n + 1, 123.0f), right(n + 1, 123.0f), left(n + 1, 123.0f);
        k.binary[op](a.data(), b.data(), out.data(), n);
        k.binary_scalar_right[op](a.data(), 1.75f, right.data(), n);
        k.binary_scalar_left[op](-2.5f, b.data(), left.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(same_float(out[i], apply(a[i], b[i]))) << "op " << op << " n " << n;
          ASSERT_TRUE(same_float(right[i], apply(a[i], 1.75f)));
          ASSERT_TRUE(same_float(left[i], apply(-2.5f, b[i])));
        }
        EXPECT_EQ(out[n], 123.0f) << "wrote past the end";
        EXPECT_EQ(right[n], 123.0f);
        EXPECT_EQ(left[n], 123.0f);
        std::vector<float> in_place = a;  // out aliases a
        k.binary[op](in_place.data(), b.data(), in_place.data(), n);
        for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_float(in_place[i], out[i]));
      }
      std::vector<float> c(n, 0.25f), sum3(n);
      k.add3(a.data(), b.data(), c.data(), sum3.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_float(sum3[i], a[i] + b[i] + 0.25f));
    }
  }
}

TEST(VectorMath, SelectReadsBytesAndScalars) {
  for (SimdLevel level : levels()) {
    for (int64_t n : {1, 15, 16, 17, 40}) {
      std::vector<uint8_t> cond(n);
      std::vector<float> a(n), b(n), out(n);
      for (int64_t i = 0; i < n; ++i) cond[i] = (i % 3 == 0) ? 1 : 0, a[i] = i, b[i] = -i;
      vector_kernels(level).select(cond.data(), a.data(), 0, nullptr, -7.0f, out.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], cond[i] ? a[i] : -7.0f);
      vector_kernels(level).select(cond.data(), nullptr, 3.0f, b.data(), 0, out.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], cond[i] ? 3.0f : b[i]);
    }
  }
}

TEST(VectorMath, RowsMatchDoublePrecision) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (SimdLevel level : levels()) {
    const VectorKernels& k = vector_kernels(level);
    for (int64_t n : {1, 2, 15, 17, 64, 128, 768, 1023}) {
      std::vector<float> x(n), gamma(n), beta(n), y(n);
      for (auto& v : x) v = normal(rng) + 5.0f;
      for (auto& v : gamma) v = normal(rng);
      for (auto& v : beta) v = normal(rng);
      double max = -1e300, sum = 0, mean = 0, var = 0;
      for (float v : x) max = std::max(max, static_cast<double>(v)), mean += v;
      for (float v : x) sum += std::exp(v - max);
      EXPECT_NEAR(k.sum(x.data(), n), mean, 1e-5 * std::abs(mean) + 1e-5);
      mean /= n;
      for (float v : x) var += (v - mean) * (v - mean);
      var /= n;
      k.softmax_row(x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = std::exp(x[i] - max) / sum;
        ASSERT_NEAR(y[i], ref, 2e-6 * ref + 1e-12) << simd_level_name(level) << " n " << n;
      }
      k.log_softmax_row(x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = x[i] - max - std::log(sum);
        ASSERT_NEAR(y[i], ref, 2e-6 * std::abs(ref) + 2e-6);
      }
      k.layer_norm_row(x.data(), gamma.data(), beta.data(), 1e-5f, y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = (x[i] - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i];
        ASSERT_NEAR(y[i], ref, 1e-5 * std::abs(ref) + 1e-5) << simd_level_name(level) << n;
      }
      k.layer_norm_row(x.data(), gamma.data(), nullptr, 1e-5f, x.data(), n);  // in place
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(x[i], y[i] - beta[i], 1e-5 + 1e-5 * std::abs(y[i]));
    }
    // Special rows: NaN anywhere or all -inf give NaN rows; -inf entries give 0.
    std::vector<float> row = {1.0f, -kInf, 2.0f}, out(3);
    k.softmax_row(row.data(), out.data(), 3);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_NEAR(out[0] + out[2], 1.0f, 1e-6);
    row = {1.0f, kNaN, 2.0f};
    k.softmax_row(row.data(), out.data(), 3);
    for (float v : out) EXPECT_TRUE(std::isnan(v));
    row = {-kInf, -kInf, -kInf};
    k.softmax_row(row.data(), out.data(), 3);
    for (float v : out) EXPECT_TRUE(std::isnan(v));
  }
}

TEST(VectorMath, TransposeMovesEveryElement) {
  for (SimdLevel level : levels()) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 9}, {9, 1}, {8, 8}, {15, 17}, {64, 64}, {65, 129}, {3, 200}}) {
      const int64_t src_stride = cols + 3, dst_stride = rows + 5;
      std::vector<uint32_t> src(rows * src_stride), dst(cols * dst_stride, 0xFFFFFFFFu);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i * 2654435761u);
      vector_kernels(level).transpose_2d(src.data(), src_stride, dst.data(), dst_stride, rows,
                                         cols);
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = 0; i < dst_stride; ++i) {
          const uint32_t want = i < rows ? src[i * src_stride + j] : 0xFFFFFFFFu;
          ASSERT_EQ(dst[j * dst_stride + i], want)
              << simd_level_name(level) << " " << rows << "x" << cols << " at " << j << "," << i;
        }
      }
    }
  }
}

TEST(VectorMath, EveryFusedActivationHasAUnaryMap) {
  for (std::string_view name : kActivations) {
    const ActivationSpec* spec = find_activation(name);
    ASSERT_TRUE(spec) << name;
    const auto activation = vector_activation(ActivationFunction::with_defaults(spec->kind));
    ASSERT_TRUE(activation) << name;
    std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.25f, 4.0f}, y(x.size());
    apply_activation(*activation, x.data(), y.data(), static_cast<int64_t>(x.size()));
    std::vector<float> direct(x.size());
    vector_kernels().unary[static_cast<int>(activation->op)](x.data(), direct.data(), 5,
                                                             activation->p0, activation->p1);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(same_float(y[i], direct[i])) << name;
  }
  EXPECT_FALSE(vector_activation(ActivationFunction::with_defaults(ActivationKind::kSoftplus)));
  const auto clip = vector_activation({ActivationKind::kClip, 0.0f, 6.0f});
  float values[] = {-1.0f, 3.0f, 9.0f};
  apply_activation(*clip, values, values, 3);
  EXPECT_EQ(values[0], 0.0f);
  EXPECT_EQ(values[1], 3.0f);
  EXPECT_EQ(values[2], 6.0f);
  const auto leaky =
      vector_activation(ActivationFunction::with_defaults(ActivationKind::kLeakyRelu));
  EXPECT_EQ(leaky->p0, 0.01f);
}

}  // namespace
}  // namespace onnxkit
