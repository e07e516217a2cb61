// See int8_depthwise.h. The vector paths work on one output row at a time from "pair rows":
// for each of the kh input rows under it, entry k holds, for every channel, the int16 pair
// (x[k - pad_left] - x_zp, x[k - pad_left + 1] - x_zp), 0 where a pixel falls in the
// padding. Kernel taps (i, 2q) and (i, 2q + 1) at output column ow are then entry
// ow * stride + 2q of row i: one load, one VPMADDWD (or VPDPWSSD) per 16 channels and two
// taps, the weights of a channel block held in registers across the row. A pair row is
// built once per input row and kept while the kh output rows that read it run (a ring of
// kh rows per thread): the byte interleaving and widening, the shuffle-port work, happen
// once per input pixel instead of once per tap. The int32 accumulators are requantized
// in registers as quantize_simd::requantize_u8 / _s8 do it.
#include "kernels/int8_depthwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/parallel.h"
#include "kernels/quantize_simd.h"
#include "kernels/vector_math.h"

namespace onnxkit {
namespace {

// GCC 12 warns inside its own AVX-512 headers (GCC bug 105593) where the intrinsics inline.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// One output row's operands for the vector paths.
struct RowJob {
  const int16_t* const* pair_rows;  // kh rows, [entry][padded C][2]
  int64_t out_w, stride, channels, padded;
  const int16_t* packed;     // [kh][row pairs][padded C][2]
  const float* multipliers;  // padded C
  const int32_t* biases;     // padded C
  float lo, hi;              // the output type's range less the zero point
  int32_t zero_point;
  bool is_signed;  // s8 output
  uint8_t* y;      // [out_w][C]
};

// What a pair row is built from: one input row (or none: all padding).
struct PairRowSource {
  const uint8_t* x_row;             // [in_w][C], or nullptr
  const uint8_t* zero_point_pixel;  // C bytes of x_zp: the padding's pixels
  int64_t in_w, pad_left, entries, channels, padded;
  int64_t step;  // the stride: with stride 2 only the even entries are read
  int32_t x_zero_point;
};

template <bool kSigned>
int16_t widened(uint8_t byte, int32_t zero_point) {
  const int32_t v = kSigned ? static_cast<int32_t>(static_cast<int8_t>(byte)) : byte;
  return static_cast<int16_t>(v - zero_point);
}

const uint8_t* pixel(const PairRowSource& s, int64_t iw) {
  return iw >= 0 && iw < s.in_w ? s.x_row + iw * s.channels : s.zero_point_pixel;
}

// Channels from `first` on of entry k, one at a time (the tail below 16, and its padding).
template <bool kSigned>
void pair_entry_tail(const PairRowSource& s, const uint8_t* a, const uint8_t* b, int64_t first,
                     int16_t* entry) {
  for (int64_t c = first; c < s.padded; ++c) {
    entry[2 * c] = c < s.channels ? widened<kSigned>(a[c], s.x_zero_point) : 0;
    entry[2 * c + 1] = c < s.channels ? widened<kSigned>(b[c], s.x_zero_point) : 0;
  }
}

// ---------------------------------------------------------------------------------------
// AVX-512

template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void build_pair_row_avx512(
    const PairRowSource& s, int16_t* out) {
  const __m512i zero_point = _mm512_set1_epi16(static_cast<int16_t>(s.x_zero_point));
  for (int64_t k = 0; k < s.entries; k += s.step) {
    const uint8_t* a = pixel(s, k - s.pad_left);
    const uint8_t* b = pixel(s, k - s.pad_left + 1);
    int16_t* entry = out + k * s.padded * 2;
    int64_t c = 0;
    for (; c + 16 <= s.channels; c += 16) {
      const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + c));
      const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + c));
      const __m256i both = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_unpacklo_epi8(va, vb)), _mm_unpackhi_epi8(va, vb), 1);
      const __m512i wide = kSigned ? _mm512_cvtepi8_epi16(both) : _mm512_cvtepu8_epi16(both);
      _mm512_storeu_si512(entry + 2 * c, _mm512_sub_epi16(wide, zero_point));
    }
    pair_entry_tail<kSigned>(s, a, b, c, entry);
  }
}

// float(acc) * multiplier, clamped, rounded half to even, plus the zero point: quantize_simd's
// requantization of 16 channels (acc holds the bias already; multipliers are finite, so no
// NaN arises for its NaN rule to map).
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void store16(
    __m512i acc, __m512 multiplier, __m512 lo, __m512 hi, __m512i zero_point, __mmask16 lanes,
    uint8_t* y) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), multiplier);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  const __m128i q = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zero_point));
  _mm_mask_storeu_epi8(y, lanes, q);
}

__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i multiply_add(
    __m512i acc, __m512i x, __m512i w) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(x, w));
}

