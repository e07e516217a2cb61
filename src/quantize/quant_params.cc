#include "quantize/quant_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status.h"

namespace onnxkit::quant {

QRange qrange(DType type, bool reduce_range, bool symmetric) {
  // ONNX Runtime checks reduce_range before symmetric: a reduced int8 range is [-64, 64].
  if (type == DType::kInt8) {
    if (reduce_range) return {-64, 64};
    return symmetric ? QRange{-127, 127} : QRange{-128, 127};
  }
  if (type == DType::kUInt8) return reduce_range ? QRange{0, 127} : QRange{0, 255};
  fail("quantize: {} is not a quantized type (int8 or uint8)", dtype_name(type));
}

QParams compute_qparams(float rmin, float rmax, QRange range, bool symmetric) {
  rmin = std::min(rmin, 0.0f);
  rmax = std::max(rmax, 0.0f);
  if (symmetric) {
    const float absmax = std::max(std::fabs(rmin), std::fabs(rmax));
    rmin = -absmax;
    rmax = absmax;
  }
  const double scale = (double(rmax) - double(rmin)) / (double(range.qmax) - double(range.qmin));
  if (!(scale >= std::numeric_limits<float>::min())) return {1.0f, 0};
  QParams params;
  if (symmetric) {
    params.zero_point = static_cast<int32_t>(std::nearbyint((range.qmin + range.qmax) / 2.0));
  } else {
    params.zero_point = static_cast<int32_t>(std::nearbyint(range.qmin - double(rmin) / scale));
  }
  params.scale = static_cast<float>(scale);
  return params;
}

int32_t quantize_value(float x, QParams params, QRange range) {
  const float q = std::nearbyint(x / params.scale) + static_cast<float>(params.zero_point);
  if (std::isnan(q)) return params.zero_point;
  return static_cast<int32_t>(
      std::clamp(q, static_cast<float>(range.qmin), static_cast<float>(range.qmax)));
}

Tensor scalar_tensor(DType type, double value) {
  Tensor tensor(type, {});
  switch (type) {
    case DType::kFloat:
      *tensor.mutable_data<float>() = static_cast<float>(value);
      break;
    case DType::kInt8:
      *tensor.mutable_data<int8_t>() = static_cast<int8_t>(value);
      break;
    case DType::kUInt8:
      *tensor.mutable_data<uint8_t>() = static_cast<uint8_t>(value);
      break;
    case DType::kInt32:
      *tensor.mutable_data<int32_t>() = static_cast<int32_t>(value);
      break;
    default:
      fail("quantize: no scalar of type {}", dtype_name(type));
  }
  return tensor;
}

QuantizedWeight quantize_weight(const Tensor& weight, DType type, int64_t axis, bool reduce_range,
                                bool symmetric) {
  if (weight.dtype() != DType::kFloat) {
    fail("quantize: weight '{}' is {}, only float weights are quantized", weight.name(),
         dtype_name(weight.dtype()));
  }
  const Shape& shape = weight.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis >= rank) fail("quantize: weight '{}' has no axis {}", weight.name(), axis);
  // The weight viewed as [outer, channels, inner] around the axis.
  int64_t outer = 1, channels = 1, inner = 1;
  if (axis >= 0) {
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    channels = shape[axis];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  } else {
    inner = weight.numel();
  }
  const float* x = weight.data<float>();
  const QRange range = qrange(type, reduce_range, symmetric);
  QuantizedWeight out;
  out.params.resize(channels);
  for (int64_t c = 0; c < channels; ++c) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (int64_t o = 0; o < outer; ++o) {
      const float* row = x + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (std::isnan(row[i])) continue;
        lo = std::min(lo, row[i]);
        hi = std::max(hi, row[i]);
      }
    }
    if (lo > hi) lo = hi = 0;
    out.params[c] = compute_qparams(lo, hi, range, symmetric);
  }
  out.data = Tensor(type, shape);
  auto fill = [&](auto* q) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t base = (o * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          q[base + i] = static_cast<std::remove_pointer_t<decltype(q)>>(
              quantize_value(x[base + i], out.params[c], range));
        }
      }
    }
  };
  if (type == DType::kInt8) {
    fill(out.data.mutable_data<int8_t>());
  } else {
    fill(out.data.mutable_data<uint8_t>());
  }
  if (axis < 0) {
    out.scale = scalar_tensor(DType::kFloat, out.params[0].scale);
    out.zero_point = scalar_tensor(type, out.params[0].zero_point);
  } else {
    out.scale = Tensor(DType::kFloat, {channels});
    out.zero_point = Tensor(type, {channels});
    for (int64_t c = 0; c < channels; ++c) {
      out.scale.mutable_data<float>()[c] = out.params[c].scale;
      if (type == DType::kInt8) {
        out.zero_point.mutable_data<int8_t>()[c] = static_cast<int8_t>(out.params[c].zero_point);
      } else {
        out.zero_point.mutable_data<uint8_t>()[c] = static_cast<uint8_t>(out.params[c].zero_point);
      }
    }
  }
  return out;
}

QuantizedBias quantize_bias(const Tensor& bias, float input_scale,
                            const std::vector<QParams>& weight_params) {
  if (bias.dtype() != DType::kFloat || bias.rank() != 1) {
    fail("quantize: bias '{}' must be a 1-D float tensor", bias.name());
  }
  const int64_t n = bias.numel();
  const bool per_channel = weight_params.size() > 1;
  if (per_channel && static_cast<int64_t>(weight_params.size()) != n) {
    fail("quantize: bias '{}' has {} elements, the weight {} channels", bias.name(), n,
         weight_params.size());
  }
  QuantizedBias out;
  out.data = Tensor(DType::kInt32, {n});
  out.scale = per_channel ? Tensor(DType::kFloat, {n}) : scalar_tensor(DType::kFloat, 0);
  const float* b = bias.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    float scale = input_scale * weight_params[per_channel ? i : 0].scale;
    if (!(scale > 0)) scale = 1.0f;
    const double q = std::nearbyint(double(b[i]) / double(scale));
    out.data.mutable_data<int32_t>()[i] =
        static_cast<int32_t>(std::clamp(q, double(std::numeric_limits<int32_t>::min()),
                                        double(std::numeric_limits<int32_t>::max())));
    if (per_channel || i == 0) out.scale.mutable_data<float>()[per_channel ? i : 0] = scale;
  }
  if (n == 0) *out.scale.mutable_data<float>() = input_scale * weight_params[0].scale;
  return out;
}

}  // namespace onnxkit::quant
