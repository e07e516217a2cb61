// Op family: fused_linear — the reference kernels of com.onnxkit's FusedConv and
// FusedMatMul (contract: ops/fused_ops.h). FusedConv runs the reference Conv kernel on the
// same node, then adds Z and applies the activation; FusedMatMul runs the shared GEMM with
// the transposes and alpha folded in, then adds Bias and applies the activation.
// Float16 / BFloat16 compute in float, float in float, double in double.
#include <array>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/gemm.h"
#include "ops/conv_attributes.h"
#include "ops/fused_activation.h"
#include "ops/fused_ops.h"
#include "ops/matmul_shape.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// ---------------------------------------------------------------------------------------
// FusedConv(X, W, B?, Z?) -> act(Conv(X, W, B) + Z)

class FusedConvKernel : public OpKernel {
 public:
  explicit FusedConvKernel(const KernelCreateContext& context)
      : conv_(reference_conv(context)), activation_(parse_fused_activation(context)) {}

  void compute(KernelContext& context) const override {
    // Conv's own kernel reads X, W, B and Conv's attributes of this node; its errors name
    // this node too.
    const std::array<const RuntimeValue*, 3> conv_inputs{
        &context.input_value(0), &context.input_value(1), &context.input_value(2)};
    RuntimeValue conv_output;
    const std::array<RuntimeValue*, 1> conv_outputs{&conv_output};
    KernelContext conv_context(context.node(), conv_inputs, conv_outputs, nullptr, nullptr);
    conv_->compute(conv_context);
    Tensor y = std::move(conv_output.mutable_tensor());

    const Tensor* z = context.has_input(3) ? &context.input(3) : nullptr;
    if (z && z->dtype() != y.dtype()) {
      context.fail("Z has type {} but the convolution gives {}", dtype_name(z->dtype()),
                   dtype_name(y.dtype()));
    }
    if (z && z->shape() != y.shape()) {
      context.fail("Z has shape {} but the convolution gives {} (Z must have Y's shape)",
                   shape_to_string(z->shape()), shape_to_string(y.shape()));
    }
    if (z || !activation_.none()) {
      dispatch_float(y.dtype(), context.node().describe(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = ComputeType<T>;
        T* py = y.mutable_data<T>();
        const T* pz = z ? z->data<T>() : nullptr;
        const int64_t n = y.numel();
        for (int64_t i = 0; i < n; ++i) {
          C v = static_cast<C>(py[i]);
          if (pz) v += static_cast<C>(pz[i]);
          py[i] = convert_element<T>(activation_.apply(v));
        }
      });
    }
    context.set_output(0, std::move(y));
  }

 private:
  static std::unique_ptr<OpKernel> reference_conv(const KernelCreateContext& context) {
    // Conv-11 semantics (the same as Conv-1 apart from the optional kernel_shape).
    const OpRegistration* conv = context.registry().find("", "Conv", 11);
    if (!conv) context.fail("internal: no reference Conv kernel");
    return conv->definition.reference(context);
  }

  std::unique_ptr<OpKernel> conv_;
  ActivationFunction activation_;
};

// ---------------------------------------------------------------------------------------
// FusedMatMul(A, B, Bias?) -> act(alpha * op(A) @ op(B) + Bias)

