// Op family: Softmax, LogSoftmax, Hardmax.
//
// Before opset 13 the input is coerced to 2-D at `axis` (default 1) and the op runs over
// each row of that matrix; from opset 13 on it runs along the single dim `axis`
// (default -1). Both are an (outer, axis, inner) walk: the old form is inner = 1 with
// axis = the product of the trailing dims.
#include <cmath>
#include <limits>

#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

// The largest axis the 2-D coercion (before opset 13) takes: versions 1 to 10 accept
// axis == rank (every dim goes to the rows); version 11 documents [-r, r - 1], and libonnx
// refuses more.
int64_t last_coerced_axis(int64_t opset, int64_t rank) {
  return opset < 11 ? rank : rank - 1;
}

template <SoftmaxKind kKind>
class SoftmaxKernel : public OpKernel {
 public:
  explicit SoftmaxKernel(const KernelCreateContext& context)
      : opset_(context.opset()),
        coerce_2d_(opset_ < 13),
        axis_(context.attr_int("axis", coerce_2d_ ? 1 : -1)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    const Shape& shape = x.shape();
    int64_t outer = 1, dim = 1, inner = 1;
    if (coerce_2d_) {
      const int64_t last = last_coerced_axis(opset_, rank);
      const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
      if (axis < 0 || axis > last) {
        context.fail("axis {} is out of range for rank {} (valid: [{}, {}])", axis_, rank, -rank,
                     last);
      }
      for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
      for (int64_t i = axis; i < rank; ++i) dim *= shape[i];
    } else {
      if (rank == 0) context.fail("input is a scalar; it needs rank >= 1");
      const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
      for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
      dim = shape[axis];
      for (int64_t i = axis + 1; i < rank; ++i) inner *= shape[i];
    }
    Tensor& y = context.allocate_output(0, x.dtype(), shape);
    if (x.numel() == 0) return;
    dispatch_float(x.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Float16/BFloat16/float compute in float, double in double; sums in double.
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T* row = px + o * dim * inner + i;
          T* out = py + o * dim * inner + i;
          run_row<T, C>(row, out, dim, inner);
        }
      }
    });
  }

 private:
  // One softmax line of `dim` elements `stride` apart.
  template <typename T, typename C>
  static void run_row(const T* x, T* y, int64_t dim, int64_t stride) {
    C max = static_cast<C>(x[0]);
    int64_t arg = 0;
    for (int64_t k = 1; k < dim; ++k) {
      const C v = static_cast<C>(x[k * stride]);
      if (v > max) max = v, arg = k;
    }
    if constexpr (kKind == SoftmaxKind::kHardmax) {
      for (int64_t k = 0; k < dim; ++k) y[k * stride] = static_cast<T>(k == arg ? C(1) : C(0));
    } else {
      // Subtracting the maximum keeps exp() from overflowing.
      double sum = 0;
      for (int64_t k = 0; k < dim; ++k) sum += std::exp(static_cast<C>(x[k * stride]) - max);
      if constexpr (kKind == SoftmaxKind::kSoftmax) {
        const C inv = static_cast<C>(1.0 / sum);
        for (int64_t k = 0; k < dim; ++k) {
          y[k * stride] = static_cast<T>(std::exp(static_cast<C>(x[k * stride]) - max) * inv);
        }
      } else {
        const C log_sum = static_cast<C>(std::log(sum));
        for (int64_t k = 0; k < dim; ++k) {
          y[k * stride] = static_cast<T>(static_cast<C>(x[k * stride]) - max - log_sum);
        }
      }
    }
  }

  int64_t opset_;
  bool coerce_2d_;
  int64_t axis_;
};

// The input's type, once `axis` is checked against its rank as the kernel checks it: libonnx
// refuses a bad axis and then hands the nodes after it an input without a type, which its
// data propagation dereferences (a Shape of the output), so the rule refuses it first.
void infer_softmax(TypeInferenceContext& context) {
  infer_same_as_input(context);
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) return;
  const bool coerce_2d = context.opset() < 13;
  const int64_t axis = attribute_reader(context).attr_int("axis", coerce_2d ? 1 : -1);
  const auto rank = static_cast<int64_t>(dims->size());
  if (coerce_2d) {
    const int64_t last = last_coerced_axis(context.opset(), rank);
    if (axis < -rank || axis > last) {
      fail("axis {} is out of range for rank {} (valid: [{}, {}])", axis, rank, -rank, last);
    }
    return;
  }
  if (rank == 0) fail("input is a scalar; it needs rank >= 1");
  rule_axis(axis, dims->size());
}

}  // namespace

void register_softmax_ops(OpRegistry& registry) {
  // Before opset 13 these flattened the axes from `axis` on into one; from 13 on, `axis`
  // names one axis that follows the data.
  constexpr OpTraits kOneAxis{.axes = AxisRule::kSingleAxis};
  const auto add = [&](const char* op_type, const KernelFactory& factory) {
    registry.add(op_type, {1, 11}, factory);
    registry.add("", op_type, 13, OpDefinition(factory, kOneAxis));
  };
  add("Softmax", kernel_factory<SoftmaxKernel<SoftmaxKind::kSoftmax>>());
  add("LogSoftmax", kernel_factory<SoftmaxKernel<SoftmaxKind::kLogSoftmax>>());
  add("Hardmax", kernel_factory<SoftmaxKernel<SoftmaxKind::kHardmax>>());

  // Type inference, every version.
  // Softmax, LogSoftmax and Hardmax keep their input's type at every version.
  registry.set_type_rule("", "Softmax", infer_softmax);
  registry.set_type_rule("", "LogSoftmax", infer_softmax);
  registry.set_type_rule("", "Hardmax", infer_softmax);
}

}  // namespace onnxkit
