// The fast com.onnxkit Attention kernel against the unfused graph on the reference kernels:
// MatMul(Q, Transpose(K)) * scale + Mask, Where(Keep, S, masked_value), Softmax, MatMul(V).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "kernel_test_util.h"
#include "kernels/attention.h"
#include "kernels/vector_math.h"
#include "ops/fused_ops.h"
#include "ops/registry.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct AttentionCase {
  int64_t batch, heads, sq, sk, d, dv;
  std::optional<Shape> mask = {};  // additive float mask
  std::optional<Shape> keep = {};  // bool
  bool k_transposed = false;
  std::optional<float> scale = {};
  std::optional<float> masked_value = {};
  int threads = 1;
  // q_perm, k_perm, v_perm, y_perm: Q, K and V are fed stored so that Transpose(stored, perm)
  // is the operand; Y comes out as Transpose(Y, y_perm).
  std::array<std::optional<std::vector<int64_t>>, 4> perms = {};

  std::string describe() const {
    std::string layout;
    const char* names[] = {"q_perm", "k_perm", "v_perm", "y_perm"};
    for (size_t i = 0; i < 4; ++i) {
      if (perms[i]) layout += fmt::format(" {}=[{}]", names[i], fmt::join(*perms[i], ","));
    }
    return fmt::format(
        "B={} H={} Sq={} Sk={} D={} Dv={} mask={} keep={} k_transposed={} "
        "scale={} masked_value={} threads={}{}",
        batch, heads, sq, sk, d, dv, mask ? shape_to_string(*mask) : "none",
        keep ? shape_to_string(*keep) : "none", k_transposed,
        scale ? std::to_string(*scale) : "default",
        masked_value ? std::to_string(*masked_value) : "default", threads, layout);
  }
};

// The stored shape of an operand of shape `logical` given as Transpose(stored, perm).
Shape stored_shape(const Shape& logical, const std::vector<int64_t>& perm) {
  Shape stored(logical.size());
  for (size_t i = 0; i < perm.size(); ++i) stored[perm[i]] = logical[i];
  return stored;
}

// A mask of normal values with about one entry in five at -inf (or a large negative).
Tensor random_mask(const Shape& shape, std::mt19937_64& rng) {
  Tensor mask = random_floats(shape, rng);
  float* data = mask.mutable_data<float>();
  for (int64_t i = 0; i < mask.numel(); ++i) {
    if (rng() % 5 == 0) data[i] = rng() % 2 ? -kInf : -10000.0f;
  }
  return mask;
}

// Keep flags, about four in five true.
Tensor random_keep(const Shape& shape, std::mt19937_64& rng) {
  Tensor keep(DType::kBool, shape);
  bool* data = keep.mutable_data<bool>();
  for (int64_t i = 0; i < keep.numel(); ++i) data[i] = rng() % 5 != 0;
  return keep;
}

