// The loops behind vector_math.h, written once over a SIMD "ops" type S and instantiated
// by each per-instruction-set file (vector_math_scalar.cc, _avx2.cc, _avx512.cc), which
// compile with their own target flags.
//
// Only those files include this header, and only after every standard header they need:
// everything here is in an unnamed namespace, so each file gets its own copies with its own
// instruction set and the linker never merges an AVX-512 instantiation into the scalar
// path (an ODR trap of per-file flags). For the same reason the code calls no inline
// standard-library functions, only S's operations and __builtin math.
//
// S provides (V: a vector of S::kWidth floats, M: a lane mask):
//   load, store, load_partial(p, n, fill), store_partial(p, v, n), first_n(n) -> M,
//   set1, zero, add, sub, mul, div, fmadd(a, b, c) = a * b + c, sqrt, abs, neg,
//   max(a, b) = a > b ? a : b, min(a, b) = a < b ? a : b (x86's MAXPS/MINPS rule),
//   lt, gt (ordered compares -> M), is_nan, select(m, a, b) = m ? a : b,
//   round (to nearest integer), ldexp(v, n) = v * 2^n for integral n in [-150, 128],
//   reduce_add, reduce_max, load_cond(const uint8_t*) -> M (bytes != 0),
//   kTranspose8x8 and transpose8x8(src, src_stride, dst, dst_stride) for 4-byte elements.
#pragma once

#include "kernels/vector_math.h"

