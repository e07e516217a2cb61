// Fast QLinearAdd and QLinearMul (com.microsoft), 8 lanes with AVX2+FMA or 16 with AVX-512,
// chosen at run time by active_simd_level() (ONNXKIT_SIMD_LEVEL / SimdLevelOverride force the
// lower ones). They compute ops/qlinear_arithmetic.h's formulas, the reference kernels'
// (ops/quantization_microsoft.cc), bit for bit: the same fused multiply-adds in the same
// order, the same clamp before VCVTPS2DQ's round-half-even. Elementwise and layout-agnostic:
// any broadcast is read as innermost runs, with equal shapes as one run split across threads.
//
// QGemm with constant weights: int16 dot products (VPMADDWD), exact; with AVX-512 VNNI and
// weights whose b - b_zp fits in s8, kernels/int8_gemv (VPDPBUSD). The lookup-table ops,
// QLinearGlobalAveragePool and QLinearConcat need no other kernel: their reference kernels
// are a table load per element or an integer sum the compiler vectorizes.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ir/domain.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/int8_gemv.h"
#include "ops/qlinear_arithmetic.h"
#include "ops/qlinear_microsoft.h"

namespace onnxkit {
namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// One run: z[i] = saturate(round(x[i] * rx + (y ? y[i] * ry + fixed : fixed))), the two
// products fused as MLAS fuses them (y's first).
struct AddRun {
  float rx, ry, fixed;
  // Whether every v of the run is finite and far inside int32 (|v| < 2^30): the SIMD loops
  // may then round first and saturate in the integer packs, which gives the clamped value's
  // rounding (both clamps are monotonic and the bounds are integers).
  bool bounded() const {
    const float bound = 256.0f * (std::abs(rx) + std::abs(ry)) + std::abs(fixed);
    return std::isfinite(bound) && bound < 0x1p30f;
  }
};
// One run of QLinearMul: z[i] = saturate(round(float((x[i] - zx) * (y[i] - zy)) * ratio + zz)),
// y one value when y_step is 0.
struct MulRun {
  int32_t zx, zy, zz;
  float ratio;
};

template <typename Q>
void add_scalar(const Q* x, const Q* y, const AddRun& r, Q* z, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < n; ++i) {
    const float v = y ? std::fma(static_cast<float>(x[i]), r.rx,
                                 std::fma(static_cast<float>(y[i]), r.ry, r.fixed))
                      : std::fma(static_cast<float>(x[i]), r.rx, r.fixed);
    z[i] = qlinear::saturate_round<Q>(v);
  }
}

template <typename Q>
void mul_scalar(const Q* x, const Q* y, int64_t y_step, const MulRun& r, Q* z, int64_t begin,
                int64_t n) {
  for (int64_t i = begin; i < n; ++i) {
    z[i] = qlinear::mul_value<Q>(x[i] - r.zx, y[i * y_step] - r.zy, r.ratio, r.zz);
  }
}

// ---------------------------------------------------------------------------------------
// AVX2 + FMA: 8 lanes.

template <typename Q>
__attribute__((target("avx2,fma"))) inline __m256i ints8_avx2(const Q* p) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return std::is_same_v<Q, uint8_t> ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes);
}

template <typename Q>
__attribute__((target("avx2,fma"))) inline __m256 load8_avx2(const Q* p) {
  return _mm256_cvtepi32_ps(ints8_avx2(p));
}

template <typename Q>
__attribute__((target("avx2,fma"))) inline void store8_avx2(Q* p, __m256i ints) {
  const __m128i w =
      _mm_packs_epi32(_mm256_castsi256_si128(ints), _mm256_extracti128_si256(ints, 1));
  const __m128i b = std::is_same_v<Q, uint8_t> ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), b);
}

template <typename Q>
__attribute__((target("avx2,fma"))) void add_avx2(const Q* x, const Q* y, const AddRun& r, Q* z,
                                                  int64_t n) {
  const __m256 rx = _mm256_set1_ps(r.rx), ry = _mm256_set1_ps(r.ry);
  const __m256 fixed = _mm256_set1_ps(r.fixed);
  const __m256 lo = _mm256_set1_ps(std::numeric_limits<Q>::min());
  const __m256 hi = _mm256_set1_ps(std::numeric_limits<Q>::max());
  int64_t i = 0;
  if (r.bounded()) {
    // 32 values: round, then saturate in the packs (int32 -> 16 -> 8 bits, per 128-bit
    // lane), and put the 4-byte groups back in order.
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; i + 32 <= n; i += 32) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {
        const int64_t at = i + 8 * j;
        const __m256 base = y ? _mm256_fmadd_ps(load8_avx2(y + at), ry, fixed) : fixed;
        q[j] = _mm256_cvtps_epi32(_mm256_fmadd_ps(load8_avx2(x + at), rx, base));
      }
      const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
      const __m256i b =
          std::is_same_v<Q, uint8_t> ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(z + i), _mm256_permutevar8x32_epi32(b, order));
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 base = y ? _mm256_fmadd_ps(load8_avx2(y + i), ry, fixed) : fixed;
    __m256 v = _mm256_fmadd_ps(load8_avx2(x + i), rx, base);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    store8_avx2(z + i, _mm256_cvtps_epi32(v));
  }
  add_scalar(x, y, r, z, i, n);
}