// columns_<suffix>: kColumns output columns from ow on, one channel block, the weights in
// registers. Column u's tap pair q reads entry (ow + u) * kStride + 2q: with stride 1 that is
// entry ow + (u + 2q), with stride 2 entry 2 * (ow + u + q), so each entry loaded serves
// every (u, q) that reads it (10 loads instead of 16 for 8 columns of a 3x3 row).
// row_<suffix>: the output row, channel block by channel block. Defined twice, with
// VPMADDWD + VPADDD and with VNNI's VPDPWSSD (one instruction): one function compiled for
// both would let the compiler use VNNI instructions on CPUs without them.
#define ONNXKIT_DEPTHWISE_AVX512(suffix, isa, accumulate)                                          \
  template <int kRows, int kPairs, int kStride, int kColumns>                                      \
  __attribute__((target(isa), always_inline)) inline void columns_##suffix(                        \
      const RowJob& job, const __m512i* w, int64_t c, int64_t ow, __m512i bias, __m512 multiplier, \
      __m512 lo, __m512 hi, __m512i zero_point, __mmask16 lanes) {                                 \
    constexpr int kPairStep = kStride == 1 ? 2 : 1; /* entries between pairs, in loads */          \
    constexpr int kLoads = kColumns + kPairStep * (kPairs - 1);                                    \
    const int64_t entry = job.padded * 2 * (kStride == 1 ? 1 : 2);                                 \
    __m512i acc[kColumns];                                                                         \
    _Pragma("GCC unroll 8") for (int u = 0; u < kColumns; ++u) acc[u] = bias;                      \
    _Pragma("GCC unroll 5") for (int i = 0; i < kRows; ++i) {                                      \
      const int16_t* at = job.pair_rows[i] + 2 * c + ow * kStride * job.padded * 2;                \
      _Pragma("GCC unroll 16") for (int v = 0; v < kLoads; ++v, at += entry) {                     \
        const __m512i x = _mm512_loadu_si512(at);                                                  \
        _Pragma("GCC unroll 3") for (int q = 0; q < kPairs; ++q) {                                 \
          const int u = v - kPairStep * q;                                                         \
          if (u >= 0 && u < kColumns) acc[u] = accumulate(acc[u], x, w[i * kPairs + q]);           \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
    _Pragma("GCC unroll 8") for (int u = 0; u < kColumns; ++u) {                                   \
      store16(acc[u], multiplier, lo, hi, zero_point, lanes, job.y + (ow + u) * job.channels + c); \
    }                                                                                              \
  }                                                                                                \
  template <int kRows, int kPairs, int kStride>                                                    \
  __attribute__((target(isa))) void row_##suffix(const RowJob& job) {                              \
    /* Columns in flight: enough independent accumulator chains to hide the multiply-adds' */      \
    /* latency, few enough to keep the 5x5 weights in registers beside them. */                    \
    constexpr int kColumns = kRows == 3 ? 8 : 4;                                                   \
    const __m512 lo = _mm512_set1_ps(job.lo), hi = _mm512_set1_ps(job.hi);                         \
    const __m512i zero_point = _mm512_set1_epi32(job.zero_point);                                  \
    for (int64_t c = 0; c < job.padded; c += 16) {                                                 \
      __m512i w[kRows * kPairs];                                                                   \
      for (int t = 0; t < kRows * kPairs; ++t) {                                                   \
        w[t] = _mm512_loadu_si512(job.packed + (t * job.padded + c) * 2);                          \
      }                                                                                            \
      const __m512i bias = _mm512_loadu_si512(job.biases + c);                                     \
      const __m512 multiplier = _mm512_loadu_ps(job.multipliers + c);                              \
      const __mmask16 lanes = static_cast<__mmask16>(                                              \
          c + 16 <= job.channels ? 0xFFFF : (1u << (job.channels - c)) - 1);                       \
      int64_t ow = 0;                                                                              \
      for (; ow + kColumns <= job.out_w; ow += kColumns) {                                         \
        columns_##suffix<kRows, kPairs, kStride, kColumns>(job, w, c, ow, bias, multiplier, lo,    \
                                                           hi, zero_point, lanes);                 \
      }                                                                                            \
      /* The rest in 4, 2 and 1 columns: a 7-wide row (MobileNetV2's last) keeps 4 chains. */      \
      if (kColumns > 4 && ow + 4 <= job.out_w) {                                                   \
        columns_##suffix<kRows, kPairs, kStride, 4>(job, w, c, ow, bias, multiplier, lo, hi,       \
                                                    zero_point, lanes);                            \
        ow += 4;                                                                                   \
      }                                                                                            \
      if (ow + 2 <= job.out_w) {                                                                   \
        columns_##suffix<kRows, kPairs, kStride, 2>(job, w, c, ow, bias, multiplier, lo, hi,       \
                                                    zero_point, lanes);                            \
        ow += 2;                                                                                   \
      }                                                                                            \
      for (; ow < job.out_w; ++ow) {                                                               \
        columns_##suffix<kRows, kPairs, kStride, 1>(job, w, c, ow, bias, multiplier, lo, hi,       \
                                                    zero_point, lanes);                            \
      }                                                                                            \
    }                                                                                              \
  }

ONNXKIT_DEPTHWISE_AVX512(avx512, "avx512f,avx512bw,avx512vl", multiply_add)
ONNXKIT_DEPTHWISE_AVX512(avx512_vnni, "avx512f,avx512bw,avx512vl,avx512vnni", _mm512_dpwssd_epi32)
#undef ONNXKIT_DEPTHWISE_AVX512

// ---------------------------------------------------------------------------------------
// AVX2: the same layout, 8 channels per vector.

template <bool kSigned>
__attribute__((target("avx2"))) void build_pair_row_avx2(const PairRowSource& s, int16_t* out) {
  const __m256i zero_point = _mm256_set1_epi16(static_cast<int16_t>(s.x_zero_point));
  for (int64_t k = 0; k < s.entries; k += s.step) {
    const uint8_t* a = pixel(s, k - s.pad_left);
    const uint8_t* b = pixel(s, k - s.pad_left + 1);
    int16_t* entry = out + k * s.padded * 2;
    int64_t c = 0;
    for (; c + 16 <= s.channels; c += 16) {
      const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + c));
      const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + c));
      const __m128i low = _mm_unpacklo_epi8(va, vb), high = _mm_unpackhi_epi8(va, vb);
      auto* to = reinterpret_cast<__m256i*>(entry + 2 * c);
      _mm256_storeu_si256(
          to, _mm256_sub_epi16(kSigned ? _mm256_cvtepi8_epi16(low) : _mm256_cvtepu8_epi16(low),
                               zero_point));
      _mm256_storeu_si256(to + 1, _mm256_sub_epi16(kSigned ? _mm256_cvtepi8_epi16(high)
                                                           : _mm256_cvtepu8_epi16(high),
                                                   zero_point));
    }
    pair_entry_tail<kSigned>(s, a, b, c, entry);
  }
}

