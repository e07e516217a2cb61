// See int8_depthwise.h. One output position at a time: a table of the kh * kw taps' input
// pixels (a row of x_zp bytes where a tap falls in the padding), then for each block of
// channels the taps in pairs, interleaved byte by byte, widened to int16 less x_zp and
// multiplied with the packed (w - w_zp) pairs into int32 lanes that stay in registers
// across the window. The block is requantized as quantize_simd::requantize_u8 / _s8 do it
// (float(acc + bias) * multiplier, clamped to what the zero point leaves, VCVTPS2DQ's
// round half to even, plus the zero point), so no int32 leaves the registers.
#include "kernels/int8_depthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "core/parallel.h"
#include "kernels/quantize_simd.h"
#include "kernels/vector_math.h"

namespace onnxkit {
namespace {

// GCC 12 warns inside its own AVX-512 headers (GCC bug 105593) where the intrinsics inline.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// What one output position's kernels read: the taps' pixels (pairs * 2 pointers, the last
// one of an odd window pointing at the x_zp row, its weight 0) and where to write.
struct Position {
  const uint8_t* const* taps;
  uint8_t* y;
};

struct Parameters {
  int64_t channels, pairs;
  const int16_t* packed;
  int32_t x_zero_point;
  const float* multipliers;
  const int32_t* biases;
  int32_t y_zero_point;
};

template <bool kSigned>
int32_t byte_value(uint8_t b) {
  return kSigned ? static_cast<int32_t>(static_cast<int8_t>(b)) : static_cast<int32_t>(b);
}

// ---------------------------------------------------------------------------------------
// Scalar: the accumulators of all channels, then quantize_simd's requantization.

template <bool kSigned, bool kSignedOut>
void position_scalar(const Position& at, const Parameters& p, int32_t* acc) {
  for (int64_t c = 0; c < p.channels; ++c) {
    int32_t sum = 0;
    for (int64_t q = 0; q < p.pairs; ++q) {
      const int16_t* w = p.packed + (q * p.channels + c) * 2;
      sum += (byte_value<kSigned>(at.taps[2 * q][c]) - p.x_zero_point) * w[0] +
             (byte_value<kSigned>(at.taps[2 * q + 1][c]) - p.x_zero_point) * w[1];
    }
    acc[c] = sum;
  }
  if constexpr (kSignedOut) {
    quantize_simd::requantize_s8(acc, p.channels, 0, p.biases, 0.0f, p.multipliers, p.y_zero_point,
                                 reinterpret_cast<int8_t*>(at.y));
  } else {
    quantize_simd::requantize_u8(acc, p.channels, 0, p.biases, 0.0f, p.multipliers, p.y_zero_point,
                                 at.y);
  }
}

// ---------------------------------------------------------------------------------------
// AVX-512 (BW): 16 channels per vector, up to four vectors of independent accumulators.

template <bool kSigned>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline __m512i pair_avx512(
    const uint8_t* a, const uint8_t* b, __m512i zero_point) {
  const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
  const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(va, vb)),
                                               _mm_unpackhi_epi8(va, vb), 1);
  const __m512i wide = kSigned ? _mm512_cvtepi8_epi16(both) : _mm512_cvtepu8_epi16(both);
  return _mm512_sub_epi16(wide, zero_point);
}

template <bool kSignedOut>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void requantize16_avx512(
    __m512i acc, const Parameters& p, int64_t c, uint8_t* y) {
  using Q = std::conditional_t<kSignedOut, int8_t, uint8_t>;
  const float zp = static_cast<float>(p.y_zero_point);
  const __m512 lo = _mm512_set1_ps(std::numeric_limits<Q>::min() - zp);
  const __m512 hi = _mm512_set1_ps(std::numeric_limits<Q>::max() - zp);
  if (p.biases) acc = _mm512_add_epi32(acc, _mm512_loadu_si512(p.biases + c));
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_loadu_ps(p.multipliers + c));
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(p.y_zero_point));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c), _mm512_cvtepi32_epi8(q));
}