template <typename Q>
__attribute__((target("avx2,fma"))) void mul_avx2(const Q* x, const Q* y, int64_t y_step,
                                                  const MulRun& r, Q* z, int64_t n) {
  const __m256i zx = _mm256_set1_epi32(r.zx), zy = _mm256_set1_epi32(r.zy);
  const __m256 zz = _mm256_set1_ps(static_cast<float>(r.zz));
  const __m256 ratio = _mm256_set1_ps(r.ratio);
  const __m256 lo = _mm256_set1_ps(std::numeric_limits<Q>::min());
  const __m256 hi = _mm256_set1_ps(std::numeric_limits<Q>::max());
  const __m256i y_one = _mm256_set1_epi32(static_cast<int32_t>(y[0]));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i a = _mm256_sub_epi32(ints8_avx2(x + i), zx);
    const __m256i b = _mm256_sub_epi32(y_step ? ints8_avx2(y + i) : y_one, zy);
    __m256 v =
        _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(a, b)), ratio), zz);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    store8_avx2(z + i, _mm256_cvtps_epi32(v));
  }
  mul_scalar(x, y, y_step, r, z, i, n);
}

// ---------------------------------------------------------------------------------------
// AVX-512: 16 lanes.

template <typename Q>
__attribute__((target("avx512f,avx512bw"))) inline __m512i ints16_avx512(const Q* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return std::is_same_v<Q, uint8_t> ? _mm512_cvtepu8_epi32(bytes) : _mm512_cvtepi8_epi32(bytes);
}

template <typename Q>
__attribute__((target("avx512f,avx512bw"))) inline void store16_avx512(Q* p, __m512i ints) {
  // Lanes are already in Q's range: a truncating narrow keeps them.
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(ints));
}

template <typename Q>
__attribute__((target("avx512f,avx512bw"))) void add_avx512(const Q* x, const Q* y, const AddRun& r,
                                                            Q* z, int64_t n) {
  const __m512 rx = _mm512_set1_ps(r.rx), ry = _mm512_set1_ps(r.ry);
  const __m512 fixed = _mm512_set1_ps(r.fixed);
  const __m512 lo = _mm512_set1_ps(std::numeric_limits<Q>::min());
  const __m512 hi = _mm512_set1_ps(std::numeric_limits<Q>::max());
  int64_t i = 0;
  if (r.bounded()) {
    // 64 values: round, then saturate in the packs (int32 -> 16 -> 8 bits, per 128-bit
    // lane), and put the 4-byte groups back in order (about a fifth fewer operations than
    // clamping in float and narrowing each vector: ResNet-50's residual Adds).
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (; i + 64 <= n; i += 64) {
      __m512i q[4];
      for (int j = 0; j < 4; ++j) {
        const int64_t at = i + 16 * j;
        const __m512 base =
            y ? _mm512_fmadd_ps(_mm512_cvtepi32_ps(ints16_avx512(y + at)), ry, fixed) : fixed;
        q[j] = _mm512_cvtps_epi32(
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(ints16_avx512(x + at)), rx, base));
      }
      const __m512i w01 = _mm512_packs_epi32(q[0], q[1]), w23 = _mm512_packs_epi32(q[2], q[3]);
      const __m512i b =
          std::is_same_v<Q, uint8_t> ? _mm512_packus_epi16(w01, w23) : _mm512_packs_epi16(w01, w23);
      _mm512_storeu_si512(z + i, _mm512_permutexvar_epi32(order, b));
    }
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 base =
        y ? _mm512_fmadd_ps(_mm512_cvtepi32_ps(ints16_avx512(y + i)), ry, fixed) : fixed;
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ints16_avx512(x + i)), rx, base);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    store16_avx512(z + i, _mm512_cvtps_epi32(v));
  }
  add_scalar(x, y, r, z, i, n);
}