namespace onnxkit {
namespace {

// ---- transcendental functions ----

// Cephes' expf range reduction of the clamped x: x = n ln2 + r, |r| <= ln2 / 2. NaN passes
// through the clamp (MAXPS/MINPS return their second operand then).
template <class S>
void exp_reduce(typename S::V x, typename S::V& n, typename S::V& r) {
  x = S::min(S::set1(89.0f), S::max(S::set1(-104.0f), x));
  n = S::round(S::mul(x, S::set1(exp_coefficients::kLog2e)));
  // ln2 split: n * hi is exact, even without FMA.
  r = S::fmadd(n, S::set1(-exp_coefficients::kLn2Hi), x);
  r = S::fmadd(n, S::set1(-exp_coefficients::kLn2Lo), r);
}

// exp(x): exp_reduce and Cephes' degree-6 polynomial (~1 ulp); 2^n is applied in two steps
// so denormal and infinite results come out right.
template <class S>
typename S::V vexp(typename S::V x) {
  using V = typename S::V;
  V n, r;
  exp_reduce<S>(x, n, r);
  V p = S::set1(exp_coefficients::kCephes[0]);
  for (int i = 1; i < 6; ++i) p = S::fmadd(p, r, S::set1(exp_coefficients::kCephes[i]));
  p = S::add(S::fmadd(p, S::mul(r, r), r), S::set1(1.0f));
  return S::ldexp(p, n);
}

// tanh(x), Cephes' tanhf: an odd polynomial for |x| < 0.625, else 1 - 2 / (exp(2|x|) + 1)
// with x's sign (exact +-1 once exp overflows or 2 / (e + 1) drops below half an ulp of 1,
// so 1 + tanh(x) cancels to exactly 0 where the reference's does).
template <class S>
typename S::V vtanh(typename S::V x) {
  using V = typename S::V;
  const V ax = S::abs(x);
  const V z = S::mul(x, x);
  V p = S::set1(-5.70498872745e-3f);
  p = S::fmadd(p, z, S::set1(2.06390887954e-2f));
  p = S::fmadd(p, z, S::set1(-5.37397155531e-2f));
  p = S::fmadd(p, z, S::set1(1.33314422036e-1f));
  p = S::fmadd(p, z, S::set1(-3.33332819422e-1f));
  const V small = S::fmadd(S::mul(p, z), x, x);
  const V one = S::set1(1.0f);
  const V large = S::sub(one, S::div(S::set1(2.0f), S::add(vexp<S>(S::add(ax, ax)), one)));
  const V signed_large = S::select(S::lt(x, S::zero()), S::neg(large), large);
  return S::select(S::gt(ax, S::set1(0.625f)), signed_large, small);
}

// erf(x): the odd rational approximation of Eigen / XLA (degrees 13 / 8) on [-4, 4], beyond
// which erf rounds to +-1; 2x/sqrt(pi) for |x| < 1e-4 (keeps tiny and denormal x exact).
template <class S>
typename S::V verf(typename S::V x) {
  using V = typename S::V;
  const V clamped = S::min(S::set1(4.0f), S::max(S::set1(-4.0f), x));
  const V x2 = S::mul(clamped, clamped);
  V p = S::set1(-2.72614225801306e-10f);
  p = S::fmadd(p, x2, S::set1(2.77068142495902e-08f));
  p = S::fmadd(p, x2, S::set1(-2.10102402082508e-06f));
  p = S::fmadd(p, x2, S::set1(-5.69250639462346e-05f));
  p = S::fmadd(p, x2, S::set1(-7.34990630326855e-04f));
  p = S::fmadd(p, x2, S::set1(-2.95459980854025e-03f));
  p = S::fmadd(p, x2, S::set1(-1.60960333262415e-02f));
  p = S::mul(p, clamped);
  V q = S::set1(-1.45660718464996e-05f);
  q = S::fmadd(q, x2, S::set1(-2.13374055278905e-04f));
  q = S::fmadd(q, x2, S::set1(-1.68282697438203e-03f));
  q = S::fmadd(q, x2, S::set1(-7.37332916720468e-03f));
  q = S::fmadd(q, x2, S::set1(-1.42647390514189e-02f));
  const V result = S::div(p, q);
  const V small = S::mul(x, S::set1(1.12837916709551257f));
  return S::select(S::lt(S::abs(x), S::set1(1e-4f)), small, result);
}

// exp(x) to ~2.5e-7 relative, for activations whose bound is 1e-6 or looser (sigmoid,
// SiLU, tanh-GELU): exp_reduce with a degree-5 minimax polynomial in Horner form.
// Two fewer FMA-pipe operations than vexp, whose division after it shares those pipes:
// SiLU 0.175 -> 0.146 ns per element in L1 on Zen 5.
template <class S>
typename S::V vexp_activation(typename S::V x) {
  using V = typename S::V;
  V n, r;
  exp_reduce<S>(x, n, r);
  V p = S::set1(exp_coefficients::kMinimax5[0]);
  for (int i = 1; i < 6; ++i) p = S::fmadd(p, r, S::set1(exp_coefficients::kMinimax5[i]));
  return S::ldexp(p, n);
}

// 1 / (1 + exp(-x)): exp(-x) overflows to inf for x < -88.7, giving 0.
template <class S>
typename S::V vsigmoid(typename S::V x) {
  const auto one = S::set1(1.0f);
  return S::div(one, S::add(one, vexp_activation<S>(S::neg(x))));
}

// ---- elementwise maps ----

template <class S, BinaryOp kOp>
typename S::V apply_binary(typename S::V a, typename S::V b) {
  if constexpr (kOp == BinaryOp::kAdd) return S::add(a, b);
  if constexpr (kOp == BinaryOp::kSub) return S::sub(a, b);
  if constexpr (kOp == BinaryOp::kMul) return S::mul(a, b);
  if constexpr (kOp == BinaryOp::kDiv) return S::div(a, b);
}

template <class S, UnaryOp kOp>
typename S::V apply_unary(typename S::V x, typename S::V p0, typename S::V p1) {
  using V = typename S::V;
  const V zero = S::zero();
  const V one = S::set1(1.0f);
  const V half = S::set1(0.5f);
  if constexpr (kOp == UnaryOp::kRelu) return S::max(x, zero);
  if constexpr (kOp == UnaryOp::kLeakyRelu) return S::select(S::lt(x, zero), S::mul(p0, x), x);
  if constexpr (kOp == UnaryOp::kClip) return S::min(p1, S::max(p0, x));
  if constexpr (kOp == UnaryOp::kHardSigmoid) {
    return S::max(S::min(S::fmadd(p0, x, p1), one), zero);
  }
  if constexpr (kOp == UnaryOp::kHardSwish) {
    const V t = S::fmadd(x, S::set1(1.0f / 6.0f), half);
    return S::mul(x, S::max(S::min(t, one), zero));
  }
  if constexpr (kOp == UnaryOp::kSigmoid) return vsigmoid<S>(x);
  if constexpr (kOp == UnaryOp::kSilu) {
    return S::div(x, S::add(one, vexp_activation<S>(S::neg(x))));
  }
  if constexpr (kOp == UnaryOp::kTanh) return vtanh<S>(x);
  if constexpr (kOp == UnaryOp::kErf) return verf<S>(x);
  if constexpr (kOp == UnaryOp::kExp) return vexp<S>(x);
  if constexpr (kOp == UnaryOp::kSqrt) return S::sqrt(x);
  if constexpr (kOp == UnaryOp::kReciprocal) return S::div(one, x);
  if constexpr (kOp == UnaryOp::kNeg) return S::neg(x);
  if constexpr (kOp == UnaryOp::kAbs) return S::abs(x);
  if constexpr (kOp == UnaryOp::kSquare) return S::mul(x, x);
  if constexpr (kOp == UnaryOp::kCube) return S::mul(S::mul(x, x), x);
  if constexpr (kOp == UnaryOp::kPowHalf) {
    // sqrt(-0) + 0 is +0; pow(-inf, 0.5) is +inf where sqrt gives NaN.
    const V root = S::add(S::sqrt(x), zero);
    const V inf = S::set1(__builtin_inff());
    return S::select(S::lt(x, S::neg(S::set1(__FLT_MAX__))), inf, root);
  }
  if constexpr (kOp == UnaryOp::kGelu) {
    const V e = verf<S>(S::mul(x, S::set1(0.707106781186547524f)));
    return S::mul(S::mul(x, half), S::add(one, e));
  }
  if constexpr (kOp == UnaryOp::kGeluTanh) {
    // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): one exp and no cancellation in 1 + tanh(u)
    // for large negative u (there exp(-2u) overflows to inf and x / inf is -0, as tanh's -1).
    const V cube = S::mul(S::mul(x, x), x);
    const V u2 = S::mul(S::set1(-1.59576912160573071f), S::fmadd(S::set1(0.044715f), cube, x));
    return S::div(x, S::add(one, vexp_activation<S>(u2)));
  }
}

template <class S, BinaryOp kOp>
void binary_loop(const float* a, const float* b, float* out, int64_t n) {
  constexpr int64_t W = S::kWidth;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    S::store(out + i, apply_binary<S, kOp>(S::load(a + i), S::load(b + i)));
  }
  if (i < n) {
    const int64_t rest = n - i;
    S::store_partial(out + i,
                     apply_binary<S, kOp>(S::load_partial(a + i, rest, 1.0f),
                                          S::load_partial(b + i, rest, 1.0f)),
                     rest);
  }
}

template <class S, BinaryOp kOp>
void binary_scalar_right_loop(const float* a, float s, float* out, int64_t n) {
  constexpr int64_t W = S::kWidth;
  const auto vs = S::set1(s);
  int64_t i = 0;
  for (; i + W <= n; i += W) S::store(out + i, apply_binary<S, kOp>(S::load(a + i), vs));
  if (i < n) {
    const int64_t rest = n - i;
    S::store_partial(out + i, apply_binary<S, kOp>(S::load_partial(a + i, rest, 1.0f), vs), rest);
  }
}

template <class S, BinaryOp kOp>
void binary_scalar_left_loop(float s, const float* b, float* out, int64_t n) {
  constexpr int64_t W = S::kWidth;
  const auto vs = S::set1(s);
  int64_t i = 0;
  for (; i + W <= n; i += W) S::store(out + i, apply_binary<S, kOp>(vs, S::load(b + i)));
  if (i < n) {
    const int64_t rest = n - i;
    S::store_partial(out + i, apply_binary<S, kOp>(vs, S::load_partial(b + i, rest, 1.0f)), rest);
  }
}

// A pattern of `period` floats repeated along `rows` rows of a: out = a op pattern (or
// pattern op a with kPatternLeft). Patterns of up to four vectors stay in registers.
template <class S, BinaryOp kOp, bool kPatternLeft>
void binary_repeat_loop(const float* a, const float* pattern, int64_t period, float* out,
                        int64_t rows) {
  constexpr int64_t W = S::kWidth;
  constexpr int64_t kMaxVectors = 4;
  if (period % W == 0 && period <= kMaxVectors * W) {
    typename S::V p[kMaxVectors];
    const int64_t vectors = period / W;
    for (int64_t j = 0; j < vectors; ++j) p[j] = S::load(pattern + j * W);
    for (int64_t r = 0; r < rows; ++r) {
      const float* ar = a + r * period;
      float* o = out + r * period;
      for (int64_t j = 0; j < vectors; ++j) {
        const auto x = S::load(ar + j * W);
        S::store(o + j * W,
                 kPatternLeft ? apply_binary<S, kOp>(p[j], x) : apply_binary<S, kOp>(x, p[j]));
      }
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (kPatternLeft) {
      binary_loop<S, kOp>(pattern, a + r * period, out + r * period, period);
    } else {
      binary_loop<S, kOp>(a + r * period, pattern, out + r * period, period);
    }
  }
}

template <class S, UnaryOp kOp>
void unary_loop(const float* x, float* y, int64_t n, float p0, float p1) {
  constexpr int64_t W = S::kWidth;
  const auto v0 = S::set1(p0);
  const auto v1 = S::set1(p1);
  int64_t i = 0;
  // Four independent vectors per step: the polynomials are chains of dependent FMAs, and
  // two FMA pipes of latency 4 need about eight chains in flight.
  for (; i + 4 * W <= n; i += 4 * W) {
    const auto a = apply_unary<S, kOp>(S::load(x + i), v0, v1);
    const auto b = apply_unary<S, kOp>(S::load(x + i + W), v0, v1);
    const auto c = apply_unary<S, kOp>(S::load(x + i + 2 * W), v0, v1);
    const auto d = apply_unary<S, kOp>(S::load(x + i + 3 * W), v0, v1);
    S::store(y + i, a);
    S::store(y + i + W, b);
    S::store(y + i + 2 * W, c);
    S::store(y + i + 3 * W, d);
  }
  for (; i + W <= n; i += W) S::store(y + i, apply_unary<S, kOp>(S::load(x + i), v0, v1));
  if (i < n) {
    const int64_t rest = n - i;
    S::store_partial(y + i, apply_unary<S, kOp>(S::load_partial(x + i, rest, 0.0f), v0, v1), rest);
  }
}

template <class S>
void add3_loop(const float* a, const float* b, const float* c, float* out, int64_t n) {
  if (!b) b = c, c = nullptr;
  if (!c) return binary_loop<S, BinaryOp::kAdd>(a, b, out, n);
  constexpr int64_t W = S::kWidth;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    S::store(out + i, S::add(S::add(S::load(a + i), S::load(b + i)), S::load(c + i)));
  }
  if (i < n) {
    const int64_t rest = n - i;
    const auto sum =
        S::add(S::add(S::load_partial(a + i, rest, 0.0f), S::load_partial(b + i, rest, 0.0f)),
               S::load_partial(c + i, rest, 0.0f));
    S::store_partial(out + i, sum, rest);
  }
}

template <class S>
void select_loop(const uint8_t* cond, const float* a, float a_scalar, const float* b,
                 float b_scalar, float* out, int64_t n) {
  constexpr int64_t W = S::kWidth;
  const auto va = S::set1(a_scalar);
  const auto vb = S::set1(b_scalar);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const auto x = a ? S::load(a + i) : va;
    const auto y = b ? S::load(b + i) : vb;
    S::store(out + i, S::select(S::load_cond(cond + i), x, y));
  }
  for (; i < n; ++i) out[i] = cond[i] ? (a ? a[i] : a_scalar) : (b ? b[i] : b_scalar);
}