// The fused Attention node against the unfused graph on the reference kernels, on both
// fast paths (AVX-512 register tiles where the CPU has them, oneDNN matmuls) and, with
// perms, on the reference Attention kernel.
void check(const AttentionCase& c, const Tensor* mask_override = nullptr,
           const Tensor* keep_override = nullptr, uint64_t seed = 1) {
  SCOPED_TRACE(c.describe());
  std::mt19937_64 rng(seed);
  auto stored = [&](size_t operand, const Shape& logical) {
    return c.perms[operand] ? stored_shape(logical, *c.perms[operand]) : logical;
  };
  const Tensor q = random_floats(stored(0, {c.batch, c.heads, c.sq, c.d}), rng);
  const Tensor k = random_floats(stored(1, c.k_transposed ? Shape{c.batch, c.heads, c.d, c.sk}
                                                          : Shape{c.batch, c.heads, c.sk, c.d}),
                                 rng);
  const Tensor v = random_floats(stored(2, {c.batch, c.heads, c.sk, c.dv}), rng);
  Tensor mask, keep;
  if (mask_override)
    mask = *mask_override;
  else if (c.mask)
    mask = random_mask(*c.mask, rng);
  if (keep_override)
    keep = *keep_override;
  else if (c.keep)
    keep = random_keep(*c.keep, rng);

  auto fused = [&] {
    auto g = std::make_unique<GraphBuilder>();
    std::vector<Value*> inputs{g->input(q), g->input(k), g->input(v)};
    if (mask.defined() || keep.defined()) {
      inputs.push_back(mask.defined() ? g->input(mask) : nullptr);
    }
    if (keep.defined()) inputs.push_back(g->input(keep));
    g->output(g->op(
        "Attention", inputs,
        [&](Node* node) {
          if (c.k_transposed) set_int(node, "k_transposed", 1);
          if (c.scale) set_float(node, "scale", *c.scale);
          if (c.masked_value) set_float(node, "masked_value", *c.masked_value);
          const char* names[] = {"q_perm", "k_perm", "v_perm", "y_perm"};
          for (size_t i = 0; i < 4; ++i) {
            if (c.perms[i]) set_ints(node, names[i], *c.perms[i]);
          }
        },
        std::string(kOnnxkitDomain)));
    return g;
  };
  auto unfused = [&] {
    auto g = std::make_unique<GraphBuilder>();
    auto operand = [&](const Tensor& t, size_t i) {
      Value* value = g->input(t);
      if (!c.perms[i]) return value;
      return g->op("Transpose", {value}, [&](Node* n) { set_ints(n, "perm", *c.perms[i]); });
    };
    Value* qv = operand(q, 0);
    Value* kt = operand(k, 1);
    Value* vv = operand(v, 2);
    if (!c.k_transposed) {
      kt = g->op("Transpose", {kt}, [](Node* n) { set_ints(n, "perm", {0, 1, 3, 2}); });
    }
    const float scale = c.scale ? *c.scale : 1.0f / std::sqrt(static_cast<float>(c.d));
    Value* s = g->op("Mul", {g->op("MatMul", {qv, kt}), g->scalar(scale)});
    if (mask.defined()) s = g->op("Add", {s, g->input(mask)});
    if (keep.defined()) {
      const float masked = c.masked_value ? *c.masked_value : -kInf;
      s = g->op("Where", {g->input(keep), s, g->scalar(masked)});
    }
    Value* p = g->op("Softmax", {s}, [](Node* n) { set_int(n, "axis", -1); });
    Value* y = g->op("MatMul", {p, vv});
    if (c.perms[3]) {
      y = g->op("Transpose", {y}, [&](Node* n) { set_ints(n, "perm", *c.perms[3]); });
    }
    g->output(y);
    return g;
  };
  std::vector<std::optional<SimdLevel>> paths{std::nullopt};
  if (detected_simd_level() == SimdLevel::kAvx512) paths.push_back(SimdLevel::kAvx2);
  for (const auto& path : paths) {
    SCOPED_TRACE(path ? "forced AVX2 (oneDNN path)" : "detected instruction set");
    std::optional<SimdLevelOverride> forced;
    if (path) forced.emplace(*path);
    auto actual = fused(), expected = unfused();
    EXPECT_TRUE(matches(*actual, *expected, c.threads));
  }
  // The reference Attention kernel's reading of perms (the rest of it: fused_transformer_test;
  // it computes in double, so a row shifted by a mask of -10000 would differ from the float
  // graph's here).
  if (std::none_of(c.perms.begin(), c.perms.end(), [](const auto& p) { return p.has_value(); })) {
    return;
  }
  auto actual = fused(), expected = unfused();
  NamedValues got =
      run_model(std::move(actual->model()), actual->feeds(), SessionOptions::reference());
  NamedValues want =
      run_model(std::move(expected->model()), expected->feeds(), SessionOptions::reference());
  const Comparison compared = compare_values(got[0].second, want[0].second, kTolerance);
  EXPECT_TRUE(compared.ok) << "reference kernel: " << compared.message;
}

TEST(Attention, IsRegisteredAsOptimized) {
  EXPECT_TRUE(builtin_registry().find_optimized(kOnnxkitDomain, "Attention", 1));
}

TEST(Attention, NoMask) {
  check({1, 1, 1, 1, 1, 1});
  check({2, 3, 5, 7, 4, 6});
  check({1, 12, 128, 128, 64, 64});
  check({2, 2, 17, 33, 16, 8, {}, {}, true});  // K given transposed
  check({1, 2, 9, 13, 5, 3, {}, {}, false, 0.3f});
  check({2, 3, 3, 1, 2, 5});  // one key: every probability is 1
}

TEST(Attention, AdditiveMasks) {
  check({2, 3, 5, 7, 4, 6, Shape{2, 1, 1, 7}});         // padding mask
  check({2, 3, 5, 7, 4, 6, Shape{1, 1, 5, 7}});         // causal-style
  check({2, 3, 5, 7, 4, 6, Shape{2, 3, 5, 7}});         // full
  check({2, 3, 5, 7, 4, 6, Shape{7}});                  // rank 1
  check({2, 3, 5, 7, 4, 6, Shape{2, 3, 5, 1}});         // one value per row
  check({1, 4, 129, 17, 8, 16, Shape{1, 1, 129, 17}});  // odd sizes
  check({2, 2, 16, 31, 7, 9, Shape{2, 1, 1, 31}, {}, true, 0.5f});
}