template <typename Q>
__attribute__((target("avx512f,avx512bw"))) void mul_avx512(const Q* x, const Q* y, int64_t y_step,
                                                            const MulRun& r, Q* z, int64_t n) {
  const __m512i zx = _mm512_set1_epi32(r.zx), zy = _mm512_set1_epi32(r.zy);
  const __m512 zz = _mm512_set1_ps(static_cast<float>(r.zz));
  const __m512 ratio = _mm512_set1_ps(r.ratio);
  const __m512 lo = _mm512_set1_ps(std::numeric_limits<Q>::min());
  const __m512 hi = _mm512_set1_ps(std::numeric_limits<Q>::max());
  const __m512i y_one = _mm512_set1_epi32(static_cast<int32_t>(y[0]));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i a = _mm512_sub_epi32(ints16_avx512(x + i), zx);
    const __m512i b = _mm512_sub_epi32(y_step ? ints16_avx512(y + i) : y_one, zy);
    __m512 v =
        _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_mullo_epi32(a, b)), ratio), zz);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    store16_avx512(z + i, _mm512_cvtps_epi32(v));
  }
  mul_scalar(x, y, y_step, r, z, i, n);
}

#pragma GCC diagnostic pop

template <typename Q>
void add_run(const Q* x, const Q* y, const AddRun& r, Q* z, int64_t n) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return add_avx512(x, y, r, z, n);
    case SimdLevel::kAvx2:
      return add_avx2(x, y, r, z, n);
    case SimdLevel::kScalar:
      return add_scalar(x, y, r, z, 0, n);
  }
}

template <typename Q>
void mul_run(const Q* x, const Q* y, int64_t y_step, const MulRun& r, Q* z, int64_t n) {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return mul_avx512(x, y, y_step, r, z, n);
    case SimdLevel::kAvx2:
      return mul_avx2(x, y, y_step, r, z, n);
    case SimdLevel::kScalar:
      return mul_scalar(x, y, y_step, r, z, 0, n);
  }
}

class FastQLinearBinary : public OpKernel {
 public:
  explicit FastQLinearBinary(const KernelCreateContext& context)
      : is_add_(context.node().op_type() == "QLinearAdd") {}

  void compute(KernelContext& context) const override {
    const QLinearBinaryOperands o = read_qlinear_binary(context);
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(3);
    if (o.dtype == DType::kUInt8) {
      run<uint8_t>(a, b, *o.output, o.a, o.b, o.c);
    } else {
      run<int8_t>(a, b, *o.output, o.a, o.b, o.c);
    }
  }

 private:
  template <typename Q>
  void run(const Tensor& a, const Tensor& b, Tensor& c, QuantParam pa, QuantParam pb,
           QuantParam pc) const {
    const Q* x = a.data<Q>();
    const Q* y = b.data<Q>();
    Q* z = c.mutable_data<Q>();
    const BinaryRunKind kind = binary_run_kind(a.shape(), b.shape(), c.shape());
    const qlinear::AddParams p(pa.scale, pa.zero_point, pb.scale, pb.zero_point, pc.scale,
                               pc.zero_point);
    const MulRun m{pa.zero_point, pb.zero_point, pc.zero_point,
                   qlinear::mul_ratio(pa.scale, pb.scale, pc.scale)};
    // One run: a side with step 0 is one value along it.
    auto one_run = [&](const Q* xs, int64_t sx, const Q* ys, int64_t sy, Q* zs, int64_t n) {
      if (!is_add_) {
        // The product commutes: the varying side goes first.
        if (sx == 0 && n > 1) {
          const MulRun swapped{m.zy, m.zx, m.zz, m.ratio};
          return mul_run(ys, xs, 0, swapped, zs, n);
        }
        return mul_run(xs, ys, sy, m, zs, n);
      }
      switch (kind) {
        case BinaryRunKind::kBoth:
          return add_run(xs, ys, AddRun{p.ratio_a, p.ratio_b, p.fixed}, zs, n);
        case BinaryRunKind::kScalarB:
          return add_run<Q>(xs, nullptr, AddRun{p.ratio_a, 0.0f, p.fixed_with_b(ys[0])}, zs, n);
        case BinaryRunKind::kScalarA:
          return add_run<Q>(ys, nullptr, AddRun{p.ratio_b, 0.0f, p.fixed_with_a(xs[0])}, zs, n);
      }
    };
    if (a.shape() == b.shape()) {
      parallel_for(c.numel(), kMinParallelStreaming, [&](int64_t begin, int64_t end) {
        one_run(x + begin, 1, y + begin, 1, z + begin, end - begin);
      });
      return;
    }
    for_each_binary_run(a.shape(), b.shape(), c.shape(),
                        [&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t sa, int64_t sb) {
                          one_run(x + ia, sa, y + ib, sb, z + o, n);
                        });
  }