class FusedMatMulKernel : public OpKernel {
 public:
  explicit FusedMatMulKernel(const KernelCreateContext& context)
      : trans_a_(context.attr_int("trans_a", 0) != 0),
        trans_b_(context.attr_int("trans_b", 0) != 0),
        alpha_(context.attr_float("alpha", 1.0f)),
        activation_(parse_fused_activation(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (a.dtype() != b.dtype()) {
      context.fail("input types differ: {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
    }
    const MatMulShape s = matmul_shape(context.node(), a.shape(), b.shape(), trans_a_, trans_b_);
    const Shape& out_shape = s.out;
    const bool trans_a = s.trans_a, trans_b = s.trans_b;
    const int64_t m = s.m, k = s.k, n = s.n;

    const Tensor* bias = context.has_input(2) ? &context.input(2) : nullptr;
    const int64_t last = out_shape.empty() ? 1 : out_shape.back();
    if (bias && out_shape.empty()) context.fail("a Bias needs Y of rank >= 1 (A and B are 1-D)");
    if (bias && bias->dtype() != a.dtype()) {
      context.fail("Bias has type {} but A has type {}", dtype_name(bias->dtype()),
                   dtype_name(a.dtype()));
    }
    if (bias && (bias->rank() != 1 || bias->shape()[0] != last)) {
      context.fail("Bias must have shape [{}] (the last dim of Y, shape {}), got {}", last,
                   shape_to_string(out_shape), shape_to_string(bias->shape()));
    }
    Tensor& out = context.allocate_output(0, a.dtype(), out_shape);
    if (out.numel() == 0) return;

    dispatch_float(a.dtype(), context.node().describe(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      std::vector<C> a_store, b_store, bias_store, result;
      const C* pa = elements_as<T, C>(a, a_store);
      const C* pb = elements_as<T, C>(b, b_store);
      C* po = nullptr;
      if constexpr (std::is_same_v<T, C>) {
        po = out.mutable_data<T>();
      } else {
        result.resize(static_cast<size_t>(out.numel()));
        po = result.data();
      }
      // Leading dimensions of A and B as stored.
      const int64_t lda = trans_a ? m : k;
      const int64_t ldb = trans_b ? k : n;
      const C alpha = static_cast<C>(alpha_);
      if (shape_numel(s.b_batch) == 1 && !trans_a) {
        // B is one matrix and A's rows are contiguous: one tall product.
        gemm<C>(false, trans_b, shape_numel(s.a_batch) * m, n, k, alpha, pa, k, pb, ldb, C(0), po,
                n);
      } else {
        s.for_each_matrix([&](int64_t index, int64_t a_matrix, int64_t b_matrix) {
          gemm<C>(trans_a, trans_b, m, n, k, alpha, pa + a_matrix * m * k, lda,
                  pb + b_matrix * k * n, ldb, C(0), po + index * m * n, n);
        });
      }
      const C* pbias = bias ? elements_as<T, C>(*bias, bias_store) : nullptr;
      const int64_t total = out.numel();
      if (pbias || !activation_.none()) {
        for (int64_t i = 0; i < total; i += last) {
          for (int64_t j = 0; j < last; ++j) {
            C v = po[i + j];
            if (pbias) v += pbias[j];
            po[i + j] = activation_.apply(v);
          }
        }
      }
      if constexpr (!std::is_same_v<T, C>) {
        T* dst = out.mutable_data<T>();
        for (int64_t i = 0; i < total; ++i) dst[i] = convert_element<T>(po[i]);
      }
    });
  }

 private:
  bool trans_a_;
  bool trans_b_;
  float alpha_;
  ActivationFunction activation_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// FusedConv: Conv's output.
void infer_fused_conv(TypeInferenceContext& context) {
  infer_conv_output(context, 0, 1, input_dtype(context, 0));
}

// FusedMatMul: MatMul's output with trans_a / trans_b.
void infer_fused_matmul(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* a = input_dims(context, 0);
  const std::vector<Dim>* b = input_dims(context, 1);
  if (!a || !b) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  context.set_output(0,
                     tensor_type(dtype, matmul_dims(*a, *b, attributes.attr_int("trans_a", 0) != 0,
                                                    attributes.attr_int("trans_b", 0) != 0)));
}

}  // namespace

void register_fused_linear_ops(OpRegistry& registry) {
  const std::string domain(kOnnxkitDomain);
  registry.add(domain, "FusedConv", 1, kernel_factory<FusedConvKernel>());
  registry.add(domain, "FusedMatMul", 1, kernel_factory<FusedMatMulKernel>());

  // Type inference, every version.
  registry.set_type_rule(domain, "FusedConv", infer_fused_conv);
  registry.set_type_rule(domain, "FusedMatMul", infer_fused_matmul);
}

}  // namespace onnxkit