template <int kRows, int kPairs, int kColumns>
__attribute__((target("avx2"), always_inline)) inline void columns_avx2(
    const RowJob& job, const __m256i* w, int64_t c, int64_t ow, __m256i bias, __m256 multiplier,
    __m256 lo, __m256 hi, __m256i zero_point) {
  __m256i acc[kColumns];
#pragma GCC unroll 4
  for (int u = 0; u < kColumns; ++u) acc[u] = bias;
#pragma GCC unroll 5
  for (int i = 0; i < kRows; ++i) {
    const int16_t* row = job.pair_rows[i] + 2 * c;
#pragma GCC unroll 3
    for (int q = 0; q < kPairs; ++q) {
#pragma GCC unroll 4
      for (int u = 0; u < kColumns; ++u) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
            row + ((ow + u) * job.stride + 2 * q) * job.padded * 2));
        acc[u] = _mm256_add_epi32(acc[u], _mm256_madd_epi16(x, w[i * kPairs + q]));
      }
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < kColumns; ++u) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[u]), multiplier);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zero_point);
    // The lanes are in the output type's range: saturating packs keep them.
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const __m128i bytes =
        job.is_signed ? _mm_packs_epi16(words, words) : _mm_packus_epi16(words, words);
    uint8_t* y = job.y + (ow + u) * job.channels + c;
    if (c + 8 <= job.channels) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y), bytes);
    } else {
      alignas(16) uint8_t lanes[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes), bytes);
      std::copy(lanes, lanes + (job.channels - c), y);
    }
  }
}

template <int kRows, int kPairs>
__attribute__((target("avx2"))) void row_avx2(const RowJob& job) {
  const __m256 lo = _mm256_set1_ps(job.lo), hi = _mm256_set1_ps(job.hi);
  const __m256i zero_point = _mm256_set1_epi32(job.zero_point);
  for (int64_t c = 0; c < job.channels; c += 8) {
    __m256i w[kRows * kPairs];
    for (int t = 0; t < kRows * kPairs; ++t) {
      w[t] = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(job.packed + (t * job.padded + c) * 2));
    }
    const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(job.biases + c));
    const __m256 multiplier = _mm256_loadu_ps(job.multipliers + c);
    int64_t ow = 0;
    for (; ow + 4 <= job.out_w; ow += 4) {
      columns_avx2<kRows, kPairs, 4>(job, w, c, ow, bias, multiplier, lo, hi, zero_point);
    }
    for (; ow < job.out_w; ++ow) {
      columns_avx2<kRows, kPairs, 1>(job, w, c, ow, bias, multiplier, lo, hi, zero_point);
    }
  }
}

// ---------------------------------------------------------------------------------------
// AVX-512 VNNI on byte quads: VPDPBUSD multiplies four u8 activations by four s8 weights and
// adds the four products into an int32 lane, exactly (no int16 step). Used when every
// (w - w_zp) fits in s8. Activations enter as u8: s8 ones as x + 128 (XOR 0x80), and the
// zero point's share, x_zp * sum(w - w_zp), is taken from the bias up front, so padding
// pixels are x_zp's byte and count as nothing. "Quad rows" hold, per input row, entry k:
// for every channel the 4 bytes of pixels k - pad_left .. k - pad_left + 3; kernel row i of
// output column ow is then entry ow * stride (taps 0-3) and, for 5x5, entry ow * stride + 4
// (tap 4, with zero weights beside it). A quad row is built with byte and word unpacks,
// which work inside 128-bit lanes: register j of a block holds channels 16L + 4j .. +3 in
// lane L. Weights, biases and multipliers are stored in that order, and the signed packs of
// the requantized lanes (which also work inside lanes) put the bytes back in channel order.
// Blocks are 64 channels (zmm) and, for a last block of at most 32, 32 channels (ymm).

#define ONNXKIT_VNNI_TARGET "avx512f,avx512bw,avx512vl,avx512vnni"

struct Zmm {
  using I = __m512i;
  using F = __m512;
  static constexpr int kWidth = 64;
};
struct Ymm {
  using I = __m256i;
  using F = __m256;
  static constexpr int kWidth = 32;
};

#define ONNXKIT_VNNI_INLINE __attribute__((target(ONNXKIT_VNNI_TARGET), always_inline)) inline

