// Fast QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear between float32 and
// uint8 / int8, per tensor or per axis (quantize_simd's loops, split with parallel_for).
// Blocked quantization, other types, precision / output_dtype attributes that change the
// arithmetic go to the node's reference kernel (ops/quantization.cc), whose results these
// match bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/parallel.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/quantize_simd.h"
#include "ops/op_utils.h"

namespace onnxkit {
namespace {

bool is_int8(DType dtype) {
  return dtype == DType::kUInt8 || dtype == DType::kInt8;
}

// Where one scale / zero point applies: `outer` runs of `channels` blocks of `inner`
// contiguous elements (per tensor: one channel).
struct AxisRuns {
  int64_t outer = 1, channels = 1, inner = 1;
};

// The runs for a per-tensor (one value) or per-axis (1-D, x's dim at `axis`) parameter;
// nullopt for any other shape (blocked quantization), which the reference handles.
std::optional<AxisRuns> axis_runs(const Shape& x, const Tensor& scale, const Tensor* zero_point,
                                  int64_t axis) {
  AxisRuns runs;
  if (zero_point && zero_point->shape() != scale.shape()) return std::nullopt;
  if (scale.numel() == 1 && scale.rank() <= 1) {
    runs.inner = shape_numel(x);
    return runs;
  }
  if (scale.rank() != 1 || x.empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x.size());
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  if (x[axis] != scale.numel()) return std::nullopt;
  runs.channels = x[axis];
  for (int64_t d = 0; d < axis; ++d) runs.outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) runs.inner *= x[d];
  return runs;
}

std::vector<int32_t> zero_points_of(const Tensor* zp, int64_t count) {
  std::vector<int32_t> values(static_cast<size_t>(count), 0);
  if (!zp) return values;
  for (int64_t i = 0; i < count; ++i) {
    values[i] = zp->dtype() == DType::kUInt8 ? zp->data<uint8_t>()[i] : zp->data<int8_t>()[i];
  }
  return values;
}

// f(begin, end, channel) over every element, in parallel chunks within runs.
template <typename F>
void for_each_run(const AxisRuns& runs, F&& f) {
  const int64_t total = runs.outer * runs.channels * runs.inner;
  parallel_for(total, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t run = begin / runs.inner;
      const int64_t stop = std::min(end, (run + 1) * runs.inner);
      f(begin, stop, run % runs.channels);
      begin = stop;
    }
  });
}

class FastQuantizeLinear : public OpKernel {
 public:
  explicit FastQuantizeLinear(const KernelCreateContext& context)
      : reference_(context.reference_kernel()),
        axis_(context.attr_int("axis", 1)),
        per_axis_(context.opset() >= 13),
        blocked_(context.attr_int("block_size", 0) != 0),
        output_dtype_(context.opset() >= 21 ? context.attr_int("output_dtype", 0) : 0),
        precision_(context.opset() >= 23 ? context.attr_int("precision", 0) : 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    const Tensor* zp = context.has_input(2) ? &context.input(2) : nullptr;
    const DType out_type = zp ? zp->dtype() : DType::kUInt8;
    std::optional<AxisRuns> runs;
    const bool handled = !blocked_ && precision_ == 0 && x.dtype() == DType::kFloat &&
                         scale.dtype() == DType::kFloat && is_int8(out_type) &&
                         (output_dtype_ == 0 || output_dtype_ == static_cast<int64_t>(out_type)) &&
                         (runs = axis_runs(x.shape(), scale, zp, axis_)) &&
                         (per_axis_ || runs->channels == 1);
    if (!handled) {
      run_fallback(reference_.get(), context);
      return;
    }
    Tensor& y = context.allocate_output_uninitialized(0, out_type, x.shape());
    if (y.numel() == 0) return;
    const std::vector<int32_t> zps = zero_points_of(zp, scale.numel());
    const float* scales = scale.data<float>();
    const float* src = x.data<float>();
    if (out_type == DType::kUInt8) {
      uint8_t* dst = y.mutable_data<uint8_t>();
      for_each_run(*runs, [&](int64_t begin, int64_t end, int64_t c) {
        quantize_simd::quantize_u8(src + begin, end - begin, scales[c], zps[c], dst + begin);
      });
    } else {
      int8_t* dst = y.mutable_data<int8_t>();
      for_each_run(*runs, [&](int64_t begin, int64_t end, int64_t c) {
        quantize_simd::quantize_s8(src + begin, end - begin, scales[c], zps[c], dst + begin);
      });
    }
  }