// ---- reductions and rows ----

template <class S>
float sum_loop(const float* x, int64_t n) {
  constexpr int64_t W = S::kWidth;
  auto acc0 = S::zero(), acc1 = S::zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = S::add(acc0, S::load(x + i));
    acc1 = S::add(acc1, S::load(x + i + W));
  }
  for (; i + W <= n; i += W) acc0 = S::add(acc0, S::load(x + i));
  if (i < n) acc1 = S::add(acc1, S::load_partial(x + i, n - i, 0.0f));
  return S::reduce_add(S::add(acc0, acc1));
}

template <class S>
float max_loop(const float* x, int64_t n) {
  constexpr int64_t W = S::kWidth;
  const float lowest = -__builtin_inff();
  auto acc = S::set1(lowest);
  int64_t i = 0;
  for (; i + W <= n; i += W) acc = S::max(acc, S::load(x + i));
  if (i < n) acc = S::max(acc, S::load_partial(x + i, n - i, lowest));
  return S::reduce_max(acc);
}

// exp(x - shift) summed; stored into y when y is not null. Padding lanes read -inf: exp 0.
template <class S>
float exp_shifted_sum(const float* x, float shift, float* y, int64_t n) {
  constexpr int64_t W = S::kWidth;
  const auto vshift = S::set1(shift);
  auto acc0 = S::zero(), acc1 = S::zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto e0 = vexp<S>(S::sub(S::load(x + i), vshift));
    const auto e1 = vexp<S>(S::sub(S::load(x + i + W), vshift));
    if (y) S::store(y + i, e0), S::store(y + i + W, e1);
    acc0 = S::add(acc0, e0);
    acc1 = S::add(acc1, e1);
  }
  for (; i + W <= n; i += W) {
    const auto e = vexp<S>(S::sub(S::load(x + i), vshift));
    if (y) S::store(y + i, e);
    acc0 = S::add(acc0, e);
  }
  if (i < n) {
    const int64_t rest = n - i;
    const auto e = vexp<S>(S::sub(S::load_partial(x + i, rest, -__builtin_inff()), vshift));
    if (y) S::store_partial(y + i, e, rest);
    acc1 = S::add(acc1, S::select(S::first_n(rest), e, S::zero()));
  }
  return S::reduce_add(S::add(acc0, acc1));
}

