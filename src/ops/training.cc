// Op family: optimizers of the ai.onnx.preview.training domain (Adagrad, Adam, Momentum).
//
// Each takes R (learning rate, scalar), T (update count, int64 scalar), then N tensors to
// optimize followed by their per-tensor state lists: Adagrad X..., G..., H...; Momentum X...,
// G..., V...; Adam X..., G..., V..., H.... Outputs are the new values list by list (X_new...,
// then V_new... and/or H_new...). Each tensor is updated element-wise on its own (with numpy
// broadcasting between X, G and the state), computed in double. Gradient is not provided: it
// needs automatic differentiation.
#include <array>
#include <cmath>

#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

// R, T and the group count of one call, validated.
struct OptimizerCall {
  double r = 0;
  int64_t t = 0;
  size_t n = 0;  // tensors optimized
  DType dtype = DType::kUndefined;
};

// `lists` is the number of input lists (X, G and the states), `outputs` the number of
// output lists; `layout` names them for messages ("X..., G..., H...").
OptimizerCall read_call(const KernelContext& context, size_t lists, size_t outputs,
                        const char* layout) {
  const size_t num_inputs = context.num_inputs();
  if (num_inputs < 2 + lists || (num_inputs - 2) % lists != 0) {
    context.fail("expects inputs R, T, {} ({} lists of equal length), got {} inputs", layout, lists,
                 num_inputs);
  }
  OptimizerCall call;
  call.n = (num_inputs - 2) / lists;
  if (context.num_outputs() > outputs * call.n) {
    context.fail("optimizes {} tensors so it has at most {} outputs, got {}", call.n,
                 outputs * call.n, context.num_outputs());
  }
  const Tensor& r = context.input(0);
  if (r.dtype() != DType::kFloat && r.dtype() != DType::kDouble) {
    context.fail("R has type {}, must be float or double", dtype_name(r.dtype()));
  }
  if (r.numel() != 1) context.fail("R must be a scalar, got shape {}", shape_to_string(r.shape()));
  call.r = read_scalar(r, "R");
  const Tensor& t = context.input(1);
  if (t.dtype() != DType::kInt64) {
    context.fail("T has type {}, must be int64", dtype_name(t.dtype()));
  }
  if (t.numel() != 1) context.fail("T must be a scalar, got shape {}", shape_to_string(t.shape()));
  call.t = t.data<int64_t>()[0];
  call.dtype = context.input(2).dtype();
  if (call.dtype != DType::kFloat && call.dtype != DType::kDouble) {
    context.fail("input 2 has type {}, the optimized tensors must be float or double",
                 dtype_name(call.dtype));
  }
  for (size_t i = 3; i < num_inputs; ++i) {
    if (context.input(i).dtype() != call.dtype) {
      context.fail("input {} has type {}, expected {} like input 2", i,
                   dtype_name(context.input(i).dtype()), dtype_name(call.dtype));
    }
  }
  return call;
}

// Updates tensor `j` of the call: reads element k of input list k (X, G, states), calls
// update(in, out) per element with doubles, and writes output list m's tensor j (skipped
// when the graph does not read it). Output shapes are the broadcast of the inputs' shapes.
template <size_t K, size_t M, typename Update>
void update_tensor(KernelContext& context, const OptimizerCall& call, size_t j, Update update) {
  std::array<const Tensor*, K> inputs;
  std::vector<Shape> shapes;
  for (size_t k = 0; k < K; ++k) {
    inputs[k] = &context.input(2 + k * call.n + j);
    shapes.push_back(inputs[k]->shape());
  }
  const Shape shape = broadcast_shapes(shapes);
  dispatch_float(call.dtype, "optimizer", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::array<const T*, K> in_data;
    for (size_t k = 0; k < K; ++k) in_data[k] = inputs[k]->template data<T>();
    std::array<T*, M> out_data;
    for (size_t m = 0; m < M; ++m) {
      const size_t index = m * call.n + j;
      out_data[m] =
          context.wants_output(index)
              ? context.allocate_output(index, call.dtype, shape).template mutable_data<T>()
              : nullptr;
    }
    auto step = [&](int64_t out_index, const int64_t* offsets) {
      std::array<double, K> in;
      std::array<double, M> out;
      for (size_t k = 0; k < K; ++k) in[k] = static_cast<double>(in_data[k][offsets[k]]);
      update(in, out);
      for (size_t m = 0; m < M; ++m) {
        if (out_data[m]) out_data[m][out_index] = static_cast<T>(out[m]);
      }
    };
    bool same = true;
    for (const Shape& s : shapes) same = same && s == shape;
    if (same) {
      std::array<int64_t, K> offsets;
      const int64_t total = shape_numel(shape);
      for (int64_t i = 0; i < total; ++i) {
        offsets.fill(i);
        step(i, offsets.data());
      }
    } else {
      std::vector<std::vector<int64_t>> strides;
      for (const Shape& s : shapes) strides.push_back(broadcast_strides(s, shape));
      for_each_broadcast(shape, strides, step);
    }
  });
}

// Adagrad: r = R / (1 + T * decay_factor); g = norm_coefficient * X + G; H_new = H + g^2;
// X_new = X - r * g / (sqrt(H_new) + epsilon).
class AdagradKernel : public OpKernel {
 public:
  explicit AdagradKernel(const KernelCreateContext& context)
      : norm_coefficient_(context.attr_float("norm_coefficient", 0.0f)),
        decay_factor_(context.attr_float("decay_factor", 0.0f)),
        epsilon_(context.attr_float("epsilon", 1e-6f)) {}

