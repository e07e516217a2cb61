// What the int8 kernels share (kernels/dnnl_int8.cc, kernels/int8_microsoft.cc): reading
// their constant operands at creation, handing a case back to the reference kernel, and the
// float-output product on oneDNN that the com.microsoft kernels build on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ops/kernel.h"

namespace onnxkit {

inline bool is_int8(DType dtype) {
  return dtype == DType::kUInt8 || dtype == DType::kInt8;
}

// Values of a u8 / s8 tensor as int32.
inline std::vector<int32_t> int8_values(const Tensor& t) {
  std::vector<int32_t> values(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kUInt8) {
    std::copy(t.data<uint8_t>(), t.data<uint8_t>() + t.numel(), values.begin());
  } else {
    std::copy(t.data<int8_t>(), t.data<int8_t>() + t.numel(), values.begin());
  }
  return values;
}

// The single value of a scalar u8 / s8 input at run time.
inline int32_t int8_scalar(const Tensor& t) {
  return int8_values(t)[0];
}

inline std::vector<float> float_values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// The initializer of input `i`, or nullptr.
inline const Tensor* constant(const KernelCreateContext& context, size_t i) {
  const Value* value = i < context.node().inputs().size() ? context.node().inputs()[i] : nullptr;
  return value && value->has_initializer() ? &value->initializer() : nullptr;
}

inline bool present(const KernelCreateContext& context, size_t i) {
  return i < context.node().inputs().size() && context.node().inputs()[i] != nullptr;
}

// A per-tensor or per-channel parameter: one value, or `count` values in a tensor with no
// other dim above 1 ([N], [1, N]).
inline bool per_channel_shape(const Tensor& t, int64_t count) {
  if (t.numel() == 1) return true;
  if (t.numel() != count) return false;
  return std::count_if(t.shape().begin(), t.shape().end(), [](int64_t d) { return d != 1; }) == 1;
}

// MatMul's A rows: the product of A's leading dims when A has rank >= 2 and K columns.
inline std::optional<int64_t> rows_of(const Tensor& a, int64_t k) {
  if (a.rank() < 2 || a.shape().back() != k) return std::nullopt;
  return a.numel() / k;
}

inline Shape matmul_out_shape(const Tensor& a, int64_t n) {
  Shape out = a.shape();
  out.back() = n;
  return out;
}

// Constant 2-D int8 B with a per-tensor or per-column parameter at `zp_index` (optional).
inline bool constant_matmul_weights(const KernelCreateContext& context, size_t b_index,
                                    std::optional<size_t> zp_index) {
  const Tensor* b = constant(context, b_index);
  if (!b || b->rank() != 2 || !is_int8(b->dtype()) || b->numel() == 0) return false;
  if (zp_index && present(context, *zp_index)) {
    const Tensor* zp = constant(context, *zp_index);
    if (!zp || zp->dtype() != b->dtype() || !per_channel_shape(*zp, b->shape()[1])) return false;
  }
  return true;
}

// An optimized kernel that hands the cases it does not cover to the node's reference kernel.
class Int8KernelBase : public OpKernel {
 protected:
  explicit Int8KernelBase(const KernelCreateContext& context)
      : reference_(context.reference_kernel()) {}
  void decline(KernelContext& context) const {
    if (!reference_) context.fail("no reference kernel for this case");
    reference_->compute(context);
  }
  std::unique_ptr<OpKernel> reference_;
};

// An int8 operand as oneDNN sees it: its bytes and whether they are s8.
struct Int8Data {
  const void* data;
  bool is_signed;
};
inline Int8Data int8_data(const Tensor& t) {
  return {t.raw_data(), t.dtype() == DType::kInt8};
}

// y [rows, N] = float((a - a_zp) x (B - b_zp)) * (scales ? scales[j] : scale) (+ bias[j]) for
// a constant u8 / s8 B [K, N] with one zero point or one per column: exact int32 products
// (kernels/dnnl_int8.cc's oneDNN matmul, every CPU), then float(acc) * scale, then + bias.
class Int8FloatProduct {
 public:
  virtual ~Int8FloatProduct() = default;
  virtual int64_t k() const = 0;
  virtual int64_t n() const = 0;
  virtual void run(Int8Data a, int64_t rows, int32_t a_zp, float scale, const float* scales,
                   const float* bias, float* y) const = 0;
};
std::unique_ptr<const Int8FloatProduct> make_int8_float_product(
    const Tensor& b, const std::vector<int32_t>& zero_points);

class OpRegistry;
// com.microsoft DynamicQuantizeLSTM, MatMulIntegerToFloat, DynamicQuantizeMatMul
// (kernels/int8_microsoft.cc); called by register_dnnl_int8_kernels.
void register_int8_microsoft_kernels(OpRegistry& registry);

}  // namespace onnxkit
