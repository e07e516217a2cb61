// Op family: elementwise binary arithmetic with multidirectional broadcasting.
#include <cmath>

#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

enum class Arithmetic { kAdd, kSub, kMul, kDiv };

template <Arithmetic kOp>
class ArithmeticKernel : public OpKernel {
 public:
  explicit ArithmeticKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (a.dtype() != b.dtype()) {
      context.fail("input types differ: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
    }
    Tensor& out = context.allocate_output(0, a.dtype(), broadcast_shapes(a.shape(), b.shape()));
    dispatch_numeric(a.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      broadcast_binary<T, T, T>(a, b, out, [&](T x, T y) -> T {
        if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
          return T(apply(static_cast<float>(x), static_cast<float>(y)));
        } else {
          if constexpr (std::is_integral_v<T> && kOp == Arithmetic::kDiv) {
            if (y == 0) context.fail("integer division by zero");
          }
          return static_cast<T>(apply(x, y));
        }
      });
    });
  }

 private:
  template <typename T>
  static T apply(T x, T y) {
    if constexpr (kOp == Arithmetic::kAdd) return x + y;
    if constexpr (kOp == Arithmetic::kSub) return x - y;
    if constexpr (kOp == Arithmetic::kMul) return x * y;
    if constexpr (kOp == Arithmetic::kDiv) return x / y;
  }
};

}  // namespace

void register_elementwise_binary_ops(OpRegistry& registry) {
  registry.add("Add", {7}, kernel_factory<ArithmeticKernel<Arithmetic::kAdd>>());
  registry.add("Sub", {7}, kernel_factory<ArithmeticKernel<Arithmetic::kSub>>());
  registry.add("Mul", {7}, kernel_factory<ArithmeticKernel<Arithmetic::kMul>>());
  registry.add("Div", {7}, kernel_factory<ArithmeticKernel<Arithmetic::kDiv>>());
}

}  // namespace onnxkit
