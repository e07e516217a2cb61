// The float RNN / GRU / LSTM's optimized kernel: ops/recurrent.cc's cell with its two weight
// products on oneDNN's sgemm and its gates on vector_math's SIMD loops (the reference cell's
// scalar libm sigmoid / tanh and portable GEMM were most of a small LSTM's time: Silero VAD's
// LSTM steps run one row at a time). Constant W and R only; other types run the reference
// cell.
#include <oneapi/dnnl/dnnl.h>

#include <memory>
#include <optional>
#include <vector>

#include "kernels/int8_kernel_util.h"
#include "kernels/vector_math.h"
#include "ops/recurrent.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

class FloatRecurrentProducts final : public RecurrentProducts {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    const Tensor* w = constant(context, 1);
    const Tensor* r = constant(context, 2);
    const std::string& op = context.node().op_type();
    const int64_t gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    if (!w || !r || w->dtype() != DType::kFloat || r->dtype() != DType::kFloat || w->rank() != 3 ||
        r->rank() != 3 || w->shape()[0] != r->shape()[0] || w->shape()[1] != r->shape()[1] ||
        r->shape()[1] != gates * r->shape()[2]) {
      return nullptr;
    }
    return make_recurrent_kernel(context, std::make_shared<FloatRecurrentProducts>(*w, *r));
  }

  // w [directions, gates * hidden, input], r [directions, gates * hidden, hidden] (ONNX's
  // layout).
  FloatRecurrentProducts(const Tensor& w, const Tensor& r)
      : w_(float_values(w)),
        r_(float_values(r)),
        n_(w.shape()[1]),
        input_(w.shape()[2]),
        hidden_(r.shape()[2]) {}

  void multiply(Weights weights, int64_t direction, const float* a, int64_t rows,
                float* y) const override {
    const bool input = weights == Weights::kInput;
    const int64_t k = input ? input_ : hidden_;
    const float* b = (input ? w_ : r_).data() + direction * n_ * k;
    // y [rows, n] = a [rows, k] x b^T, b [n, k] row-major.
    dnnl_sgemm('N', 'T', rows, n_, k, 1.0f, a, k, b, k, 0.0f, y, n_);
  }

  bool multiply_columns(Weights weights, int64_t direction, const float* a, int64_t rows,
                        int64_t first, int64_t count, float* y, int64_t ldy) const override {
    const bool input = weights == Weights::kInput;
    const int64_t k = input ? input_ : hidden_;
    const float* b = (input ? w_ : r_).data() + (direction * n_ + first) * k;
    dnnl_sgemm('N', 'T', rows, count, k, 1.0f, a, k, b, k, 0.0f, y, ldy);
    return true;
  }

  void activate(const ActivationFunction& f, float* x, int64_t n) const override {
    apply_activation_in_place(f, x, n);
  }

 private:
  std::vector<float> w_, r_;
  int64_t n_, input_, hidden_;
};

}  // namespace

void register_fast_recurrent_kernels(OpRegistry& registry) {
  for (int64_t version : {1, 7, 14, 22}) {
    registry.add_optimized("", "RNN", version, FloatRecurrentProducts::create);
    registry.add_optimized("", "LSTM", version, FloatRecurrentProducts::create);
  }
  for (int64_t version : {1, 3, 7, 14, 22}) {
    registry.add_optimized("", "GRU", version, FloatRecurrentProducts::create);
  }
}

}  // namespace onnxkit
