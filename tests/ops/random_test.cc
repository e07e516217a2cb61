// Random ops: seeded reproducibility, ranges and sample statistics of the distributions,
// dtypes and error messages. The conformance cases compare only dtype and shape.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct Moments {
  double mean, stddev;
};

Moments moments(const std::vector<double>& v) {
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size()))};
}

constexpr int64_t kSamples = 100000;

TEST(RandomUniform, SeededRunsRepeatAndSeedsDiffer) {
  auto attrs = [](float seed) {
    return [seed](Node* n) {
      set_ints(n, "shape", {4, 5});
      set_float(n, "seed", seed);
    };
  };
  const Tensor a = run_one("RandomUniform", {}, 17, attrs(3.0f));
  const Tensor b = run_one("RandomUniform", {}, 17, attrs(3.0f));
  const Tensor c = run_one("RandomUniform", {}, 17, attrs(4.0f));
  EXPECT_EQ(a.dtype(), DType::kFloat);
  EXPECT_EQ(a.shape(), (Shape{4, 5}));
  EXPECT_TRUE(a.same_contents(b));
  EXPECT_FALSE(a.same_contents(c));
}

TEST(RandomUniform, UnseededRunsDiffer) {
  auto attrs = [](Node* n) { set_ints(n, "shape", {100}); };
  const Tensor a = run_one("RandomUniform", {}, 1, attrs);
  const Tensor b = run_one("RandomUniform", {}, 1, attrs);
  EXPECT_FALSE(a.same_contents(b));
}

TEST(RandomUniform, RangeAndMoments) {
  const Tensor t = run_one("RandomUniform", {}, 1, [](Node* n) {
    set_ints(n, "shape", {kSamples});
    set_float(n, "low", -2.0f);
    set_float(n, "high", 6.0f);
    set_float(n, "seed", 1.0f);
  });
  const auto v = as_doubles<float>(t);
  for (double x : v) {
    ASSERT_GE(x, -2.0);
    ASSERT_LT(x, 6.0);
  }
  const Moments m = moments(v);
  EXPECT_NEAR(m.mean, 2.0, 0.05);
  EXPECT_NEAR(m.stddev, 8.0 / std::sqrt(12.0), 0.05);  // 2.309
}

TEST(RandomUniform, Float16AndDoubleStayBelowHigh) {
  for (DType dtype : {DType::kFloat16, DType::kDouble}) {
    const Tensor t = run_one("RandomUniform", {}, 1, [dtype](Node* n) {
      set_ints(n, "shape", {kSamples});
      set_int(n, "dtype", static_cast<int64_t>(dtype));
      set_float(n, "low", 1.0f);
      set_float(n, "high", 2.0f);
    });
    ASSERT_EQ(t.dtype(), dtype);
    const auto v = dtype == DType::kDouble ? as_doubles<double>(t) : as_doubles<Float16>(t);
    for (double x : v) {
      ASSERT_GE(x, 1.0);
      ASSERT_LT(x, 2.0);
    }
    EXPECT_NEAR(moments(v).mean, 1.5, 0.01);
  }
}

TEST(RandomUniform, EmptyShapeAndScalar) {
  const Tensor empty = run_one("RandomUniform", {}, 1, [](Node* n) {
    set_ints(n, "shape", {0, 3});
  });
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_EQ(empty.numel(), 0);
  const Tensor scalar = run_one("RandomUniform", {}, 1, [](Node* n) { set_ints(n, "shape", {}); });
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(scalar.numel(), 1);
}

TEST(RandomUniform, Errors) {
  EXPECT_NE(run_error("RandomUniform", {}, 1).find("shape attribute is required"),
            std::string::npos);
  EXPECT_NE(run_error("RandomUniform", {}, 1,
                      [](Node* n) {
                        set_ints(n, "shape", {2});
                        set_int(n, "dtype", 6);
                      })
                .find("dtype int32 is not supported"),
            std::string::npos);
  EXPECT_NE(run_error("RandomUniform", {}, 1,
                      [](Node* n) {
                        set_ints(n, "shape", {2, -1});
                      })
                .find("shape dim 1 is -1"),
            std::string::npos);
  EXPECT_NE(run_error("RandomUniform", {}, 1,
                      [](Node* n) {
                        set_ints(n, "shape", {2});
                        set_float(n, "low", 3.0f);
                        set_float(n, "high", 1.0f);
                      })
                .find("low <= high"),
            std::string::npos);
}