// clang-format off
ONNXKIT_VNNI_INLINE __m512i bytes_in(Zmm, const uint8_t* p, int64_t n) {
  return _mm512_maskz_loadu_epi8(n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1, p);
}
ONNXKIT_VNNI_INLINE __m256i bytes_in(Ymm, const uint8_t* p, int64_t n) {
  return _mm256_maskz_loadu_epi8(n >= 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1, p);
}
ONNXKIT_VNNI_INLINE void bytes_out(Zmm, uint8_t* p, int64_t n, __m512i v) {
  _mm512_mask_storeu_epi8(p, n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1, v);
}
ONNXKIT_VNNI_INLINE void bytes_out(Ymm, uint8_t* p, int64_t n, __m256i v) {
  _mm256_mask_storeu_epi8(p, n >= 32 ? ~__mmask32{0} : (__mmask32{1} << n) - 1, v);
}
ONNXKIT_VNNI_INLINE __m512i load(Zmm, const void* p) { return _mm512_loadu_si512(p); }
ONNXKIT_VNNI_INLINE __m256i load(Ymm, const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
ONNXKIT_VNNI_INLINE __m512 load_ps(Zmm, const float* p) { return _mm512_loadu_ps(p); }
ONNXKIT_VNNI_INLINE __m256 load_ps(Ymm, const float* p) { return _mm256_loadu_ps(p); }
ONNXKIT_VNNI_INLINE void store(Zmm, void* p, __m512i v) { _mm512_storeu_si512(p, v); }
ONNXKIT_VNNI_INLINE void store(Ymm, void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
ONNXKIT_VNNI_INLINE __m512i flip_sign(Zmm, __m512i v) { return _mm512_xor_si512(v, _mm512_set1_epi8(-128)); }
ONNXKIT_VNNI_INLINE __m256i flip_sign(Ymm, __m256i v) { return _mm256_xor_si256(v, _mm256_set1_epi8(-128)); }
ONNXKIT_VNNI_INLINE __m512i unpacklo8(__m512i a, __m512i b) { return _mm512_unpacklo_epi8(a, b); }
ONNXKIT_VNNI_INLINE __m256i unpacklo8(__m256i a, __m256i b) { return _mm256_unpacklo_epi8(a, b); }
ONNXKIT_VNNI_INLINE __m512i unpackhi8(__m512i a, __m512i b) { return _mm512_unpackhi_epi8(a, b); }
ONNXKIT_VNNI_INLINE __m256i unpackhi8(__m256i a, __m256i b) { return _mm256_unpackhi_epi8(a, b); }
ONNXKIT_VNNI_INLINE __m512i unpacklo16(__m512i a, __m512i b) { return _mm512_unpacklo_epi16(a, b); }
ONNXKIT_VNNI_INLINE __m256i unpacklo16(__m256i a, __m256i b) { return _mm256_unpacklo_epi16(a, b); }
ONNXKIT_VNNI_INLINE __m512i unpackhi16(__m512i a, __m512i b) { return _mm512_unpackhi_epi16(a, b); }
ONNXKIT_VNNI_INLINE __m256i unpackhi16(__m256i a, __m256i b) { return _mm256_unpackhi_epi16(a, b); }
ONNXKIT_VNNI_INLINE __m512i dpbusd(__m512i acc, __m512i x, __m512i w) { return _mm512_dpbusd_epi32(acc, x, w); }
ONNXKIT_VNNI_INLINE __m256i dpbusd(__m256i acc, __m256i x, __m256i w) { return _mm256_dpbusd_epi32(acc, x, w); }
// float(acc) * multiplier, clamped to [lo, hi] when kClamp, rounded half to even. Without
// the clamp the packs below saturate instead: the bounds are integers, so clamping before
// or after the rounding gives the same bytes, as long as the products stay far inside int32
// (run_quad checks that).
template <bool kClamp>
ONNXKIT_VNNI_INLINE __m512i rounded(__m512i acc, __m512 m, float lo, float hi) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), m);
  if constexpr (kClamp) v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
  return _mm512_cvtps_epi32(v);
}
template <bool kClamp>
ONNXKIT_VNNI_INLINE __m256i rounded(__m256i acc, __m256 m, float lo, float hi) {
  __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), m);
  if constexpr (kClamp) v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
  return _mm256_cvtps_epi32(v);
}
// The rounded lanes as bytes in channel order, plus the zero point. Each step saturates
// (int16, then the output type), which gives saturate(r + zp) for any int32 r, zero point
// in [-128, 255].
ONNXKIT_VNNI_INLINE __m512i packed_bytes(__m512i r0, __m512i r1, __m512i r2, __m512i r3, int32_t zp, bool is_signed) {
  const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(zp));
  const __m512i low = _mm512_adds_epi16(_mm512_packs_epi32(r0, r1), z);
  const __m512i high = _mm512_adds_epi16(_mm512_packs_epi32(r2, r3), z);
  return is_signed ? _mm512_packs_epi16(low, high) : _mm512_packus_epi16(low, high);
}
ONNXKIT_VNNI_INLINE __m256i packed_bytes(__m256i r0, __m256i r1, __m256i r2, __m256i r3, int32_t zp, bool is_signed) {
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zp));
  const __m256i low = _mm256_adds_epi16(_mm256_packs_epi32(r0, r1), z);
  const __m256i high = _mm256_adds_epi16(_mm256_packs_epi32(r2, r3), z);
  return is_signed ? _mm256_packs_epi16(low, high) : _mm256_packus_epi16(low, high);
}
// clang-format on

// One block's share of a quad row: entries k = 0, kStep, ... below `entries`. A pair P(k)
// interleaves pixels k and k + 1; entry k is P(k) interleaved with P(k + 2).
template <class V>
struct QuadPair {
  typename V::I lo, hi;
};

template <class V, bool kSigned>
ONNXKIT_VNNI_INLINE QuadPair<V> quad_pair(const PairRowSource& s, int64_t c0, int64_t valid,
                                          int64_t k) {
  using I = typename V::I;
  I a = bytes_in(V{}, pixel(s, k - s.pad_left) + c0, valid);
  I b = bytes_in(V{}, pixel(s, k + 1 - s.pad_left) + c0, valid);
  if constexpr (kSigned) {
    a = flip_sign(V{}, a);
    b = flip_sign(V{}, b);
  }
  return {unpacklo8(a, b), unpackhi8(a, b)};
}