// As the reference: y = exp(x - max) * (1 / sum). A NaN anywhere makes the row NaN, a row of
// -inf is NaN (exp(-inf - -inf)), as the reference kernel gives.
template <class S>
void softmax_row_loop(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float max = max_loop<S>(x, n);
  const float sum = exp_shifted_sum<S>(x, max, y, n);
  binary_scalar_right_loop<S, BinaryOp::kMul>(y, 1.0f / sum, y, n);
}

// y = x - max - log(sum(exp(x - max))).
template <class S>
void log_softmax_row_loop(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const float max = max_loop<S>(x, n);
  const float log_sum = __builtin_logf(exp_shifted_sum<S>(x, max, nullptr, n));
  constexpr int64_t W = S::kWidth;
  const auto vmax = S::set1(max);
  const auto vlog = S::set1(log_sum);
  int64_t i = 0;
  for (; i + W <= n; i += W) S::store(y + i, S::sub(S::sub(S::load(x + i), vmax), vlog));
  if (i < n) {
    const int64_t rest = n - i;
    S::store_partial(y + i, S::sub(S::sub(S::load_partial(x + i, rest, 0.0f), vmax), vlog), rest);
  }
}

// Two passes over the row (mean, then squared deviations: no cancellation), then the map.
template <class S>
void layer_norm_row_loop(const float* x, const float* gamma, const float* beta, float epsilon,
                         float* y, int64_t n) {
  if (n <= 0) return;
  constexpr int64_t W = S::kWidth;
  const float mean = sum_loop<S>(x, n) / static_cast<float>(n);
  const auto vmean = S::set1(mean);
  auto acc0 = S::zero(), acc1 = S::zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto d0 = S::sub(S::load(x + i), vmean);
    const auto d1 = S::sub(S::load(x + i + W), vmean);
    acc0 = S::fmadd(d0, d0, acc0);
    acc1 = S::fmadd(d1, d1, acc1);
  }
  for (; i + W <= n; i += W) {
    const auto d = S::sub(S::load(x + i), vmean);
    acc0 = S::fmadd(d, d, acc0);
  }
  if (i < n) {
    const int64_t rest = n - i;
    const auto d =
        S::select(S::first_n(rest), S::sub(S::load_partial(x + i, rest, 0.0f), vmean), S::zero());
    acc1 = S::fmadd(d, d, acc1);
  }
  const float variance = S::reduce_add(S::add(acc0, acc1)) / static_cast<float>(n);
  const auto vscale = S::set1(1.0f / __builtin_sqrtf(variance + epsilon));
  i = 0;
  for (; i + W <= n; i += W) {
    const auto normalized = S::mul(S::sub(S::load(x + i), vmean), vscale);
    const auto shift = beta ? S::load(beta + i) : S::zero();
    S::store(y + i, S::fmadd(normalized, S::load(gamma + i), shift));
  }
  if (i < n) {
    const int64_t rest = n - i;
    const auto normalized = S::mul(S::sub(S::load_partial(x + i, rest, 0.0f), vmean), vscale);
    const auto shift = beta ? S::load_partial(beta + i, rest, 0.0f) : S::zero();
    S::store_partial(y + i, S::fmadd(normalized, S::load_partial(gamma + i, rest, 0.0f), shift),
                     rest);
  }
}