  void compute(KernelContext& context) const override {
    const OptimizerCall call = read_call(context, 3, 2, "X..., G..., H...");
    const double r = call.r / (1.0 + static_cast<double>(call.t) * decay_factor_);
    for (size_t j = 0; j < call.n; ++j) {
      update_tensor<3, 2>(context, call, j, [&](const auto& in, auto& out) {
        const double x = in[0], g = norm_coefficient_ * x + in[1];
        const double h = in[2] + g * g;
        out[0] = x - r * g / (std::sqrt(h) + epsilon_);
        out[1] = h;
      });
    }
  }

 private:
  double norm_coefficient_, decay_factor_, epsilon_;
};

// Adam: g = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * g;
// H_new = beta * H + (1 - beta) * g^2; R_adjusted = T > 0 ? R * sqrt(1 - beta^T) /
// (1 - alpha^T) : R; X_new = (1 - norm_coefficient_post) *
// (X - R_adjusted * V_new / (sqrt(H_new) + epsilon)).
class AdamKernel : public OpKernel {
 public:
  explicit AdamKernel(const KernelCreateContext& context)
      : alpha_(context.attr_float("alpha", 0.9f)),
        beta_(context.attr_float("beta", 0.999f)),
        epsilon_(context.attr_float("epsilon", 1e-6f)),
        norm_coefficient_(context.attr_float("norm_coefficient", 0.0f)),
        norm_coefficient_post_(context.attr_float("norm_coefficient_post", 0.0f)) {}

  void compute(KernelContext& context) const override {
    const OptimizerCall call = read_call(context, 4, 3, "X..., G..., V..., H...");
    double r = call.r;
    if (call.t > 0) {
      const auto t = static_cast<double>(call.t);
      r = r * std::sqrt(1.0 - std::pow(beta_, t)) / (1.0 - std::pow(alpha_, t));
    }
    for (size_t j = 0; j < call.n; ++j) {
      update_tensor<4, 3>(context, call, j, [&](const auto& in, auto& out) {
        const double x = in[0], g = norm_coefficient_ * x + in[1];
        const double v = alpha_ * in[2] + (1.0 - alpha_) * g;
        const double h = beta_ * in[3] + (1.0 - beta_) * g * g;
        out[0] = (1.0 - norm_coefficient_post_) * (x - r * v / (std::sqrt(h) + epsilon_));
        out[1] = v;
        out[2] = h;
      });
    }
  }

 private:
  double alpha_, beta_, epsilon_, norm_coefficient_, norm_coefficient_post_;
};

// Momentum: g = norm_coefficient * X + G; V_new = alpha * V + (T > 0 ? beta : 1) * g;
// standard: X_new = X - R * V_new; nesterov: X_new = X - R * (g + alpha * V_new).
class MomentumKernel : public OpKernel {
 public:
  explicit MomentumKernel(const KernelCreateContext& context)
      : alpha_(context.attr_float("alpha")),
        beta_(context.attr_float("beta")),
        norm_coefficient_(context.attr_float("norm_coefficient")) {
    const std::string mode = context.attr_string("mode");
    if (mode != "standard" && mode != "nesterov") {
      context.fail("mode is '{}', must be 'standard' or 'nesterov'", mode);
    }
    nesterov_ = mode == "nesterov";
  }

  void compute(KernelContext& context) const override {
    const OptimizerCall call = read_call(context, 3, 2, "X..., G..., V...");
    const double r = call.r, beta = call.t > 0 ? beta_ : 1.0;
    for (size_t j = 0; j < call.n; ++j) {
      update_tensor<3, 2>(context, call, j, [&](const auto& in, auto& out) {
        const double x = in[0], g = norm_coefficient_ * x + in[1];
        const double v = alpha_ * in[2] + beta * g;
        out[0] = nesterov_ ? x - r * (g + alpha_ * v) : x - r * v;
        out[1] = v;
      });
    }
  }

 private:
  double alpha_, beta_, norm_coefficient_;
  bool nesterov_ = false;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// The optimizers take R, T, then kGroups groups of n tensors (X, G, and the op's states)
// and return every group but the gradients': each output like the tensor it updates.
template <size_t kGroups>
void infer_optimizer(TypeInferenceContext& context) {
  if (context.num_inputs() < 2 || (context.num_inputs() - 2) % kGroups != 0) {
    fail("takes R, T and {} groups of tensors, got {} inputs", kGroups, context.num_inputs());
  }
  const size_t n = (context.num_inputs() - 2) / kGroups;
  if (n == 0) return;
  for (size_t j = 0; j < context.num_outputs(); ++j) {
    const size_t group = j / n;
    const size_t input = 2 + (group == 0 ? 0 : group + 1) * n + j % n;
    if (const ValueType* type = context.input_type(input)) context.set_output(j, *type);
  }
}

}  // namespace

void register_training_ops(OpRegistry& registry) {
  registry.add(kTrainingDomain, "Adagrad", 1, kernel_factory<AdagradKernel>());
  registry.add(kTrainingDomain, "Adam", 1, kernel_factory<AdamKernel>());
  registry.add(kTrainingDomain, "Momentum", 1, kernel_factory<MomentumKernel>());

  // Type inference, every version.
  registry.set_type_rule(kTrainingDomain, "Adagrad", infer_optimizer<3>);
  registry.set_type_rule(kTrainingDomain, "Adam", infer_optimizer<4>);
  registry.set_type_rule(kTrainingDomain, "Momentum", infer_optimizer<3>);
}

}  // namespace onnxkit