template <class V>
ONNXKIT_VNNI_INLINE void store_quads(uint8_t* to, const QuadPair<V>& p, const QuadPair<V>& q) {
  store(V{}, to, unpacklo16(p.lo, q.lo));
  store(V{}, to + V::kWidth, unpackhi16(p.lo, q.lo));
  store(V{}, to + 2 * V::kWidth, unpacklo16(p.hi, q.hi));
  store(V{}, to + 3 * V::kWidth, unpackhi16(p.hi, q.hi));
}

template <class V, bool kSigned, int kStep>
__attribute__((target(ONNXKIT_VNNI_TARGET))) void build_quad_block(const PairRowSource& s,
                                                                   int64_t c0, int64_t valid,
                                                                   uint8_t* out) {
  constexpr int64_t kEntryBytes = V::kWidth * 4;
  uint8_t* to = out;
  if constexpr (kStep == 1) {
    QuadPair<V> p0 = quad_pair<V, kSigned>(s, c0, valid, 0);
    QuadPair<V> p1 = quad_pair<V, kSigned>(s, c0, valid, 1);
    for (int64_t k = 0; k < s.entries; ++k) {
      const QuadPair<V> p2 = quad_pair<V, kSigned>(s, c0, valid, k + 2);
      store_quads<V>(to + k * kEntryBytes, p0, p2);
      p0 = p1;
      p1 = p2;
    }
  } else {
    QuadPair<V> p0 = quad_pair<V, kSigned>(s, c0, valid, 0);
    for (int64_t k = 0; k < s.entries; k += 2) {
      const QuadPair<V> p2 = quad_pair<V, kSigned>(s, c0, valid, k + 2);
      store_quads<V>(to + k / 2 * kEntryBytes, p0, p2);
      p0 = p2;
    }
  }
}

// One output row's operands for the quad path.
struct QuadRowJob {
  const uint8_t* const* quad_rows;  // kh rows of one block, [entry / stride][block width * 4]
  int64_t out_w, channels, padded;
  const int8_t* packed;      // [kh][groups][padded C * 4], in the quad rows' channel order
  const float* multipliers;  // padded C, in that order
  const int32_t* biases;     // padded C, in that order, less x_zp * sum(w - w_zp)
  float lo, hi;
  int32_t zero_point;
  bool is_signed;
  uint8_t* y;
};

// kColumns output columns from ow on, one block of channels (c0, V::kWidth wide).
template <class V, int kRows, int kGroups, int kStride, bool kClamp, int kColumns>
__attribute__((target(ONNXKIT_VNNI_TARGET), always_inline)) inline void quad_columns(
    const QuadRowJob& job, const typename V::I* w, int64_t c0, int64_t ow) {
  using I = typename V::I;
  constexpr int kSub = V::kWidth / 4;  // channels per register
  const int64_t entry_bytes = job.padded * 4;
  constexpr int64_t kEntryBytes = V::kWidth * 4;  // of a quad row
  I acc[kColumns][4];
#pragma GCC unroll 4
  for (int u = 0; u < kColumns; ++u) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[u][j] = load(V{}, job.biases + c0 + j * kSub);
  }