TEST(RandomNormal, MomentsAndReproducibility) {
  auto attrs = [](Node* n) {
    set_ints(n, "shape", {kSamples});
    set_float(n, "mean", 2.0f);
    set_float(n, "scale", 3.0f);
    set_float(n, "seed", 7.5f);
  };
  const Tensor a = run_one("RandomNormal", {}, 1, attrs);
  const Tensor b = run_one("RandomNormal", {}, 1, attrs);
  EXPECT_TRUE(a.same_contents(b));
  const Moments m = moments(as_doubles<float>(a));
  EXPECT_NEAR(m.mean, 2.0, 0.05);
  EXPECT_NEAR(m.stddev, 3.0, 0.05);
}

TEST(RandomNormal, OddCountAndDouble) {
  const Tensor t = run_one("RandomNormal", {}, 1, [](Node* n) {
    set_ints(n, "shape", {3, 3});
    set_int(n, "dtype", 11);
  });
  EXPECT_EQ(t.dtype(), DType::kDouble);
  EXPECT_EQ(t.numel(), 9);
  for (double x : as_doubles<double>(t)) EXPECT_TRUE(std::isfinite(x));
}

TEST(RandomUniformLike, ShapeAndDtypeFromInput) {
  const Tensor input(DType::kDouble, {2, 3, 4});
  const Tensor t = run_one("RandomUniformLike", {input}, 1, [](Node* n) {
    set_float(n, "low", 10.0f);
    set_float(n, "high", 11.0f);
  });
  EXPECT_EQ(t.dtype(), DType::kDouble);
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  for (double x : as_doubles<double>(t)) {
    EXPECT_GE(x, 10.0);
    EXPECT_LT(x, 11.0);
  }
}

TEST(RandomUniformLike, IntegerInputNeedsDtype) {
  const Tensor input(DType::kInt32, {5});
  EXPECT_NE(run_error("RandomUniformLike", {input}, 1).find("input type int32"), std::string::npos);
  const Tensor t =
      run_one("RandomUniformLike", {input}, 1, [](Node* n) { set_int(n, "dtype", 10); });
  EXPECT_EQ(t.dtype(), DType::kFloat16);
  EXPECT_EQ(t.shape(), Shape{5});
}

TEST(RandomNormalLike, Moments) {
  const Tensor input(DType::kFloat, {kSamples});
  const Tensor t = run_one("RandomNormalLike", {input}, 1, [](Node* n) {
    set_float(n, "mean", -1.0f);
    set_float(n, "scale", 0.5f);
    set_float(n, "seed", 0.0f);
  });
  EXPECT_EQ(t.dtype(), DType::kFloat);
  const Moments m = moments(as_doubles<float>(t));
  EXPECT_NEAR(m.mean, -1.0, 0.01);
  EXPECT_NEAR(m.stddev, 0.5, 0.01);
}

TEST(Bernoulli, ZeroOneAndMeanNearP) {
  const Tensor p =
      Tensor::from_vector<float>(DType::kFloat, {kSamples}, std::vector<float>(kSamples, 0.3f));
  const Tensor t = run_one("Bernoulli", {p}, 15, [](Node* n) { set_float(n, "seed", 2.0f); });
  EXPECT_EQ(t.dtype(), DType::kFloat);
  EXPECT_EQ(t.shape(), Shape{kSamples});
  const auto v = as_doubles<float>(t);
  for (double x : v) ASSERT_TRUE(x == 0.0 || x == 1.0);
  EXPECT_NEAR(moments(v).mean, 0.3, 0.01);
  // Seeded: the same draws again.
  EXPECT_TRUE(
      t.same_contents(run_one("Bernoulli", {p}, 15, [](Node* n) { set_float(n, "seed", 2.0f); })));
}

