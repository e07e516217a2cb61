// onnxkit's own int8 depthwise convolution on channels-last activations (int8_depthwise.cc),
// for com.onnxkit ChannelsLastQLinearConv when group == channels == output channels (oneDNN
// 2.6 keeps the other convolutions). Depthwise layers are a third of MobileNetV2's int8 run
// and have no reduction over channels for a GEMM kernel to exploit: what costs is widening
// the bytes and requantizing, which this kernel does once per input pixel and in registers.
//
// X is [N, H, W, C] u8 or s8, W [C, 1, kh, kw] with any int8 zero point per channel. The
// accumulators are exact int32 sums of (x - x_zp) * (w - w_zp), taps outside X counting
// as nothing. With AVX-512 VNNI and every (w - w_zp) in s8 (symmetric s8 weights, as ORT's
// and onnxkit's quantizers write them) they are VPDPBUSD sums of u8 x s8 byte quads, 4 taps
// of a kernel row per int32 lane; otherwise sums of int16 pairs (VPMADDWD, or VPDPWSSD with
// VNNI): both factors lie in [-255, 255], a pair's sum in int32. Requantization is QLinearConv's,
// quantize_simd::requantize_u8 / requantize_s8 (float(acc + bias) * multiplier, rounded half
// to even, plus the zero point, saturated), so the output is the reference kernel's bit for
// bit at every instruction set level.
#pragma once

#include <cstdint>
#include <vector>

namespace onnxkit {

// The code paths, best first; best_int8_depthwise_isa() picks the one the CPU and
// active_simd_level() (ONNXKIT_SIMD_LEVEL, SimdLevelOverride) allow.
enum class DepthwiseIsa { kScalar, kAvx2, kAvx512, kAvx512Vnni };

DepthwiseIsa best_int8_depthwise_isa();
// Whether this CPU runs `isa`.
bool cpu_runs(DepthwiseIsa isa);

class Int8DepthwiseConv {
 public:
  // Whether the kernel takes a convolution of this form: kernel 3x3 or 5x5, strides 1 or 2,
  // dilation 1, any padding.
  static bool handles(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                      int64_t dilation_h, int64_t dilation_w);

  // weights: C * kh * kw values of W as integers; zero_points: C values (W's per channel).
  Int8DepthwiseConv(int64_t channels, int64_t kernel_h, int64_t kernel_w, int64_t stride_h,
                    int64_t stride_w, const std::vector<int32_t>& weights,
                    const std::vector<int32_t>& zero_points);

  struct Geometry {
    int64_t images, in_h, in_w, out_h, out_w, pad_top, pad_left;
  };
  struct Requantization {
    const float* multipliers;  // per channel: x_scale * w_scale[c] / y_scale
    const int32_t* biases;     // per channel, or nullptr
    int32_t zero_point;
    bool is_signed;  // s8 output
  };
  // y [N, out_h, out_w, C] from x [N, in_h, in_w, C] (s8 when x_signed), split across
  // threads by output rows.
  void run(const void* x, bool x_signed, int32_t x_zero_point, const Geometry& geometry,
           const Requantization& requantization, void* y,
           DepthwiseIsa isa = best_int8_depthwise_isa()) const;

 private:
  void run_quad(const uint8_t* x, bool x_signed, int32_t x_zero_point, const Geometry& geometry,
                const Requantization& requantization, uint8_t* y, int64_t rows,
                int64_t min_rows) const;

  int64_t channels_, padded_channels_;  // C, and C rounded up to 16 (the vector width)
  int64_t kernel_h_, kernel_w_, stride_h_, stride_w_;
  int64_t row_pairs_;  // ceil(kw / 2): the tap pairs of one kernel row
  // (w - w_zp) as int16, [kh][row_pairs][padded C][2]: taps (i, 2q) and (i, 2q + 1) of each
  // channel side by side, as VPMADDWD multiplies them (0 past kw and past C).
  std::vector<int16_t> packed_;
  std::vector<int32_t> weights_;  // (w - w_zp) as int32, [C][kh * kw], for the scalar path
  // The VNNI byte-quad path (int8_depthwise.cc), where every (w - w_zp) fits in s8:
  // [kh][groups][quad padded C][4] s8 weights, 4 taps of a kernel row per channel (groups:
  // 1 for 3x3, 2 for 5x5), channels in the quad rows' order; per channel sum of (w - w_zp).
  bool quad_ = false;
  int64_t quad_padded_ = 0;
  std::vector<int8_t> quad_weights_;
  std::vector<int32_t> weight_sums_;
};

}  // namespace onnxkit
