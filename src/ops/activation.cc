// Op family: activations (Relu, LeakyRelu, PRelu, Elu, Selu, Sigmoid, Clip, Shrink, ...).
//
// Float16/BFloat16 compute in float; float in float and double in double (as the
// reference implementation does). Outputs always have the shape of X.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/domain.h"
#include "ops/float_to_integer.h"
#include "ops/fused_activation.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// y[i] = f(x[i]) computed in ComputeType<T>.
template <typename T, typename F>
void map_elements(const Tensor& x, Tensor& y, F f) {
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    py[i] = convert_element<T>(f(static_cast<ComputeType<T>>(px[i])));
  }
}

using Act = ActivationKind;

// The activations of one element with up to two float attributes (ops/fused_activation.h).
template <Act kOp>
class ActivationKernel : public OpKernel {
 public:
  explicit ActivationKernel(const KernelCreateContext& context)
      : activation_(activation_op(context, kOp)) {
    if (kOp == Act::kSelu && context.opset() < 6) {
      // Selu-1's defaults are the constants rounded to five digits.
      activation_.alpha = context.attr_float("alpha", 1.6732f);
      activation_.beta = context.attr_float("gamma", 1.0507f);
    }
    if (kOp == Act::kCelu && activation_.alpha == 0.0f) {
      context.fail("alpha must not be 0 (Celu divides by it)");
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const DType dtype = x.dtype();
    // Relu takes signed integers too (opset 14); the rest are float-only.
    if (dtype_is_integer(dtype) && !(kOp == Act::kRelu && dtype_is_signed(dtype))) {
      context.fail("input type {} is not supported (needs a {} type)", dtype_name(dtype),
                   kOp == Act::kRelu ? "floating-point or signed integer" : "floating-point");
    }
    Tensor& y = context.allocate_output(0, dtype, x.shape());
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const C alpha = static_cast<C>(activation_.alpha);
      const C beta = static_cast<C>(activation_.beta);
      map_elements<T>(x, y, [alpha, beta](C v) { return activate<kOp>(v, alpha, beta); });
    };
    if constexpr (kOp == Act::kRelu) {
      dispatch_numeric(dtype, "Relu", run);
    } else {
      dispatch_float(dtype, context.node().op_type(), run);
    }
  }

 private:
  ActivationFunction activation_;
};

// PRelu: slope broadcasts unidirectionally to X (opset 7+). Opset 6 models (Caffe2,
// PyTorch exports) also give a 1-D per-channel slope that applies along axis 1.
class PReluKernel : public OpKernel {
 public:
  explicit PReluKernel(const KernelCreateContext& context) : legacy_(context.opset() < 7) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& slope = context.input(1);
    if (slope.dtype() != x.dtype()) {
      context.fail("slope type {} differs from X type {}", dtype_name(slope.dtype()),
                   dtype_name(x.dtype()));
    }
    const Shape slope_shape = effective_slope_shape(context, x.shape(), slope.shape());
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "PRelu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const T* px = x.data<T>();
      const T* ps = slope.data<T>();
      T* py = y.mutable_data<T>();
      const auto prelu = [](C v, C s) { return v < C(0) ? s * v : v; };
      const int64_t n = x.numel();
      if (slope.numel() == 1) {
        const C s = static_cast<C>(ps[0]);
        for (int64_t i = 0; i < n; ++i) py[i] = convert_element<T>(prelu(static_cast<C>(px[i]), s));
      } else if (slope_shape == x.shape()) {
        for (int64_t i = 0; i < n; ++i) {
          py[i] = convert_element<T>(prelu(static_cast<C>(px[i]), static_cast<C>(ps[i])));
        }
      } else {
        const std::vector<std::vector<int64_t>> strides{broadcast_strides(slope_shape, x.shape())};
        for_each_broadcast(x.shape(), strides, [&](int64_t i, const int64_t* offsets) {
          py[i] = convert_element<T>(prelu(static_cast<C>(px[i]), static_cast<C>(ps[offsets[0]])));
        });
      }
    });
  }

 private:
  // The shape the slope is read with; fails when it cannot broadcast to X.
  Shape effective_slope_shape(const KernelContext& context, const Shape& x_shape,
                              const Shape& slope_shape) const {
    if (legacy_ && slope_shape.size() == 1 && x_shape.size() >= 2 && slope_shape[0] == x_shape[1] &&
        slope_shape[0] != 1) {
      Shape channel(x_shape.size() - 1, 1);
      channel[0] = slope_shape[0];
      return channel;
    }
    if (!broadcasts_to(slope_shape, x_shape)) {
      context.fail("slope shape {} does not broadcast to X shape {}", shape_to_string(slope_shape),
                   shape_to_string(x_shape));
    }
    return slope_shape;
  }

  bool legacy_;
};