TEST(Attention, KeepFlags) {
  check({2, 3, 5, 7, 4, 6, {}, Shape{1, 1, 5, 7}});
  check({2, 3, 5, 7, 4, 6, {}, Shape{2, 1, 1, 7}, false, {}, -10000.0f});
  check({2, 3, 5, 7, 4, 6, {}, Shape{2, 3, 5, 7}, false, {}, -3.4028235e38f});
  check({2, 3, 5, 7, 4, 6, Shape{2, 1, 1, 7}, Shape{1, 1, 5, 7}});  // both kinds
  check({1, 2, 33, 65, 16, 16, Shape{1, 1, 33, 65}, Shape{1, 2, 33, 1}, true});
}

// Rows whose every entry is masked to -inf come out NaN, as the unfused graph's do.
TEST(Attention, FullyMaskedRowsAreNaN) {
  const AttentionCase c{1, 2, 4, 6, 3, 5, Shape{1, 1, 4, 6}, Shape{1, 1, 4, 6}};
  Tensor mask(DType::kFloat, {1, 1, 4, 6});
  Tensor keep(DType::kBool, {1, 1, 4, 6});
  float* m = mask.mutable_data<float>();
  bool* k = keep.mutable_data<bool>();
  for (int i = 0; i < 24; ++i) k[i] = true;
  for (int j = 0; j < 6; ++j) m[1 * 6 + j] = -kInf;  // row 1: masked by Mask
  for (int j = 0; j < 6; ++j) k[2 * 6 + j] = false;  // row 2: masked by Keep
  m[3 * 6 + 4] = -kInf;                              // row 3: one entry masked
  check(c, &mask, &keep);
  // With a finite masked_value a row of Keep = false is uniform, not NaN.
  AttentionCase finite = c;
  finite.masked_value = -1e9f;
  Tensor no_mask = Tensor(DType::kFloat, {1, 1, 4, 6});
  check(finite, &no_mask, &keep);
}

// Long sequences: several blocks of query rows per head, tails, more than one thread.
TEST(Attention, BlocksAndThreads) {
  check({1, 1, 200, 600, 8, 8, Shape{1, 1, 1, 600}});
  check({1, 2, 70, 1000, 4, 4, Shape{1, 1, 70, 1000}, Shape{1, 2, 1, 1000}, true});
  check({2, 3, 37, 50, 16, 24, Shape{2, 1, 1, 50}, {}, false, {}, {}, 2});
  check({1, 1, 300, 40, 8, 8, Shape{1, 1, 300, 40}, {}, false, {}, {}, 2});
}

// Register tiles and their edges: query rows around multiples of the 6-row tile, keys around
// the 16-wide vectors and 64-wide tiles, head sizes not a multiple of 16.
TEST(Attention, TileEdges) {
  for (int64_t sq : {1, 5, 6, 7, 13}) {
    for (int64_t sk : {1, 15, 16, 17, 63, 64, 65, 130}) {
      check({1, 2, sq, sk, 64, 64, Shape{1, 1, 1, sk}});
    }
  }
  for (auto [d, dv] : {std::pair{1, 1}, {3, 17}, {8, 48}, {20, 80}, {33, 65}, {64, 130}}) {
    check({1, 2, 7, 19, d, dv});
    check({1, 2, 7, 19, d, dv, {}, {}, true});
  }
}

// Operands read through perms, as fuse_transpose_into_attention leaves them: BERT's [B, S, H,
// D] heads (K also transposed), rank-3 attention lifted with a trailing 1 (ViT), a Y written
// back [B, S, H, Dv], and a perm that moves D off the last axis (oneDNN path only).
TEST(Attention, Perms) {
  const std::vector<int64_t> bshd{0, 2, 1, 3};
  AttentionCase bert{1, 4, 9, 9, 16, 16, Shape{1, 1, 1, 9}};
  bert.perms = {bshd, bshd, bshd, bshd};
  check(bert);
  AttentionCase k_transposed{2, 3, 13, 11, 20, 24, {}, Shape{1, 1, 13, 11}, true};
  k_transposed.perms = {bshd, std::vector<int64_t>{0, 2, 3, 1}, bshd, bshd};
  check(k_transposed);
  AttentionCase lifted{6, 1, 17, 17, 8, 8};  // [S, B*H, D, 1] stored
  lifted.perms = {std::vector<int64_t>{1, 3, 0, 2}, std::vector<int64_t>{1, 3, 0, 2},
                  std::vector<int64_t>{1, 3, 0, 2}, std::vector<int64_t>{2, 0, 3, 1}};
  check(lifted);
  AttentionCase only_output{1, 2, 5, 7, 4, 6};
  only_output.perms[3] = bshd;
  check(only_output);
  AttentionCase strided_d{1, 2, 5, 7, 4, 6};
  strided_d.perms = {std::vector<int64_t>{0, 1, 3, 2},
                     {},
                     std::vector<int64_t>{0, 3, 2, 1},
                     std::vector<int64_t>{3, 1, 2, 0}};
  check(strided_d);
  AttentionCase threads{2, 6, 50, 50, 64, 64, Shape{2, 1, 1, 50}, {}, false, {}, {}, 2};
  threads.perms = {bshd, bshd, bshd, bshd};
  check(threads);
}