#pragma GCC unroll 5
  for (int i = 0; i < kRows; ++i) {
    const uint8_t* row = job.quad_rows[i];
#pragma GCC unroll 2
    for (int g = 0; g < kGroups; ++g) {
#pragma GCC unroll 4
      for (int u = 0; u < kColumns; ++u) {
        // Entry (ow + u) * stride + 4g, stored at that index / stride.
        const uint8_t* at = row + (ow + u + 4 * g / kStride) * kEntryBytes;
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const I wj = kRows * kGroups <= 3
                           ? w[(i * kGroups + g) * 4 + j]
                           : load(V{}, job.packed + (i * kGroups + g) * entry_bytes + c0 * 4 +
                                           j * V::kWidth);
          acc[u][j] = dpbusd(acc[u][j], load(V{}, at + j * V::kWidth), wj);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < kColumns; ++u) {
    I r[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      r[j] =
          rounded<kClamp>(acc[u][j], load_ps(V{}, job.multipliers + c0 + j * kSub), job.lo, job.hi);
    }
    bytes_out(V{}, job.y + (ow + u) * job.channels + c0, job.channels - c0,
              packed_bytes(r[0], r[1], r[2], r[3], job.zero_point, job.is_signed));
  }
}

template <class V, int kRows, int kGroups, int kStride, bool kClamp>
__attribute__((target(ONNXKIT_VNNI_TARGET))) void quad_block_row(const QuadRowJob& job,
                                                                 int64_t c0) {
  using I = typename V::I;
  const int64_t entry_bytes = job.padded * 4;
  // The 3x3 weights stay in 12 registers; 5x5's are read from memory as they are used.
  I w[kRows * kGroups <= 3 ? 12 : 1];
  if constexpr (kRows * kGroups <= 3) {
    for (int t = 0; t < kRows * kGroups; ++t) {
      for (int j = 0; j < 4; ++j) {
        w[t * 4 + j] = load(V{}, job.packed + t * entry_bytes + c0 * 4 + j * V::kWidth);
      }
    }
  }
  // 16 accumulator chains (4 columns of 4 registers): VPDPBUSD's latency is several times
  // its issue interval.
  constexpr int kColumns = 4;
  int64_t ow = 0;
  for (; ow + kColumns <= job.out_w; ow += kColumns) {
    quad_columns<V, kRows, kGroups, kStride, kClamp, kColumns>(job, w, c0, ow);
  }
  if (ow + 2 <= job.out_w) {
    quad_columns<V, kRows, kGroups, kStride, kClamp, 2>(job, w, c0, ow);
    ow += 2;
  }
  if (ow < job.out_w) quad_columns<V, kRows, kGroups, kStride, kClamp, 1>(job, w, c0, ow);
}

#pragma GCC diagnostic pop

// One block's quad row builder and row kernel.
using BuildQuadBlock = void (*)(const PairRowSource&, int64_t c0, int64_t valid, uint8_t*);
using QuadBlockRow = void (*)(const QuadRowJob&, int64_t c0);

template <class V>
BuildQuadBlock quad_builder(bool x_signed, int64_t stride) {
  if (stride == 1) return x_signed ? build_quad_block<V, true, 1> : build_quad_block<V, false, 1>;
  return x_signed ? build_quad_block<V, true, 2> : build_quad_block<V, false, 2>;
}

template <class V, int kRows, int kGroups>
QuadBlockRow quad_block_row_function(int64_t stride, bool clamp) {
  if (stride == 1) {
    return clamp ? quad_block_row<V, kRows, kGroups, 1, true>
                 : quad_block_row<V, kRows, kGroups, 1, false>;
  }
  return clamp ? quad_block_row<V, kRows, kGroups, 2, true>
               : quad_block_row<V, kRows, kGroups, 2, false>;
}

template <class V>
QuadBlockRow quad_block_row_function(int64_t kernel, int64_t stride, bool clamp) {
  return kernel == 3 ? quad_block_row_function<V, 3, 1>(stride, clamp)
                     : quad_block_row_function<V, 5, 2>(stride, clamp);
}

using BuildPairRow = void (*)(const PairRowSource&, int16_t*);
using Row = void (*)(const RowJob&);

template <int kRows, int kPairs, int kStride>
Row row_function(DepthwiseIsa isa) {
  switch (isa) {
    case DepthwiseIsa::kAvx512Vnni:
      return row_avx512_vnni<kRows, kPairs, kStride>;
    case DepthwiseIsa::kAvx512:
      return row_avx512<kRows, kPairs, kStride>;
    default:
      return row_avx2<kRows, kPairs>;
  }
}

Row row_function(DepthwiseIsa isa, int64_t kernel, int64_t stride) {
  if (kernel == 3) return stride == 1 ? row_function<3, 2, 1>(isa) : row_function<3, 2, 2>(isa);
  return stride == 1 ? row_function<5, 3, 1>(isa) : row_function<5, 3, 2>(isa);
}

// The output type's range less the zero point, as quantize_simd clamps before rounding.
void output_range(const Int8DepthwiseConv::Requantization& r, float& lo, float& hi) {
  const float zp = static_cast<float>(r.zero_point);
  lo = (r.is_signed ? -128.0f : 0.0f) - zp;
  hi = (r.is_signed ? 127.0f : 255.0f) - zp;
}

// The quad path's channel order: blocks of 64 channels, the last one 32 wide when at most 32
// channels are left; inside a block of width B, channel 16L + 4j + d sits at dword
// j * B / 4 + 4L + d (register j, 128-bit lane L).
int64_t quad_padded(int64_t channels) {
  int64_t c0 = 0;
  while (channels - c0 > 32) c0 += 64;
  return c0 < channels ? c0 + 32 : c0;
}

int64_t quad_position(int64_t channels, int64_t c) {
  const int64_t c0 = c / 64 * 64;
  const int64_t width = channels - c0 > 32 ? 64 : 32;
  const int64_t offset = c - c0;
  return c0 + (offset % 16) / 4 * (width / 4) + offset / 16 * 4 + offset % 4;
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
      padded_channels_((channels + 15) / 16 * 16),
      kernel_h_(kernel_h),
      kernel_w_(kernel_w),
      stride_h_(stride_h),
      stride_w_(stride_w),
      row_pairs_((kernel_w + 1) / 2) {
  const int64_t taps = kernel_h * kernel_w;
  packed_.assign(static_cast<size_t>(kernel_h * row_pairs_ * padded_channels_ * 2), 0);
  weights_.resize(static_cast<size_t>(channels * taps));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < kernel_h; ++i) {
      for (int64_t j = 0; j < kernel_w; ++j) {
        const int32_t w = weights[(c * kernel_h + i) * kernel_w + j] - zero_points[c];
        weights_[c * taps + i * kernel_w + j] = w;
        packed_[((i * row_pairs_ + j / 2) * padded_channels_ + c) * 2 + j % 2] =
            static_cast<int16_t>(w);
      }
    }
  }
  quad_ = std::all_of(weights_.begin(), weights_.end(), [](int32_t w) {
    return w >= std::numeric_limits<int8_t>::min() && w <= std::numeric_limits<int8_t>::max();
  });
  if (!quad_) return;
  quad_padded_ = quad_padded(channels);
  const int64_t groups = (kernel_w + 3) / 4;
  quad_weights_.assign(static_cast<size_t>(kernel_h * groups * quad_padded_ * 4), 0);
  weight_sums_.assign(static_cast<size_t>(channels), 0);
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t at = quad_position(channels, c) * 4;
    for (int64_t i = 0; i < kernel_h; ++i) {
      for (int64_t j = 0; j < kernel_w; ++j) {
        const int32_t w = weights_[c * taps + i * kernel_w + j];
        quad_weights_[(i * groups + j / 4) * quad_padded_ * 4 + at + j % 4] =
            static_cast<int8_t>(w);
        weight_sums_[c] += w;
      }
    }
  }
}