// Clip: bounds are attributes before opset 11 and optional scalar inputs from 11 on.
class ClipKernel : public OpKernel {
 public:
  explicit ClipKernel(const KernelCreateContext& context)
      : bounds_are_inputs_(context.opset() >= 11) {
    if (!bounds_are_inputs_) {
      min_ = context.attr_float("min", std::numeric_limits<float>::lowest());
      max_ = context.attr_float("max", std::numeric_limits<float>::max());
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Clip", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      C lo = std::numeric_limits<C>::lowest();
      C hi = std::numeric_limits<C>::max();
      if (!bounds_are_inputs_) {
        if constexpr (!std::is_integral_v<C>) {
          lo = static_cast<C>(min_);
          hi = static_cast<C>(max_);
        }
      } else {
        if (context.has_input(1)) lo = bound<T>(context, 1, "min");
        if (context.has_input(2)) hi = bound<T>(context, 2, "max");
      }
      // max(x, lo) then min(., hi): NaN stays NaN, and lo > hi gives hi everywhere.
      map_elements<T>(x, y, [lo, hi](C v) {
        const C t = v < lo ? lo : v;
        return t > hi ? hi : t;
      });
    });
  }

 private:
  template <typename T>
  static ComputeType<T> bound(const KernelContext& context, size_t index, const char* name) {
    const Tensor& x = context.input(0);
    const Tensor& b = context.input(index);
    if (b.dtype() != x.dtype()) {
      context.fail("{} type {} differs from input type {}", name, dtype_name(b.dtype()),
                   dtype_name(x.dtype()));
    }
    if (b.numel() != 1) {
      context.fail("{} must be a scalar, got shape {}", name, shape_to_string(b.shape()));
    }
    return static_cast<ComputeType<T>>(b.data<T>()[0]);
  }

  bool bounds_are_inputs_;
  float min_ = 0.0f;
  float max_ = 0.0f;
};

// Shrink: x < -lambd -> x + bias; x > lambd -> x - bias; else 0. Any numeric type.
class ShrinkKernel : public OpKernel {
 public:
  explicit ShrinkKernel(const KernelCreateContext& context)
      : bias_(context.attr_float("bias", 0.0f)), lambd_(context.attr_float("lambd", 0.5f)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Shrink", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      if constexpr (std::is_integral_v<T>) {
        // Integers: compare and add in double, converted back as Cast converts (a bias of
        // -3.4e38 leaves int64: defined, as Cast defines it).
        const double bias = bias_;
        const double lambd = lambd_;
        map_elements<T>(x, y, [bias, lambd](T v) {
          const double d = static_cast<double>(v);
          const double r = d < -lambd ? d + bias : (d > lambd ? d - bias : 0.0);
          return float_to_integer<T>(r);
        });
      } else {
        const C bias = static_cast<C>(bias_);
        const C lambd = static_cast<C>(lambd_);
        map_elements<T>(x, y, [bias, lambd](C v) {
          return v < -lambd ? v + bias : (v > lambd ? v - bias : C(0));
        });
      }
    });
  }

 private:
  float bias_;
  float lambd_;
};

// Gelu (opset 20): the exact form, or the tanh approximation when `approximate` is "tanh".
class GeluKernel : public OpKernel {
 public:
  explicit GeluKernel(const KernelCreateContext& context) {
    const std::string approximate = context.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      context.fail("approximate is '{}'; it needs 'none' or 'tanh'", approximate);
    }
    tanh_ = approximate == "tanh";
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_float(x.dtype(), "Gelu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      if (tanh_) {
        map_elements<T>(x, y, [](C v) { return activate<Act::kGeluTanh>(v, C(0), C(0)); });
      } else {
        map_elements<T>(x, y, [](C v) { return activate<Act::kGelu>(v, C(0), C(0)); });
      }
    });
  }

 private:
  bool tanh_ = false;
};

// Mish (18): x * tanh(softplus(x)); Swish (24): x * sigmoid(alpha * x).
template <bool kSwish>
class SmoothGateKernel : public OpKernel {
 public:
  explicit SmoothGateKernel(const KernelCreateContext& context)
      : alpha_(kSwish ? context.attr_float("alpha", 1.0f) : 1.0f) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_float(x.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const C alpha = static_cast<C>(alpha_);
      map_elements<T>(x, y, [alpha](C v) {
        if constexpr (kSwish) {
          return v * sigmoid(alpha * v);
        } else {
          return v * std::tanh(activate<Act::kSoftplus>(v, C(0), C(0)));
        }
      });
    });
  }

 private:
  float alpha_;
};

}  // namespace