  bool is_add_;
};

// ---------------------------------------------------------------------------------------
// QGemm with constant B (the weights ORT's tool writes): B minus its zero points is packed
// once as int16 rows of K (one per output column, K padded to 32), A's rows are shifted to
// int16 per run, and each output is a VPMADDWD dot product: every product and pair sum is
// exact in int32 (|a|, |b| <= 255), so the result is the reference's, bit for bit. The
// output stage (bias, requantization) is the reference's own.

constexpr int64_t kDotPad = 32;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

int32_t dot_scalar(const int16_t* a, const int16_t* b, int64_t k) {
  int32_t sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += static_cast<int32_t>(a[i]) * b[i];
  return sum;
}

__attribute__((target("avx2,fma"))) int32_t dot_avx2(const int16_t* a, const int16_t* b,
                                                     int64_t k) {
  __m256i acc = _mm256_setzero_si256();
  for (int64_t i = 0; i < k; i += 16) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y));
  }
  __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0x4e));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0xb1));
  return _mm_cvtsi128_si32(sum);
}

__attribute__((target("avx512f,avx512bw"))) int32_t dot_avx512(const int16_t* a, const int16_t* b,
                                                               int64_t k) {
  __m512i acc = _mm512_setzero_si512();
  for (int64_t i = 0; i < k; i += 32) {
    const __m512i x = _mm512_loadu_si512(a + i);
    const __m512i y = _mm512_loadu_si512(b + i);
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, y));
  }
  return _mm512_reduce_add_epi32(acc);
}

#pragma GCC diagnostic pop

class FastQGemm : public OpKernel {
 public:
  explicit FastQGemm(const KernelCreateContext& context)
      : reference_(context.reference_kernel()),
        alpha_(context.attr_float("alpha", 1.0f)),
        trans_a_(context.attr_int("transA", 0) != 0),
        trans_b_(context.attr_int("transB", 0) != 0) {
    const auto& inputs = context.node().inputs();
    auto constant = [&](size_t i) -> const Tensor* {
      const Value* v = i < inputs.size() ? inputs[i] : nullptr;
      return v && v->has_initializer() ? &v->initializer() : nullptr;
    };
    const Tensor* b = constant(3);
    const Tensor* b_scale = constant(4);
    const bool zp_absent = inputs.size() <= 5 || !inputs[5];
    const Tensor* b_zp = zp_absent ? nullptr : constant(5);
    if (!b || !b_scale || (!zp_absent && !b_zp) || b->rank() != 2 ||
        (b->dtype() != DType::kUInt8 && b->dtype() != DType::kInt8) ||
        (b_zp && (b_zp->dtype() != b->dtype() || b_zp->numel() != b_scale->numel()))) {
      return;  // the reference kernel runs (and reports what is wrong)
    }
    k_ = b->shape()[trans_b_ ? 1 : 0];
    n_ = b->shape()[trans_b_ ? 0 : 1];
    if (b_scale->numel() != 1 && b_scale->numel() != n_) return;
    k_padded_ = (k_ + kDotPad - 1) / kDotPad * kDotPad;
    packed_b_.assign(static_cast<size_t>(n_ * k_padded_), 0);
    const bool is_signed = b->dtype() == DType::kInt8;
    const auto* raw = static_cast<const uint8_t*>(b->raw_data());
    for (int64_t j = 0; j < n_; ++j) {
      int32_t zp = 0;
      if (b_zp) {
        const int64_t at = b_zp->numel() == 1 ? 0 : j;
        zp = is_signed ? b_zp->data<int8_t>()[at] : b_zp->data<uint8_t>()[at];
      }
      for (int64_t kk = 0; kk < k_; ++kk) {
        const uint8_t byte = raw[trans_b_ ? j * k_ + kk : kk * n_ + j];
        const int32_t v = is_signed ? static_cast<int8_t>(byte) : byte;
        packed_b_[j * k_padded_ + kk] = static_cast<int16_t>(v - zp);
      }
    }
    packed_ = true;
    // Where every b - b_zp fits in s8 (ORT's symmetric s8 weights; u8 weights of zero point
    // 128), VPDPBUSD takes the bytes: half the int16 rows' traffic (ResNet-50's 2048 x 1000
    // classifier: 4 MB per run, memory-bound).
    std::vector<int8_t> s8_b(static_cast<size_t>(k_ * n_));
    bool fits = true;
    for (int64_t kk = 0; kk < k_ && fits; ++kk) {
      for (int64_t j = 0; j < n_; ++j) {
        const int16_t v = packed_b_[j * k_padded_ + kk];
        if (v < -128 || v > 127) {
          fits = false;
          break;
        }
        s8_b[kk * n_ + j] = static_cast<int8_t>(v);
      }
    }
    if (fits) gemv_ = std::make_unique<const Int8Gemv>(s8_b.data(), k_, n_);
  }