// Every instruction-set variant of the row softmax against a double-precision softmax,
// over lengths around the vector widths and each kind of mask and keep.
TEST(Attention, SoftmaxRowVariants) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> value(-30.0f, 30.0f);
  const auto variants = softmax_row_variants();
  EXPECT_STREQ(variants.front().first, "scalar");
  for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 129}) {
    std::vector<float> scores(n), mask(n);
    std::vector<uint8_t> keep(n);
    for (int form = 0; form < 6; ++form) {
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = value(rng);
        mask[j] = rng() % 4 == 0 ? -kInf : value(rng);
        keep[j] = rng() % 4 != 0;
      }
      SoftmaxRowTerms terms;
      terms.masked_value = form == 5 ? -kInf : -1e4f;
      if (form == 1) terms.mask = mask.data(), terms.mask_stride = 1;
      if (form == 2) terms.mask = mask.data(), terms.mask_stride = 0;
      if (form == 3) terms.keep = keep.data(), terms.keep_stride = 1;
      if (form == 4) terms.keep = keep.data(), terms.keep_stride = 0;
      if (form == 5) {  // every entry masked: NaN
        std::fill(keep.begin(), keep.end(), 0);
        terms.keep = keep.data(), terms.keep_stride = 1;
      }
      std::vector<double> expected(n);
      double max = -kInf;
      for (int64_t j = 0; j < n; ++j) {
        double x = scores[j];
        if (terms.mask) x += terms.mask[j * terms.mask_stride];
        if (terms.keep && !terms.keep[j * terms.keep_stride]) x = terms.masked_value;
        expected[j] = x;
        max = std::max(max, x);
      }
      double sum = 0;
      for (double& x : expected) sum += x = std::exp(x - max);
      for (double& x : expected) x /= sum;
      for (const auto& [name, softmax_row] : variants) {
        SCOPED_TRACE(fmt::format("{} n={} form={}", name, n, form));
        std::vector<float> row = scores;
        softmax_row(row.data(), n, terms);
        for (int64_t j = 0; j < n; ++j) {
          if (std::isnan(expected[j])) {
            EXPECT_TRUE(std::isnan(row[j])) << j << ": " << row[j];
          } else {
            EXPECT_NEAR(row[j], expected[j], 1e-6 * expected[j] + 1e-9) << j;
          }
        }
      }
    }
  }
}

TEST(Attention, BadShapesFailNamingTheNode) {
  std::mt19937_64 rng(3);
  auto run_fused = [&](Shape q, Shape k, Shape v, std::optional<Shape> mask) {
    GraphBuilder g;
    std::vector<Value*> inputs{g.input(random_floats(q, rng)), g.input(random_floats(k, rng)),
                               g.input(random_floats(v, rng))};
    if (mask) inputs.push_back(g.input(random_floats(*mask, rng)));
    g.output(g.op("Attention", inputs, {}, std::string(kOnnxkitDomain)));
    auto session = Session::create(std::move(g.model()), optimized());
    if (!session) return session.error();
    auto result = session.value()->run(g.feeds());
    return result ? std::string() : result.error();
  };
  for (const std::string& error :
       {run_fused({1, 2, 3, 4}, {1, 2, 5, 3}, {1, 2, 5, 4}, {}),              // D differs
        run_fused({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 6, 4}, {}),              // Sk differs
        run_fused({1, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 4}, {}),              // batch differs
        run_fused({2, 3, 4}, {2, 5, 4}, {2, 5, 4}, {}),                       // not 4-D
        run_fused({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 4}, Shape{4, 1})}) {  // mask
    EXPECT_NE(error.find("'Attention_0'"), std::string::npos) << error;
  }
}

TEST(Attention, BadPermFailsNamingTheNode) {
  std::mt19937_64 rng(4);
  GraphBuilder g;
  std::vector<Value*> inputs{g.input(random_floats({1, 2, 3, 4}, rng)),
                             g.input(random_floats({1, 2, 3, 4}, rng)),
                             g.input(random_floats({1, 2, 3, 4}, rng))};
  g.output(g.op(
      "Attention", inputs,
      [](Node* n) {
        set_ints(n, "q_perm", {0, 2, 2, 3});
      },
      std::string(kOnnxkitDomain)));
  auto session = Session::create(std::move(g.model()), optimized());
  std::string error = session ? std::string() : session.error();
  if (session) {
    auto result = session.value()->run(g.feeds());
    if (!result) error = result.error();
  }
  EXPECT_NE(error.find("'Attention_0'"), std::string::npos) << error;
  EXPECT_NE(error.find("q_perm"), std::string::npos) << error;
}

}  // namespace
}  // namespace onnxkit