// kBlocks vectors of channels from channel c, with VPDPWSSD (multiply, add pairs and
// accumulate in one instruction) where VPMADDWD and VPADDD would be two.
template <bool kSigned, bool kSignedOut, int kBlocks>
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) inline void block_avx512_vnni(
    const Position& at, const Parameters& p, int64_t c) {
  const __m512i zero_point = _mm512_set1_epi16(static_cast<int16_t>(p.x_zero_point));
  __m512i acc[kBlocks];
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) acc[b] = _mm512_setzero_si512();
  for (int64_t q = 0; q < p.pairs; ++q) {
    const uint8_t* ta = at.taps[2 * q];
    const uint8_t* tb = at.taps[2 * q + 1];
    const int16_t* w = p.packed + (q * p.channels + c) * 2;
#pragma GCC unroll 4
    for (int b = 0; b < kBlocks; ++b) {
      const __m512i x = pair_avx512<kSigned>(ta + c + 16 * b, tb + c + 16 * b, zero_point);
      acc[b] = _mm512_dpwssd_epi32(acc[b], x, _mm512_loadu_si512(w + 32 * b));
    }
  }
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) requantize16_avx512<kSignedOut>(acc[b], p, c + 16 * b, at.y);
}

template <bool kSigned, bool kSignedOut, int kBlocks>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void block_avx512(
    const Position& at, const Parameters& p, int64_t c) {
  const __m512i zero_point = _mm512_set1_epi16(static_cast<int16_t>(p.x_zero_point));
  __m512i acc[kBlocks];
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) acc[b] = _mm512_setzero_si512();
  for (int64_t q = 0; q < p.pairs; ++q) {
    const uint8_t* ta = at.taps[2 * q];
    const uint8_t* tb = at.taps[2 * q + 1];
    const int16_t* w = p.packed + (q * p.channels + c) * 2;
#pragma GCC unroll 4
    for (int b = 0; b < kBlocks; ++b) {
      const __m512i x = pair_avx512<kSigned>(ta + c + 16 * b, tb + c + 16 * b, zero_point);
      acc[b] = _mm512_add_epi32(acc[b], _mm512_madd_epi16(x, _mm512_loadu_si512(w + 32 * b)));
    }
  }
#pragma GCC unroll 4
  for (int b = 0; b < kBlocks; ++b) requantize16_avx512<kSignedOut>(acc[b], p, c + 16 * b, at.y);
}

// The channels left after the vectors (fewer than 16), as the scalar path computes them.
template <bool kSigned, bool kSignedOut>
void tail(const Position& at, const Parameters& p, int64_t c) {
  if (c == p.channels) return;
  int32_t acc[16];
  for (int64_t k = c; k < p.channels; ++k) {
    int32_t sum = 0;
    for (int64_t q = 0; q < p.pairs; ++q) {
      const int16_t* w = p.packed + (q * p.channels + k) * 2;
      sum += (byte_value<kSigned>(at.taps[2 * q][k]) - p.x_zero_point) * w[0] +
             (byte_value<kSigned>(at.taps[2 * q + 1][k]) - p.x_zero_point) * w[1];
    }
    acc[k - c] = sum;
  }
  const int32_t* biases = p.biases ? p.biases + c : nullptr;
  if constexpr (kSignedOut) {
    quantize_simd::requantize_s8(acc, p.channels - c, 0, biases, 0.0f, p.multipliers + c,
                                 p.y_zero_point, reinterpret_cast<int8_t*>(at.y + c));
  } else {
    quantize_simd::requantize_u8(acc, p.channels - c, 0, biases, 0.0f, p.multipliers + c,
                                 p.y_zero_point, at.y + c);
  }
}

template <bool kSigned, bool kSignedOut>
__attribute__((target("avx512f,avx512bw"))) void position_avx512(const Position& at,
                                                                 const Parameters& p) {
  int64_t c = 0;
  for (; c + 64 <= p.channels; c += 64) block_avx512<kSigned, kSignedOut, 4>(at, p, c);
  for (; c + 16 <= p.channels; c += 16) block_avx512<kSigned, kSignedOut, 1>(at, p, c);
  tail<kSigned, kSignedOut>(at, p, c);
}

template <bool kSigned, bool kSignedOut>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void position_avx512_vnni(
    const Position& at, const Parameters& p) {
  int64_t c = 0;
  for (; c + 64 <= p.channels; c += 64) block_avx512_vnni<kSigned, kSignedOut, 4>(at, p, c);
  for (; c + 16 <= p.channels; c += 16) block_avx512_vnni<kSigned, kSignedOut, 1>(at, p, c);
  tail<kSigned, kSignedOut>(at, p, c);
}

// ---------------------------------------------------------------------------------------
// AVX2: 16 channels per step as two vectors of 8, two steps at a time.