  void compute(KernelContext& context) const override {
    if (!packed_) {
      run_fallback(reference_.get(), context);
      return;
    }
    const QGemmProblem p = qgemm_problem(context, alpha_, trans_a_, trans_b_);
    if (p.k != k_ || p.n != n_) context.fail("B changed since the kernel was made");
    std::vector<int32_t> acc(static_cast<size_t>(p.m * p.n));
    const SimdLevel level = active_simd_level();
    const auto* a = static_cast<const uint8_t*>(p.a->raw_data());
    if (gemv_ && Int8Gemv::available()) {
      gemv_product(p, a, acc);
      qgemm_output(context, p, acc);
      return;
    }
    parallel_for(p.m * p.n, kMinParallelCompute / 8 + 1, [&](int64_t begin, int64_t end) {
      std::vector<int16_t> row(static_cast<size_t>(k_padded_), 0);
      int64_t row_of = -1;
      for (int64_t at = begin; at < end; ++at) {
        const int64_t i = at / p.n, j = at % p.n;
        if (i != row_of) {
          for (int64_t kk = 0; kk < p.k; ++kk) {
            const uint8_t byte = a[trans_a_ ? kk * p.m + i : i * p.k + kk];
            const int32_t v = p.a_signed ? static_cast<int8_t>(byte) : byte;
            row[kk] = static_cast<int16_t>(v - p.a_zp);
          }
          row_of = i;
        }
        const int16_t* column = packed_b_.data() + j * k_padded_;
        acc[at] = level == SimdLevel::kAvx512 ? dot_avx512(row.data(), column, k_padded_)
                  : level == SimdLevel::kAvx2 ? dot_avx2(row.data(), column, k_padded_)
                                              : dot_scalar(row.data(), column, k_padded_);
      }
    });
    qgemm_output(context, p, acc);
  }

 private:
  // acc = (A - a_zp) x (B - b_zp) on the VNNI kernel: A as u8 rows (s8 shifted by 128, its
  // zero point with it), sum_i a_u8 * b' - zp_u8 * sum_i b', exact in int32.
  void gemv_product(const QGemmProblem& p, const uint8_t* a, std::vector<int32_t>& acc) const {
    std::vector<uint8_t> rows(static_cast<size_t>(p.m * p.k));
    const uint8_t flip = p.a_signed ? 0x80 : 0;
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t kk = 0; kk < p.k; ++kk) {
        rows[i * p.k + kk] = a[trans_a_ ? kk * p.m + i : i * p.k + kk] ^ flip;
      }
    }
    const uint32_t zp = static_cast<uint32_t>(p.a_zp + (p.a_signed ? 128 : 0));
    const std::vector<int32_t>& sums = gemv_->column_sums();
    parallel_for(gemv_->tiles(), 1, [&](int64_t begin, int64_t end) {
      gemv_->run(rows.data(), p.m, acc.data(), begin, end);
      const int64_t first = begin * Int8Gemv::kTileColumns;
      const int64_t last = std::min(p.n, end * Int8Gemv::kTileColumns);
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = first; j < last; ++j) {
          int32_t& v = acc[i * p.n + j];
          v = static_cast<int32_t>(static_cast<uint32_t>(v) - zp * static_cast<uint32_t>(sums[j]));
        }
      }
    });
  }

  std::unique_ptr<OpKernel> reference_;
  std::unique_ptr<const Int8Gemv> gemv_;  // where every b - b_zp fits in s8
  float alpha_;
  bool trans_a_, trans_b_;
  bool packed_ = false;
  int64_t k_ = 0, n_ = 0, k_padded_ = 0;
  std::vector<int16_t> packed_b_;  // [n][k_padded]
};

}  // namespace

void register_fast_qlinear_kernels(OpRegistry& registry) {
  const std::string ms(kMicrosoftDomain);
  registry.add_optimized(ms, "QLinearAdd", 1, kernel_factory<FastQLinearBinary>());
  registry.add_optimized(ms, "QLinearMul", 1, kernel_factory<FastQLinearBinary>());
  registry.add_optimized(ms, "QGemm", 1, kernel_factory<FastQGemm>());
}

}  // namespace onnxkit