// ---- transposes ----

// Tiles of 64 x 64 keep both sides' lines in L1; inside, 8 x 8 register transposes.
template <class S>
void transpose_2d_loop(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride,
                       int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 64;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = i0 + kTile < rows ? i0 + kTile : rows;
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = j0 + kTile < cols ? j0 + kTile : cols;
      int64_t i = i0;
      if constexpr (S::kTranspose8x8) {
        for (; i + 8 <= i1; i += 8) {
          int64_t j = j0;
          for (; j + 8 <= j1; j += 8) {
            S::transpose8x8(src + i * src_stride + j, src_stride, dst + j * dst_stride + i,
                            dst_stride);
          }
          for (; j < j1; ++j) {
            for (int64_t k = i; k < i + 8; ++k) dst[j * dst_stride + k] = src[k * src_stride + j];
          }
        }
      }
      for (; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[j * dst_stride + i] = src[i * src_stride + j];
      }
    }
  }
}

// ---- the table ----

template <class S, int... kOps>
void fill_unary(VectorKernels& k, std::integer_sequence<int, kOps...>) {
  ((k.unary[kOps] = &unary_loop<S, static_cast<UnaryOp>(kOps)>), ...);
}

template <class S, int... kOps>
void fill_binary(VectorKernels& k, std::integer_sequence<int, kOps...>) {
  ((k.binary[kOps] = &binary_loop<S, static_cast<BinaryOp>(kOps)>), ...);
  ((k.binary_scalar_right[kOps] = &binary_scalar_right_loop<S, static_cast<BinaryOp>(kOps)>), ...);
  ((k.binary_scalar_left[kOps] = &binary_scalar_left_loop<S, static_cast<BinaryOp>(kOps)>), ...);
  ((k.binary_repeat[0][kOps] = &binary_repeat_loop<S, static_cast<BinaryOp>(kOps), false>), ...);
  ((k.binary_repeat[1][kOps] = &binary_repeat_loop<S, static_cast<BinaryOp>(kOps), true>), ...);
}

template <class S>
VectorKernels make_vector_kernels(SimdLevel level) {
  VectorKernels k{};
  k.level = level;
  fill_binary<S>(k, std::make_integer_sequence<int, static_cast<int>(BinaryOp::kCount)>());
  fill_unary<S>(k, std::make_integer_sequence<int, static_cast<int>(UnaryOp::kCount)>());
  k.add3 = &add3_loop<S>;
  k.select = &select_loop<S>;
  k.sum = &sum_loop<S>;
  k.softmax_row = &softmax_row_loop<S>;
  k.log_softmax_row = &log_softmax_row_loop<S>;
  k.layer_norm_row = &layer_norm_row_loop<S>;
  k.transpose_2d = &transpose_2d_loop<S>;
  return k;
}

}  // namespace
}  // namespace onnxkit
