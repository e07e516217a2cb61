// com.microsoft DynamicQuantizeLSTM, the LSTM that ONNX Runtime's quantize_dynamic writes: the
// ONNX LSTM's cell (ops/recurrent.cc) with int8 weights. Only its two weight products differ
// from LSTM's, so optimized kernels (kernels/int8_microsoft.cc, and kernels/fast_recurrent.cc
// for the float LSTM) hand the same cell faster products and activations instead of a
// second LSTM.
//
// Inputs (ORT's contrib op docs): X, W, R, B, sequence_lens, initial_h, initial_c, P as LSTM's,
// except W [directions, input, 4 * hidden] and R [directions, hidden, 4 * hidden] are u8 / s8
// and transposed against LSTM's; then W_scale, W_zero_point, R_scale, R_zero_point, each
// [directions] (per tensor) or [directions, 4 * hidden] (per column). As in ORT, one zero point
// serves a direction: the first of its values (per column, s8 ones must all be 0, u8 ones equal).
#pragma once

#include <cstdint>
#include <memory>

#include "ops/fused_activation.h"
#include "ops/kernel.h"

namespace onnxkit {

// The weight products of a recurrent direction and the cell's activations. DynamicQuantizeLSTM's
// compute each product as ONNX Runtime's CPU kernel does: a [rows, k] quantized to uint8
// over all of it (DynamicQuantizeLinear's scale and zero point), exact int32 products with
// the weights minus their zero point, then y[row, j] = float(acc) * (a_scale * w_scale[j]).
// With products, an LSTM cell adds the biases after the recurrent product (ORT's order).
class RecurrentProducts {
 public:
  enum class Weights { kInput, kRecurrent };  // W, R
  virtual ~RecurrentProducts() = default;
  // y [rows, 4 * hidden] = a [rows, k] x (the weights of `direction`), k being input or hidden.
  virtual void multiply(Weights weights, int64_t direction, const float* a, int64_t rows,
                        float* y) const = 0;
  // y [rows, count] (row stride ldy) = a [rows, k] x the weights' output columns [first,
  // first + count) of `direction`: a GRU without linear_before_reset multiplies H by R's z and
  // r blocks, then the reset state by its h block alone. False where the products have no
  // such form (the cell then runs on the reference products).
  virtual bool multiply_columns(Weights /*weights*/, int64_t /*direction*/, const float* /*a*/,
                                int64_t /*rows*/, int64_t /*first*/, int64_t /*count*/,
                                float* /*y*/, int64_t /*ldy*/) const {
    return false;
  }
  // x = f(x) for the cell's gates and state: an optimized kernel brings its SIMD loops
  // (within a few ulp of these).
  virtual void activate(const ActivationFunction& f, float* x, int64_t n) const { f.apply(x, n); }
};

// Node input indices of DynamicQuantizeLSTM's weight parameters.
inline constexpr size_t kLstmWScale = 8, kLstmWZeroPoint = 9, kLstmRScale = 10,
                        kLstmRZeroPoint = 11;

// The scale and zero point of one direction of W or R, checked as ORT checks them.
struct LstmWeightParams {
  std::vector<float> scales;  // 1 or 4 * hidden, per direction: [direction * count + j]
  int64_t count = 1;
  std::vector<int32_t> zero_points;  // one per direction
};

// W or R (`weights`, a u8 / s8 [directions, k, 4 * hidden] tensor) with its scale and zero
// point, checked (naming the node through `fail`): the throws of fail_at as every kernel's.
LstmWeightParams read_lstm_weight_params(const Node& node, const Tensor& weights,
                                         const Tensor& scale, const Tensor& zero_point,
                                         int64_t directions, int64_t k, int64_t hidden,
                                         std::string_view name);

// The DynamicQuantizeLSTM kernel on `products` (built for the node's constant weights), or on
// the reference products (from the inputs at each run) when `products` is null.
std::unique_ptr<OpKernel> make_dynamic_quantize_lstm_kernel(
    const KernelCreateContext& context, std::shared_ptr<const RecurrentProducts> products);

// The ONNX RNN / GRU / LSTM kernel (by the node's op type) with float `products` (of the
// node's constant W [directions, gates * hidden, input] and R, ONNX's layout): used for float
// inputs (a GRU without linear_before_reset: where they have multiply_columns), the
// reference cell for other types.
std::unique_ptr<OpKernel> make_recurrent_kernel(const KernelCreateContext& context,
                                                std::shared_ptr<const RecurrentProducts> products);

}  // namespace onnxkit
