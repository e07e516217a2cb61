// com.microsoft's int8 ops with float outputs on the int8 products of kernels/dnnl_int8.cc:
// MatMulIntegerToFloat and DynamicQuantizeMatMul (ops/quantization_microsoft.cc), and
// DynamicQuantizeLSTM (ops/recurrent.h), whose recurrent steps run on Int8Gemv.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "ir/domain.h"
#include "kernels/int8_gemv.h"
#include "kernels/int8_kernel_util.h"
#include "kernels/integer_epilogue.h"
#include "kernels/quantize_simd.h"
#include "kernels/vector_math.h"
#include "ops/recurrent.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// float -> uint8 as DynamicQuantizeLinear (and ORT's GetQuantizationParameter): the range
// holds 0, scale (max - min) / 255 (1 for an all-zero input), zero point round(-min / scale).
struct DynamicU8 {
  float scale;
  int32_t zero_point;
};

DynamicU8 quantize_dynamic_u8(const float* x, int64_t n, std::vector<uint8_t>& q) {
  float lo = 0.0f, hi = 0.0f;
  quantize_simd::min_max_with_zero(x, n, lo, hi);
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const auto zero_point =
      static_cast<int32_t>(std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f)));
  q.resize(static_cast<size_t>(n));
  quantize_simd::quantize_u8(x, n, scale, zero_point, q.data());
  return {scale, zero_point};
}

// ---------------------------------------------------------------------------------------
// com.microsoft MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zp, b_zp, bias) and
// DynamicQuantizeMatMul (A float, B, b_scale, b_zp, bias), ops/quantization_microsoft.cc:
// Int8FloatProduct on B, with y = float(acc) * (a_scale * b_scale[j]) + bias[j].
template <bool kDynamic>
class MsMatMulToFloatKernel : public Int8KernelBase {
  static constexpr size_t kBScale = kDynamic ? 2 : 3, kBZeroPoint = kDynamic ? 3 : 5,
                          kBias = kDynamic ? 4 : 6;

 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if (!constant_matmul_weights(context, 1, kBZeroPoint)) return nullptr;
    const int64_t n = constant(context, 1)->shape()[1];
    const Tensor* scale = constant(context, kBScale);
    if (!scale || scale->dtype() != DType::kFloat || !per_channel_shape(*scale, n)) return nullptr;
    if (present(context, kBias)) {
      const Tensor* bias = constant(context, kBias);
      if (!bias || bias->dtype() != DType::kFloat || bias->shape() != Shape{n}) return nullptr;
    }
    return std::make_unique<MsMatMulToFloatKernel>(context);
  }

  explicit MsMatMulToFloatKernel(const KernelCreateContext& context)
      : Int8KernelBase(context),
        matmul_(make_int8_float_product(*constant(context, 1),
                                        present(context, kBZeroPoint)
                                            ? int8_values(*constant(context, kBZeroPoint))
                                            : std::vector<int32_t>{0})),
        b_scales_(float_values(*constant(context, kBScale))),
        bias_(present(context, kBias) ? float_values(*constant(context, kBias))
                                      : std::vector<float>{}) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const auto rows = rows_of(a, matmul_->k());
    if (!rows) return decline(context);
    thread_local std::vector<uint8_t> quantized;
    Int8Data a_data{};
    float a_scale = 1.0f;
    int32_t a_zp = 0;
    if constexpr (kDynamic) {
      if (a.dtype() != DType::kFloat) return decline(context);
      const DynamicU8 q = quantize_dynamic_u8(a.data<float>(), a.numel(), quantized);
      a_data = {quantized.data(), false};
      a_scale = q.scale;
      a_zp = q.zero_point;
    } else {
      const Tensor* zp = context.has_input(4) ? &context.input(4) : nullptr;
      const Tensor& scale = context.input(2);
      if (!is_int8(a.dtype()) || scale.dtype() != DType::kFloat || scale.numel() != 1 ||
          (zp && (zp->numel() != 1 || zp->dtype() != a.dtype()))) {
        return decline(context);
      }
      a_data = int8_data(a);
      a_scale = scale.data<float>()[0];
      a_zp = zp ? int8_scalar(*zp) : 0;
    }
    const int64_t n = matmul_->n();
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, matmul_out_shape(a, n));
    if (out.numel() == 0) return;
    thread_local std::vector<float> multipliers;
    multipliers.resize(b_scales_.size());
    for (size_t j = 0; j < b_scales_.size(); ++j) multipliers[j] = a_scale * b_scales_[j];
    const float* scales = multipliers.size() == 1 ? nullptr : multipliers.data();
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    float* y = out.mutable_data<float>();
    matmul_->run(a_data, *rows, a_zp, multipliers[0], scales, bias, y);
  }

 private:
  std::unique_ptr<const Int8FloatProduct> matmul_;
  std::vector<float> b_scales_;
  std::vector<float> bias_;
};

// ---------------------------------------------------------------------------------------
// com.microsoft DynamicQuantizeLSTM (ops/recurrent.h): the reference kernel's LSTM cell, its
// weight products on Int8FloatProduct (one per direction of W and of R), or for the few rows of a
// recurrent step on Int8Gemv (VNNI, without oneDNN's cost per call), the activations
// quantized by the SIMD loops of DynamicQuantizeLinear.

