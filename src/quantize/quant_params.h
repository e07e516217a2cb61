// Scales and zero points as ONNX Runtime's quantization tool computes them
// (quant_utils.compute_scale_zp, get_qmin_qmax_for_qType, quantize_nparray), and the
// quantized weights and biases built from them.
#pragma once

#include <cstdint>
#include <vector>

#include "onnxkit/dtype.h"
#include "onnxkit/tensor.h"

namespace onnxkit::quant {

// The integer range a quantized tensor uses: int8 [-128, 127] ([-127, 127] symmetric,
// [-64, 64] reduced), uint8 [0, 255] ([0, 127] reduced).
struct QRange {
  int32_t qmin = 0;
  int32_t qmax = 255;
};
QRange qrange(DType type, bool reduce_range, bool symmetric);

// r = scale * (q - zero_point).
struct QParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};
// [rmin, rmax] widened to hold 0 (and made symmetric when asked) mapped onto the range:
// a symmetric zero point is the middle of the range (0 for int8, 128 for uint8); a range
// narrower than float's smallest normal gets scale 1, zero point 0.
QParams compute_qparams(float rmin, float rmax, QRange range, bool symmetric);

// saturate(round_half_to_even(x / scale) + zero_point), as QuantizeLinear computes it.
int32_t quantize_value(float x, QParams params, QRange range);

// A float weight quantized per tensor (`axis` < 0) or per slice along `axis`.
struct QuantizedWeight {
  Tensor data;                  // kInt8 / kUInt8, the weight's shape
  Tensor scale;                 // float: a scalar, or [channels]
  Tensor zero_point;            // the weight's type, same shape as scale
  std::vector<QParams> params;  // one per channel (one for per tensor)
};
QuantizedWeight quantize_weight(const Tensor& weight, DType type, int64_t axis, bool reduce_range,
                                bool symmetric);

// A float bias quantized to int32 with scale input_scale * weight_scale[c] (per channel
// when the weight is), zero point 0: what QLinearConv's bias and QDQ's bias DQ expect.
struct QuantizedBias {
  Tensor data;   // kInt32
  Tensor scale;  // float: a scalar or [channels]
};
QuantizedBias quantize_bias(const Tensor& bias, float input_scale,
                            const std::vector<QParams>& weight_params);

// A scalar tensor of `type` (kFloat, kInt8, kUInt8, kInt32) holding `value`.
Tensor scalar_tensor(DType type, double value);

}  // namespace onnxkit::quant