void Int8DepthwiseConv::run(const void* x, bool x_signed, int32_t x_zero_point, const Geometry& g,
                            const Requantization& r, void* y, DepthwiseIsa isa) const {
  if (!cpu_runs(isa)) isa = best_int8_depthwise_isa();
  const auto* in = static_cast<const uint8_t*>(x);
  auto* out = static_cast<uint8_t*>(y);
  const int64_t rows = g.images * g.out_h;
  const int64_t row_work = std::max<int64_t>(1, g.out_w * channels_ * kernel_h_ * kernel_w_);
  const int64_t min_rows = std::max<int64_t>(1, 65536 / row_work);

  // The vector paths skip quantize_simd's NaN rule: a NaN needs a multiplier that is not finite.
  const bool finite = std::all_of(r.multipliers, r.multipliers + channels_,
                                  [](float m) { return std::isfinite(m); });
  if (isa == DepthwiseIsa::kScalar || !finite) {
    const int64_t taps = kernel_h_ * kernel_w_;
    parallel_for(rows, min_rows, [&](int64_t begin, int64_t end) {
      std::vector<int32_t> acc(static_cast<size_t>(channels_));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t n = row / g.out_h, oh = row % g.out_h;
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          std::fill(acc.begin(), acc.end(), 0);
          for (int64_t i = 0; i < kernel_h_; ++i) {
            const int64_t ih = oh * stride_h_ - g.pad_top + i;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t j = 0; j < kernel_w_; ++j) {
              const int64_t iw = ow * stride_w_ - g.pad_left + j;
              if (iw < 0 || iw >= g.in_w) continue;
              const uint8_t* p = in + ((n * g.in_h + ih) * g.in_w + iw) * channels_;
              for (int64_t c = 0; c < channels_; ++c) {
                const int32_t v = x_signed ? widened<true>(p[c], x_zero_point)
                                           : widened<false>(p[c], x_zero_point);
                acc[c] += v * weights_[c * taps + i * kernel_w_ + j];
              }
            }
          }
          uint8_t* to = out + (row * g.out_w + ow) * channels_;
          if (r.is_signed) {
            quantize_simd::requantize_s8(acc.data(), channels_, 0, r.biases, 0.0f, r.multipliers,
                                         r.zero_point, reinterpret_cast<int8_t*>(to));
          } else {
            quantize_simd::requantize_u8(acc.data(), channels_, 0, r.biases, 0.0f, r.multipliers,
                                         r.zero_point, to);
          }
        }
      }
    });
    return;
  }

  if (isa == DepthwiseIsa::kAvx512Vnni && quad_) {
    run_quad(in, x_signed, x_zero_point, g, r, out, rows, min_rows);
    return;
  }

  // Vector paths: per-channel parameters padded to whole vectors.
  const int64_t padded = padded_channels_;
  std::vector<float> multipliers(static_cast<size_t>(padded), 0.0f);
  std::copy(r.multipliers, r.multipliers + channels_, multipliers.begin());
  std::vector<int32_t> biases(static_cast<size_t>(padded), 0);
  if (r.biases) std::copy(r.biases, r.biases + channels_, biases.begin());
  float lo = 0, hi = 0;
  output_range(r, lo, hi);
  const std::vector<uint8_t> zero_point_pixel(static_cast<size_t>(channels_),
                                              static_cast<uint8_t>(x_zero_point));
  const int64_t entries = (g.out_w - 1) * stride_w_ + 2 * row_pairs_ - 1;
  const size_t row_size = static_cast<size_t>(entries * padded * 2);
  const std::vector<int16_t> padding_row(row_size, 0);  // input rows above or below X
  const bool avx512 = isa == DepthwiseIsa::kAvx512 || isa == DepthwiseIsa::kAvx512Vnni;
  const BuildPairRow build =
      avx512 ? (x_signed ? build_pair_row_avx512<true> : build_pair_row_avx512<false>)
             : (x_signed ? build_pair_row_avx2<true> : build_pair_row_avx2<false>);
  const Row row_kernel = row_function(isa, kernel_h_, stride_w_);

  parallel_for(rows, min_rows, [&](int64_t begin, int64_t end) {
    // Ring of pair rows: input row ih lives in slot ih % kh while output rows read it.
    std::vector<std::vector<int16_t>> ring(static_cast<size_t>(kernel_h_),
                                           std::vector<int16_t>(row_size));
    std::vector<int64_t> held(static_cast<size_t>(kernel_h_), -1);  // n * in_h + ih
    std::vector<const int16_t*> pair_rows(static_cast<size_t>(kernel_h_));
    PairRowSource source{nullptr,     zero_point_pixel.data(),
                         g.in_w,      g.pad_left,
                         entries,     channels_,
                         padded,      stride_w_,
                         x_zero_point};
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / g.out_h, oh = row % g.out_h;
      for (int64_t i = 0; i < kernel_h_; ++i) {
        const int64_t ih = oh * stride_h_ - g.pad_top + i;
        if (ih < 0 || ih >= g.in_h) {
          pair_rows[i] = padding_row.data();
          continue;
        }
        const size_t slot = static_cast<size_t>(ih % kernel_h_);
        const int64_t tag = n * g.in_h + ih;
        if (held[slot] != tag) {
          source.x_row = in + tag * g.in_w * channels_;
          build(source, ring[slot].data());
          held[slot] = tag;
        }
        pair_rows[i] = ring[slot].data();
      }
      row_kernel({pair_rows.data(), g.out_w, stride_w_, channels_, padded, packed_.data(),
                  multipliers.data(), biases.data(), lo, hi, r.zero_point, r.is_signed,
                  out + row * g.out_w * channels_});
    }
  });
}