template <bool kSigned>
__attribute__((target("avx2"), always_inline)) inline __m256i widen_avx2(__m128i v,
                                                                         __m256i zero_point) {
  return _mm256_sub_epi16(kSigned ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v), zero_point);
}

template <bool kSignedOut>
__attribute__((target("avx2"), always_inline)) inline void requantize8_avx2(__m256i acc,
                                                                            const Parameters& p,
                                                                            int64_t c, uint8_t* y) {
  using Q = std::conditional_t<kSignedOut, int8_t, uint8_t>;
  const float zp = static_cast<float>(p.y_zero_point);
  const __m256 lo = _mm256_set1_ps(std::numeric_limits<Q>::min() - zp);
  const __m256 hi = _mm256_set1_ps(std::numeric_limits<Q>::max() - zp);
  if (p.biases) {
    acc = _mm256_add_epi32(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.biases + c)));
  }
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_loadu_ps(p.multipliers + c));
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), _mm256_set1_epi32(p.y_zero_point));
  // The lanes are in Q's range: packing with saturation keeps them.
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  const __m128i bytes = kSignedOut ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(y + c), bytes);
}

template <bool kSigned, bool kSignedOut, int kSteps>
__attribute__((target("avx2"), always_inline)) inline void block_avx2(const Position& at,
                                                                      const Parameters& p,
                                                                      int64_t c) {
  const __m256i zero_point = _mm256_set1_epi16(static_cast<int16_t>(p.x_zero_point));
  __m256i acc[2 * kSteps];
#pragma GCC unroll 4
  for (int b = 0; b < 2 * kSteps; ++b) acc[b] = _mm256_setzero_si256();
  for (int64_t q = 0; q < p.pairs; ++q) {
    const uint8_t* ta = at.taps[2 * q];
    const uint8_t* tb = at.taps[2 * q + 1];
    const int16_t* w = p.packed + (q * p.channels + c) * 2;
#pragma GCC unroll 4
    for (int s = 0; s < kSteps; ++s) {
      const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ta + c + 16 * s));
      const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tb + c + 16 * s));
      const __m256i low = widen_avx2<kSigned>(_mm_unpacklo_epi8(va, vb), zero_point);
      const __m256i high = widen_avx2<kSigned>(_mm_unpackhi_epi8(va, vb), zero_point);
      const auto* ws = reinterpret_cast<const __m256i*>(w + 32 * s);
      acc[2 * s] = _mm256_add_epi32(acc[2 * s], _mm256_madd_epi16(low, _mm256_loadu_si256(ws)));
      acc[2 * s + 1] =
          _mm256_add_epi32(acc[2 * s + 1], _mm256_madd_epi16(high, _mm256_loadu_si256(ws + 1)));
    }
  }
#pragma GCC unroll 4
  for (int b = 0; b < 2 * kSteps; ++b) requantize8_avx2<kSignedOut>(acc[b], p, c + 8 * b, at.y);
}

template <bool kSigned, bool kSignedOut>
__attribute__((target("avx2"))) void position_avx2(const Position& at, const Parameters& p) {
  int64_t c = 0;
  for (; c + 32 <= p.channels; c += 32) block_avx2<kSigned, kSignedOut, 2>(at, p, c);
  for (; c + 16 <= p.channels; c += 16) block_avx2<kSigned, kSignedOut, 1>(at, p, c);
  tail<kSigned, kSignedOut>(at, p, c);
}

#pragma GCC diagnostic pop

using PositionFunction = void (*)(const Position&, const Parameters&, int32_t* scratch);

template <bool kSigned, bool kSignedOut>
PositionFunction position_function(DepthwiseIsa isa) {
  switch (isa) {
    case DepthwiseIsa::kAvx512Vnni:
      return [](const Position& at, const Parameters& p, int32_t*) {
        position_avx512_vnni<kSigned, kSignedOut>(at, p);
      };
    case DepthwiseIsa::kAvx512:
      return [](const Position& at, const Parameters& p, int32_t*) {
        position_avx512<kSigned, kSignedOut>(at, p);
      };
    case DepthwiseIsa::kAvx2:
      return [](const Position& at, const Parameters& p, int32_t*) {
        position_avx2<kSigned, kSignedOut>(at, p);
      };
    default:
      return position_scalar<kSigned, kSignedOut>;
  }
}

}  // namespace

