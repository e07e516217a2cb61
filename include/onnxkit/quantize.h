// onnxkit::quantize: int8 models in standard ONNX (QuantizeLinear / DequantizeLinear,
// DynamicQuantizeLinear + MatMulInteger / ConvInteger, QLinearConv / QLinearMatMul) that
// ONNX Runtime loads too. Options and semantics follow ONNX Runtime's quantization tool
// (quantize_dynamic / quantize_static): scales and zero points, ranges, calibration methods.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnxkit/dtype.h"
#include "onnxkit/model.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"
#include "onnxkit/status.h"

namespace onnxkit {

// Dynamic: weights quantized ahead, activations at run time (DynamicQuantizeLinear).
// Static: activations quantized with ranges calibrated on sample inputs.
enum class QuantizeMode { kDynamic, kStatic };
// Static mode's output: QuantizeLinear/DequantizeLinear pairs around float ops (QDQ), or
// QLinearConv / QLinearMatMul where ONNX has an int8 op (QOperator; other ops keep QDQ).
enum class QuantFormat { kQdq, kQOperator };
// How an activation's range comes from its calibration values: their min and max; the
// threshold that minimizes the KL divergence of the quantized histogram (entropy); or the
// percentile of the histogram (of |x| when symmetric, as ONNX Runtime does).
enum class CalibrationMethod { kMinMax, kEntropy, kPercentile };

// Where calibration samples come from: called with 0, 1, 2, ... until it returns nullopt
// (or `calibration_samples` were read). `label` names the sample in errors (a folder or
// file). Only one sample is held at a time.
struct CalibrationSample {
  NamedValues inputs;
  std::string label;
};
using CalibrationSource = std::function<std::optional<CalibrationSample>(size_t index)>;

// What quantize does; the defaults are ONNX Runtime's where it has one.
struct QuantizeOptions {
  QuantizeMode mode = QuantizeMode::kDynamic;
  QuantFormat format = QuantFormat::kQdq;
  // One scale per output channel of a weight; unset: on in dynamic mode, off in static.
  std::optional<bool> per_channel;
  // 7-bit ranges (int8 weights in [-64, 64], uint8 in [0, 127]), for CPUs whose u8s8
  // products saturate at int16 (no VNNI).
  bool reduce_range = false;
  DType weight_type = DType::kInt8;       // kInt8 or kUInt8
  DType activation_type = DType::kUInt8;  // static mode: kUInt8 or kInt8
  // Op types to quantize; empty: MatMul and Gemm (dynamic), Conv, MatMul, Gemm and the ops
  // that can stay int8 between them (static; there an Add, Mul or Concat whose output feeds
  // a float op or a graph output is left float: a transformer's residual stream, LayerNorm's
  // scale and shift). Naming one that cannot be quantized fails; named ones are quantized
  // wherever they can be, as ONNX Runtime's tool does.
  std::vector<std::string> op_types;
  std::set<std::string> nodes_to_exclude;
  std::set<std::string> nodes_to_quantize;  // empty: every node of the chosen op types
  CalibrationMethod calibration_method = CalibrationMethod::kMinMax;
  // Static mode: samples to calibrate on. No source: generated inputs as simplify's check
  // makes them (`calibration_dims` fixes symbolic dims, `seed` the data).
  CalibrationSource calibration_source;
  size_t calibration_samples = 8;
  std::map<std::string, int64_t> calibration_dims;
  uint64_t seed = 0;
  bool symmetric_activations = false;
  // Unset: symmetric for int8 weights, asymmetric for uint8 (ONNX Runtime's default).
  std::optional<bool> symmetric_weights;
  // Histogram calibration: bins (0: ONNX Runtime's defaults, 128 for entropy, 2048 for
  // percentile), quantized bins (entropy) and the percentile.
  int histogram_bins = 0;
  int entropy_quantized_bins = 128;
  double percentile = 99.999;
  // The model is simplified first (ONNX Runtime's quant_pre_process): shape inference,
  // folding, BatchNorm fusion, with `simplify`'s options except its check (off), and opset
  // 13 at least (per-axis QuantizeLinear / DequantizeLinear).
  bool simplify_first = true;
  SimplifyOptions simplify;
  // Threads of the calibration session (0: all), and its kernels: the optimized ones are
  // fastest, the reference ones keep no repacked copy of the weights beside the model's.
  int calibration_threads = 0;
  KernelTier calibration_kernels = KernelTier::kOptimized;
};

// One node that was, or was not, quantized.
struct QuantizedNode {
  std::string node;  // its name (or first output)
  std::string op_type;
  std::string how;  // "MatMulInteger", "QDQ", "QLinearConv", or why it was left float
};

// What quantize did.
struct QuantizeReport {
  SimplifyReport simplify;                  // when simplify_first
  std::map<std::string, size_t> quantized;  // op type -> nodes quantized
  std::vector<QuantizedNode> nodes;         // every candidate node, quantized or not
  size_t calibration_samples = 0;
  size_t calibrated_tensors = 0;
  uint64_t float_weight_bytes = 0;      // float weights before
  uint64_t quantized_weight_bytes = 0;  // the int8 weights that replaced them
  double seconds_simplify = 0;
  double seconds_calibrate = 0;
  double seconds_quantize = 0;
  std::vector<std::string> warnings;  // names that matched nothing, ...
};

// Quantizes `model` in place. Fails, leaving `model` as it was given only for errors found
// before any change (an already quantized model, an op type that cannot be quantized, bad
// options); calibration data whose names, dtypes or shapes do not match the inputs fail
// naming the sample and the input.
Result<QuantizeReport> quantize(Model& model, const QuantizeOptions& options);

}  // namespace onnxkit