 private:
  std::unique_ptr<OpKernel> reference_;
  int64_t axis_;
  bool per_axis_;  // opset 10 has per-tensor parameters only
  bool blocked_;
  int64_t output_dtype_, precision_;
};

class FastDequantizeLinear : public OpKernel {
 public:
  explicit FastDequantizeLinear(const KernelCreateContext& context)
      : reference_(context.reference_kernel()),
        axis_(context.attr_int("axis", 1)),
        per_axis_(context.opset() >= 13),
        blocked_(context.attr_int("block_size", 0) != 0),
        output_dtype_(context.opset() >= 23 ? context.attr_int("output_dtype", 0) : 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    const Tensor* zp = context.has_input(2) ? &context.input(2) : nullptr;
    std::optional<AxisRuns> runs;
    const bool handled =
        !blocked_ && is_int8(x.dtype()) && scale.dtype() == DType::kFloat &&
        (!zp || zp->dtype() == x.dtype()) &&
        (output_dtype_ == 0 || output_dtype_ == static_cast<int64_t>(DType::kFloat)) &&
        (runs = axis_runs(x.shape(), scale, zp, axis_)) && (per_axis_ || runs->channels == 1);
    if (!handled) {
      run_fallback(reference_.get(), context);
      return;
    }
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, x.shape());
    if (y.numel() == 0) return;
    const std::vector<int32_t> zps = zero_points_of(zp, scale.numel());
    const float* scales = scale.data<float>();
    float* dst = y.mutable_data<float>();
    if (x.dtype() == DType::kUInt8) {
      const uint8_t* src = x.data<uint8_t>();
      for_each_run(*runs, [&](int64_t begin, int64_t end, int64_t c) {
        quantize_simd::dequantize_u8(src + begin, end - begin, scales[c], zps[c], dst + begin);
      });
    } else {
      const int8_t* src = x.data<int8_t>();
      for_each_run(*runs, [&](int64_t begin, int64_t end, int64_t c) {
        quantize_simd::dequantize_s8(src + begin, end - begin, scales[c], zps[c], dst + begin);
      });
    }
  }

 private:
  std::unique_ptr<OpKernel> reference_;
  int64_t axis_;
  bool per_axis_;  // opset 10 has per-tensor parameters only
  bool blocked_;
  int64_t output_dtype_;
};

// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point = round(clamp(-min / y_scale)),
// as the reference kernel (an all-zero x: scale 0, zero point 0, y 0).
class FastDynamicQuantizeLinear : public OpKernel {
 public:
  explicit FastDynamicQuantizeLinear(const KernelCreateContext& context)
      : reference_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kFloat) {
      run_fallback(reference_.get(), context);
      return;
    }
    const float* src = x.data<float>();
    const int64_t n = x.numel();
    float lo = 0.0f, hi = 0.0f;
    std::mutex mutex;
    parallel_for(n, kMinParallelStreaming * 4, [&](int64_t begin, int64_t end) {
      float l = 0.0f, h = 0.0f;
      quantize_simd::min_max_with_zero(src + begin, end - begin, l, h);
      std::lock_guard lock(mutex);
      lo = std::fmin(lo, l);
      hi = std::fmax(hi, h);
    });
    const float scale = (hi - lo) / 255.0f;
    float zero_point = 0.0f;
    if (scale != 0.0f) zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
    const int32_t zp = static_cast<int32_t>(zero_point);
    Tensor& y = context.allocate_output_uninitialized(0, DType::kUInt8, x.shape());
    context.allocate_output(1, DType::kFloat, {}).mutable_data<float>()[0] = scale;
    context.allocate_output(2, DType::kUInt8, {}).mutable_data<uint8_t>()[0] =
        static_cast<uint8_t>(zp);
    if (n == 0) return;
    uint8_t* dst = y.mutable_data<uint8_t>();
    if (scale == 0.0f) {
      std::memset(dst, 0, static_cast<size_t>(n));
      return;
    }
    parallel_for(n, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
      quantize_simd::quantize_u8(src + begin, end - begin, scale, zp, dst + begin);
    });
  }

 private:
  std::unique_ptr<OpKernel> reference_;
};

}  // namespace

void register_fast_quantize_kernels(OpRegistry& registry) {
  for (int64_t since : {10, 13, 19, 21, 23, 24, 25, 28}) {
    registry.add_optimized("", "QuantizeLinear", since, kernel_factory<FastQuantizeLinear>());
    registry.add_optimized("", "DequantizeLinear", since, kernel_factory<FastDequantizeLinear>());
  }
  registry.add_optimized("", "DynamicQuantizeLinear", 11,
                         kernel_factory<FastDynamicQuantizeLinear>());
}

}  // namespace onnxkit