class Int8LstmProducts final : public RecurrentProducts {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    const Tensor* w = constant(context, 1);
    const Tensor* r = constant(context, 2);
    std::array<const Tensor*, 4> params{};
    for (size_t i = 0; i < params.size(); ++i) params[i] = constant(context, kLstmWScale + i);
    if (!w || !r || std::ranges::find(params, nullptr) != params.end() || w->rank() != 3 ||
        r->rank() != 3 || !context.has_attribute("hidden_size")) {
      return nullptr;
    }
    const int64_t hidden = context.attr_int("hidden_size");
    const int64_t directions =
        context.attr_string("direction", "forward") == "bidirectional" ? 2 : 1;
    // Checked here (naming the node) as the reference kernel checks them at run time.
    LstmWeightParams w_params = read_lstm_weight_params(context.node(), *w, *params[0], *params[1],
                                                        directions, w->shape()[1], hidden, "W");
    LstmWeightParams r_params = read_lstm_weight_params(context.node(), *r, *params[2], *params[3],
                                                        directions, hidden, hidden, "R");
    auto products = std::make_shared<Int8LstmProducts>(*w, std::move(w_params), *r,
                                                       std::move(r_params), directions);
    return make_dynamic_quantize_lstm_kernel(context, std::move(products));
  }

  Int8LstmProducts(const Tensor& w, LstmWeightParams w_params, const Tensor& r,
                   LstmWeightParams r_params, int64_t directions)
      : params_{std::move(w_params), std::move(r_params)} {
    for (int64_t d = 0; d < directions; ++d) {
      for (size_t which = 0; which < 2; ++which) {
        const Tensor& t = which == 0 ? w : r;
        const int64_t k = t.shape()[1], n = t.shape()[2];
        const Tensor slice = Tensor::external(
            t.dtype(), {k, n}, static_cast<const uint8_t*>(t.raw_data()) + d * k * n);
        const int32_t zero_point = params_[which].zero_points[d];
        products_[which].push_back(make_int8_float_product(slice, {zero_point}));
        if (t.dtype() == DType::kInt8 && Int8Gemv::available()) {
          gemvs_[which].push_back(std::make_unique<Int8Gemv>(slice.data<int8_t>(), k, n));
        }
      }
    }
  }

  void multiply(Weights weights, int64_t direction, const float* a, int64_t rows,
                float* y) const override {
    const size_t which = weights == Weights::kInput ? 0 : 1;
    const Int8FloatProduct& product = *products_[which][static_cast<size_t>(direction)];
    const LstmWeightParams& p = params_[which];
    const int64_t k = product.k(), n = product.n();
    // DynamicQuantizeLinear's scale and zero point over all of a, as ORT's LSTM at one thread
    // (with more, ORT quantizes each thread's block of batch rows on its own).
    thread_local std::vector<uint8_t> qa;
    thread_local std::vector<float> multipliers;
    const DynamicU8 q = quantize_dynamic_u8(a, rows * k, qa);
    const float a_scale = q.scale;
    const int32_t a_zp = q.zero_point;
    multipliers.resize(static_cast<size_t>(p.count));
    for (int64_t j = 0; j < p.count; ++j)
      multipliers[j] = a_scale * p.scales[static_cast<size_t>(direction * p.count + j)];
    const float scale = multipliers[0];
    const float* scales = p.count == 1 ? nullptr : multipliers.data();
    if (rows <= kGemvRows && !gemvs_[which].empty()) {
      const Int8Gemv& gemv = *gemvs_[which][static_cast<size_t>(direction)];
      const int32_t w_zp = p.zero_points[static_cast<size_t>(direction)];
      thread_local std::vector<int32_t> acc, w_zps;
      acc.resize(static_cast<size_t>(rows * n));
      w_zps.assign(static_cast<size_t>(n), w_zp);
      gemv.run(qa.data(), rows, acc.data());
      for (int64_t row = 0; row < rows; ++row) {
        int32_t* acc_row = acc.data() + row * n;
        int32_t a_sum = 0;  // sum over k of (a - a_zp), for W's zero point
        if (w_zp != 0) {
          for (int64_t i = 0; i < k; ++i) a_sum += qa[row * k + i];
          a_sum -= static_cast<int32_t>(k) * a_zp;
        }
        integer_epilogue::correct_products(acc_row, nullptr, n, a_zp, gemv.column_sums().data(),
                                           w_zp != 0 ? w_zps.data() : nullptr, a_sum, acc_row);
        integer_epilogue::scale_to_float(acc_row, n, scale, scales, nullptr, y + row * n);
      }
      return;
    }
    const Int8Data data{qa.data(), false};
    product.run(data, rows, a_zp, scale, scales, nullptr, y);
  }

  void activate(const ActivationFunction& f, float* x, int64_t n) const override {
    apply_activation_in_place(f, x, n);
  }

 private:
  // Rows up to which Int8Gemv beats oneDNN (a recurrent step's batch; an input projection
  // has seq * batch rows).
  static constexpr int64_t kGemvRows = 8;
  std::array<LstmWeightParams, 2> params_;                       // W, R
  std::array<std::vector<std::unique_ptr<Int8Gemv>>, 2> gemvs_;  // per direction, s8 on VNNI
  std::array<std::vector<std::unique_ptr<const Int8FloatProduct>>, 2> products_;  // per direction
};

}  // namespace

void register_int8_microsoft_kernels(OpRegistry& registry) {
  const std::string ms(kMicrosoftDomain);
  registry.add_optimized(ms, "DynamicQuantizeLSTM", 1, Int8LstmProducts::create);
  registry.add_optimized(ms, "MatMulIntegerToFloat", 1, MsMatMulToFloatKernel<false>::create);
  registry.add_optimized(ms, "DynamicQuantizeMatMul", 1, MsMatMulToFloatKernel<true>::create);
}

}  // namespace onnxkit