bool cpu_runs(DepthwiseIsa isa) {
  switch (isa) {
    case DepthwiseIsa::kAvx512Vnni:
      return detected_simd_level() == SimdLevel::kAvx512 &&
             __builtin_cpu_supports("avx512vnni") != 0;
    case DepthwiseIsa::kAvx512:
      return detected_simd_level() == SimdLevel::kAvx512;
    case DepthwiseIsa::kAvx2:
      return detected_simd_level() >= SimdLevel::kAvx2;
    default:
      return true;
  }
}

DepthwiseIsa best_int8_depthwise_isa() {
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      return cpu_runs(DepthwiseIsa::kAvx512Vnni) ? DepthwiseIsa::kAvx512Vnni
                                                 : DepthwiseIsa::kAvx512;
    case SimdLevel::kAvx2:
      return DepthwiseIsa::kAvx2;
    default:
      return DepthwiseIsa::kScalar;
  }
}

bool Int8DepthwiseConv::handles(int64_t kernel_h, int64_t kernel_w, int64_t stride_h,
                                int64_t stride_w, int64_t dilation_h, int64_t dilation_w) {
  const bool square = kernel_h == kernel_w && (kernel_h == 3 || kernel_h == 5);
  const bool strides = (stride_h == 1 || stride_h == 2) && (stride_w == 1 || stride_w == 2);
  return square && strides && dilation_h == 1 && dilation_w == 1;
}

Int8DepthwiseConv::Int8DepthwiseConv(int64_t channels, int64_t kernel_h, int64_t kernel_w,
                                     int64_t stride_h, int64_t stride_w,
                                     const std::vector<int32_t>& weights,
                                     const std::vector<int32_t>& zero_points)
    : channels_(channels),
      kernel_h_(kernel_h),
      kernel_w_(kernel_w),
      stride_h_(stride_h),
      stride_w_(stride_w),
      pairs_((kernel_h * kernel_w + 1) / 2) {
  const int64_t taps = kernel_h * kernel_w;
  packed_.assign(static_cast<size_t>(pairs_ * channels * 2), 0);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t t = 0; t < taps; ++t) {
      packed_[((t / 2) * channels + c) * 2 + t % 2] =
          static_cast<int16_t>(weights[c * taps + t] - zero_points[c]);
    }
  }
}

void Int8DepthwiseConv::run(const void* x, bool x_signed, int32_t x_zero_point, const Geometry& g,
                            const Requantization& r, void* y, DepthwiseIsa isa) const {
  if (!cpu_runs(isa)) isa = best_int8_depthwise_isa();
  const PositionFunction at_position =
      x_signed
          ? (r.is_signed ? position_function<true, true>(isa) : position_function<true, false>(isa))
          : (r.is_signed ? position_function<false, true>(isa)
                         : position_function<false, false>(isa));
  const Parameters parameters{channels_,     pairs_,   packed_.data(), x_zero_point,
                              r.multipliers, r.biases, r.zero_point};
  // Taps in the padding read this row: x_zp, which the kernels subtract to nothing.
  const std::vector<uint8_t> padding(static_cast<size_t>(channels_),
                                     static_cast<uint8_t>(x_zero_point));
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const int64_t taps = kernel_h_ * kernel_w_;
  const int64_t row_work = std::max<int64_t>(1, g.out_w * channels_ * taps);
  parallel_for(
      g.images * g.out_h, std::max<int64_t>(1, 65536 / row_work), [&](int64_t begin, int64_t end) {
        std::vector<const uint8_t*> table(static_cast<size_t>(pairs_ * 2), padding.data());
        std::vector<int32_t> scratch(static_cast<size_t>(channels_));
        for (int64_t row = begin; row < end; ++row) {
          const int64_t n = row / g.out_h, oh = row % g.out_h;
          const uint8_t* image = in + n * g.in_h * g.in_w * channels_;
          uint8_t* y_row = out + row * g.out_w * channels_;
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            for (int64_t i = 0; i < kernel_h_; ++i) {
              const int64_t ih = oh * stride_h_ - g.pad_top + i;
              const bool row_inside = ih >= 0 && ih < g.in_h;
              for (int64_t j = 0; j < kernel_w_; ++j) {
                const int64_t iw = ow * stride_w_ - g.pad_left + j;
                table[i * kernel_w_ + j] = row_inside && iw >= 0 && iw < g.in_w
                                               ? image + (ih * g.in_w + iw) * channels_
                                               : padding.data();
              }
            }
            at_position({table.data(), y_row + ow * channels_}, parameters, scratch.data());
          }
        }
      });
}

}  // namespace onnxkit