void register_activation_ops(OpRegistry& registry) {
  // Since-version 6 dropped version 1's `consumed_inputs` (a legacy in-place hint the kernels
  // ignore) and gave Selu its exact defaults; later versions (13, 22 with bfloat16 and
  // float16 for some, Celu 28 the 16-bit floats and double) only widened the types, which
  // every registration accepts.
  registry.add("Relu", {1, 6, 13, 14}, kernel_factory<ActivationKernel<Act::kRelu>>(),
               kZeroKeepingElementwiseOp);
  registry.add("LeakyRelu", {1, 6, 16}, kernel_factory<ActivationKernel<Act::kLeakyRelu>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Elu", {1, 6, 22}, kernel_factory<ActivationKernel<Act::kElu>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Selu", {1, 6, 22}, kernel_factory<ActivationKernel<Act::kSelu>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Celu", {12, 28}, kernel_factory<ActivationKernel<Act::kCelu>>(),
               kZeroKeepingElementwiseOp);
  registry.add("ThresholdedRelu", {10, 22},
               kernel_factory<ActivationKernel<Act::kThresholdedRelu>>(),
               kZeroKeepingElementwiseOp);
  registry.add("HardSigmoid", {1, 6, 22}, kernel_factory<ActivationKernel<Act::kHardSigmoid>>(),
               kElementwiseOp);
  registry.add("HardSwish", {14, 22}, kernel_factory<ActivationKernel<Act::kHardSwish>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Sigmoid", {1, 6, 13}, kernel_factory<ActivationKernel<Act::kSigmoid>>(),
               kElementwiseOp);
  registry.add("Tanh", {1, 6, 13}, kernel_factory<ActivationKernel<Act::kTanh>>(),
               kZeroKeepingElementwiseOp);
  registry.add("Softplus", {1, 22}, kernel_factory<ActivationKernel<Act::kSoftplus>>(),
               kElementwiseOp);
  registry.add("Softsign", {1, 22}, kernel_factory<ActivationKernel<Act::kSoftsign>>(),
               kZeroKeepingElementwiseOp);
  // Opset 1 and 6 PRelu read a 1-D slope per channel; 7 made it unidirectional broadcasting; 9 and
  // 16 added types.
  registry.add("PRelu", {1, 6, 7, 9, 16}, kernel_factory<PReluKernel>(),
               kZeroKeepingBroadcastingOp);
  registry.add("Gelu", {20},
               OpDefinition(kernel_factory<GeluKernel>(), kZeroKeepingElementwiseOp)
                   .with_types(infer_same_as_input));
  // onnxkit's Gelu (fused_ops.h) is ONNX Gelu-20 for models older than opset 20: one kernel.
  registry.add(std::string(kOnnxkitDomain), "Gelu", 1,
               OpDefinition(kernel_factory<GeluKernel>()).with_types(infer_same_as_input));
  // Mish 22 added bfloat16.
  registry.add("Mish", {18, 22},
               OpDefinition(kernel_factory<SmoothGateKernel<false>>(), kZeroKeepingElementwiseOp)
                   .with_types(infer_same_as_input));
  registry.add("Swish", {24},
               OpDefinition(kernel_factory<SmoothGateKernel<true>>(), kZeroKeepingElementwiseOp)
                   .with_types(infer_same_as_input));
  registry.add("Shrink", {9}, kernel_factory<ShrinkKernel>(), kElementwiseOp);
  registry.add("Clip", {1, 6, 11, 12, 13}, kernel_factory<ClipKernel>(), kElementwiseOp);

  // Type inference, every version.
  // Every activation keeps its input's type (PRelu's slope broadcasts to X).
  registry.set_type_rule("", "Relu", infer_same_as_input);
  registry.set_type_rule("", "LeakyRelu", infer_same_as_input);
  registry.set_type_rule("", "Elu", infer_same_as_input);
  registry.set_type_rule("", "Selu", infer_same_as_input);
  registry.set_type_rule("", "Celu", infer_same_as_input);
  registry.set_type_rule("", "ThresholdedRelu", infer_same_as_input);
  registry.set_type_rule("", "HardSigmoid", infer_same_as_input);
  registry.set_type_rule("", "HardSwish", infer_same_as_input);
  registry.set_type_rule("", "Sigmoid", infer_same_as_input);
  registry.set_type_rule("", "Tanh", infer_same_as_input);
  registry.set_type_rule("", "Softplus", infer_same_as_input);
  registry.set_type_rule("", "Softsign", infer_same_as_input);
  registry.set_type_rule("", "PRelu", infer_same_as_input);
  registry.set_type_rule("", "Shrink", infer_same_as_input);
  registry.set_type_rule("", "Clip", infer_same_as_input);
}

}  // namespace onnxkit