TEST(Bernoulli, CertainProbabilitiesAndDtypes) {
  const Tensor p = Tensor::from_vector<double>(DType::kDouble, {2, 2}, {0.0, 1.0, 1.0, 0.0});
  const Tensor b = run_one("Bernoulli", {p}, 15, [](Node* n) { set_int(n, "dtype", 9); });
  ASSERT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(b.shape(), (Shape{2, 2}));
  EXPECT_EQ(as_doubles<bool>(b), (std::vector<double>{0, 1, 1, 0}));
  const Tensor i = run_one("Bernoulli", {p}, 15, [](Node* n) { set_int(n, "dtype", 7); });
  ASSERT_EQ(i.dtype(), DType::kInt64);
  EXPECT_EQ(as_doubles<int64_t>(i), (std::vector<double>{0, 1, 1, 0}));
  const Tensor d = run_one("Bernoulli", {p}, 15);
  ASSERT_EQ(d.dtype(), DType::kDouble);
  EXPECT_EQ(as_doubles<double>(d), (std::vector<double>{0, 1, 1, 0}));
}

TEST(Bernoulli, Errors) {
  const Tensor p = Tensor::from_vector<float>(DType::kFloat, {3}, {0.5f, 1.5f, 0.0f});
  EXPECT_NE(run_error("Bernoulli", {p}, 15).find("probability 1.5 at index 1 is outside [0, 1]"),
            std::string::npos);
  const Tensor ints = Tensor::from_vector<int32_t>(DType::kInt32, {1}, {1});
  EXPECT_NE(run_error("Bernoulli", {ints}, 15).find("input type int32 is not supported"),
            std::string::npos);
}

TEST(Multinomial, FrequenciesNearProbabilities) {
  const std::vector<double> probs{0.2, 0.3, 0.5};
  // Unnormalized: log(p) + 4 has the same softmax. Row 1 has a class of zero probability.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor logits = Tensor::from_vector<float>(
      DType::kFloat, {2, 3},
      {static_cast<float>(std::log(0.2) + 4), static_cast<float>(std::log(0.3) + 4),
       static_cast<float>(std::log(0.5) + 4), -inf, 0.0f, 0.0f});
  const Tensor t = run_one("Multinomial", {logits}, 7, [](Node* n) {
    set_int(n, "sample_size", kSamples);
    set_float(n, "seed", 5.0f);
  });
  ASSERT_EQ(t.dtype(), DType::kInt32);
  ASSERT_EQ(t.shape(), (Shape{2, kSamples}));
  std::map<int32_t, int64_t> counts0, counts1;
  const int32_t* out = t.data<int32_t>();
  for (int64_t s = 0; s < kSamples; ++s) {
    ASSERT_GE(out[s], 0);
    ASSERT_LT(out[s], 3);
    ++counts0[out[s]];
    ++counts1[out[kSamples + s]];
  }
  for (int32_t c = 0; c < 3; ++c) {
    EXPECT_NEAR(static_cast<double>(counts0[c]) / kSamples, probs[c], 0.01) << "class " << c;
  }
  EXPECT_EQ(counts1[0], 0);
  EXPECT_NEAR(static_cast<double>(counts1[1]) / kSamples, 0.5, 0.01);
  // Seeded: the same draws again.
  EXPECT_TRUE(t.same_contents(run_one("Multinomial", {logits}, 7, [](Node* n) {
    set_int(n, "sample_size", kSamples);
    set_float(n, "seed", 5.0f);
  })));
}

TEST(Multinomial, Int64AndDefaultSampleSize) {
  const Tensor logits =
      Tensor::from_vector<double>(DType::kDouble, {3, 2}, {0.0, -1e30, -1e30, 0.0, 0.0, -1e30});
  const Tensor t = run_one("Multinomial", {logits}, 7, [](Node* n) { set_int(n, "dtype", 7); });
  ASSERT_EQ(t.dtype(), DType::kInt64);
  ASSERT_EQ(t.shape(), (Shape{3, 1}));
  EXPECT_EQ(as_doubles<int64_t>(t), (std::vector<double>{0, 1, 0}));
}

TEST(Multinomial, Errors) {
  const Tensor rank1 = Tensor::from_vector<float>(DType::kFloat, {3}, {0, 0, 0});
  EXPECT_NE(run_error("Multinomial", {rank1}, 7).find("input must have rank 2"), std::string::npos);
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor dead = Tensor::from_vector<float>(DType::kFloat, {1, 2}, {-inf, -inf});
  EXPECT_NE(run_error("Multinomial", {dead}, 7).find("row 0 has no outcome"), std::string::npos);
  const Tensor logits = Tensor::from_vector<float>(DType::kFloat, {1, 2}, {0, 0});
  EXPECT_NE(run_error("Multinomial", {logits}, 7, [](Node* n) { set_int(n, "dtype", 1); })
                .find("dtype 1 is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace onnxkit