void Int8DepthwiseConv::run_quad(const uint8_t* in, bool x_signed, int32_t x_zero_point,
                                 const Geometry& g, const Requantization& r, uint8_t* out,
                                 int64_t rows, int64_t min_rows) const {
  const int64_t padded = quad_padded_;
  // The zero point of the u8 values the kernel multiplies (s8 ones are shifted by 128).
  const int64_t x_zp = x_zero_point + (x_signed ? 128 : 0);
  std::vector<float> multipliers(static_cast<size_t>(padded), 0.0f);
  std::vector<int32_t> biases(static_cast<size_t>(padded), 0);
  for (int64_t c = 0; c < channels_; ++c) {
    const int64_t at = quad_position(channels_, c);
    multipliers[at] = r.multipliers[c];
    // In int64 and back: the sum is exact modulo 2^32, as the int32 accumulators are.
    const int64_t bias = (r.biases ? r.biases[c] : 0) - x_zp * weight_sums_[c];
    biases[at] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(bias)));
  }
  float lo = 0, hi = 0;
  output_range(r, lo, hi);
  const std::vector<uint8_t> zero_point_pixel(static_cast<size_t>(channels_),
                                              static_cast<uint8_t>(x_zero_point));
  const int64_t groups = (kernel_w_ + 3) / 4;
  const int64_t entries = (g.out_w - 1) * stride_w_ + 1 + 4 * (groups - 1);
  // Whether |float(acc) * multiplier| stays below 2^30, so that the packs may saturate in
  // place of the clamp: |acc| is at most |bias| plus taps * 255 * 128.
  double largest_acc = 0, largest_multiplier = 0;
  for (int64_t c = 0; c < channels_; ++c) {
    const int64_t bias = (r.biases ? r.biases[c] : 0) - x_zp * weight_sums_[c];
    largest_acc = std::max(largest_acc, std::abs(static_cast<double>(bias)));
    largest_multiplier =
        std::max(largest_multiplier, std::abs(static_cast<double>(r.multipliers[c])));
  }
  largest_acc += static_cast<double>(kernel_h_ * kernel_w_) * 255 * 128;
  const bool clamp = largest_acc * largest_multiplier >= 1073741824.0;
  // A block's quad row: the entries read (every stride-th), 4 bytes per channel.
  const int64_t stored_entries = (entries - 1) / stride_w_ + 1;
  const size_t row_size = static_cast<size_t>(stored_entries * 64 * 4);
  // Input rows above or below X: x_zp's byte in every lane.
  const std::unique_ptr<uint8_t[]> padding_row(new uint8_t[row_size]);
  std::memset(padding_row.get(), static_cast<uint8_t>(x_zp), row_size);

  // Block by block over the whole image, so that the kh quad rows of one block (4x the
  // block's bytes of an input row) stay in L1 while the output rows read them.
  for (int64_t c0 = 0; c0 < channels_; c0 += 64) {
    const bool wide = channels_ - c0 > 32;
    const BuildQuadBlock build =
        wide ? quad_builder<Zmm>(x_signed, stride_w_) : quad_builder<Ymm>(x_signed, stride_w_);
    const QuadBlockRow row_kernel = wide
                                        ? quad_block_row_function<Zmm>(kernel_h_, stride_w_, clamp)
                                        : quad_block_row_function<Ymm>(kernel_h_, stride_w_, clamp);
    parallel_for(rows, min_rows, [&](int64_t begin, int64_t end) {
      // The ring lives in a per-thread buffer kept between runs: a fresh zeroed one cost
      // more than building the rows of the 7x7 layers.
      thread_local std::vector<uint8_t> ring_memory;
      if (ring_memory.size() < kernel_h_ * row_size) ring_memory.resize(kernel_h_ * row_size);
      std::vector<int64_t> held(static_cast<size_t>(kernel_h_), -1);  // n * in_h + ih
      std::vector<const uint8_t*> quad_rows(static_cast<size_t>(kernel_h_));
      PairRowSource source{nullptr,     zero_point_pixel.data(),
                           g.in_w,      g.pad_left,
                           entries,     channels_,
                           padded,      stride_w_,
                           x_zero_point};
      for (int64_t row = begin; row < end; ++row) {
        const int64_t n = row / g.out_h, oh = row % g.out_h;
        for (int64_t i = 0; i < kernel_h_; ++i) {
          const int64_t ih = oh * stride_h_ - g.pad_top + i;
          if (ih < 0 || ih >= g.in_h) {
            quad_rows[i] = padding_row.get();
            continue;
          }
          const size_t slot = static_cast<size_t>(ih % kernel_h_);
          const int64_t tag = n * g.in_h + ih;
          uint8_t* ring_row = ring_memory.data() + slot * row_size;
          if (held[slot] != tag) {
            source.x_row = in + tag * g.in_w * channels_;
            build(source, c0, channels_ - c0, ring_row);
            held[slot] = tag;
          }
          quad_rows[i] = ring_row;
        }
        row_kernel(
            {quad_rows.data(), g.out_w, channels_, padded, quad_weights_.data(), multipliers.data(),
             biases.data(), lo, hi, r.zero_point, r.is_signed, out + row * g.out_w * channels_},
            c0);
      }
    });
  }
}

}  // namespace onnxkit
