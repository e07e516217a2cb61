// Fast float32 kernels for the elementwise ops: Add/Sub/Mul/Div with broadcasting, the
// one-input maps (activations, Exp, Erf, Sqrt, ...), Pow with a scalar exponent of 2, 3,
// 0.5 or -1, Clip, Where and onnxkit's Gelu. Loops come from vector_math (runtime ISA
// choice); work is split with parallel_for. Other dtypes and cases go to the reference
// kernel of the node.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/vector_math.h"
#include "ops/fused_activation.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"

namespace onnxkit {

namespace {

// One input is a block of `inner` floats repeated over `middle` rows within each of `outer`
// groups (its dims equal the output's innermost ones, are 1 over the middle ones, and equal
// the output's outside them); the other has the output's shape. A per-channel scale of a
// blocked [N, C/16, H, W, 16] activation is such a pattern, with 16-float runs that the
// row-wise broadcast would walk one short run at a time.
struct RepeatPlan {
  bool pattern_first = false;  // the pattern is input a
  int64_t outer = 1, middle = 1, inner = 1;
};

std::optional<RepeatPlan> repeat_plan(const Shape& a, const Shape& b, const Shape& out) {
  for (int first = 0; first < 2; ++first) {
    const Shape& full = first ? b : a;
    const Shape& pattern = first ? a : b;
    if (full != out || pattern.size() > out.size()) continue;
    const size_t rank = out.size(), offset = rank - pattern.size();
    auto dim = [&](size_t i) { return i < offset ? int64_t{1} : pattern[i - offset]; };
    RepeatPlan plan;
    plan.pattern_first = first;
    size_t i = rank;
    for (; i > 0 && dim(i - 1) == out[i - 1]; --i) plan.inner *= out[i - 1];
    for (; i > 0 && dim(i - 1) == 1; --i) plan.middle *= out[i - 1];
    bool outer_matches = true;
    for (size_t d = 0; d < i; ++d) {
      outer_matches = outer_matches && dim(d) == out[d];
      plan.outer *= out[d];
    }
    if (outer_matches && plan.inner >= 8 && plan.inner <= 64 && plan.middle >= 2) return plan;
  }
  return std::nullopt;
}

}  // namespace

void broadcast_binary_f32(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                          const Shape& b_shape, float* out, const Shape& out_shape) {
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;
  if (const auto repeat = repeat_plan(a_shape, b_shape, out_shape)) {
    const float* full = repeat->pattern_first ? b : a;
    const float* pattern = repeat->pattern_first ? a : b;
    const int64_t inner = repeat->inner, middle = repeat->middle;
    const int64_t min_rows = std::max<int64_t>(1, kMinParallelStreaming / inner);
    parallel_for(repeat->outer * middle, min_rows, [&](int64_t begin, int64_t end) {
      const auto kernel =
          vector_kernels().binary_repeat[repeat->pattern_first][static_cast<int>(op)];
      for (int64_t row = begin; row < end;) {
        const int64_t group = row / middle;
        const int64_t rows = std::min(end, (group + 1) * middle) - row;
        kernel(full + row * inner, pattern + group * inner, inner, out + row * inner, rows);
        row += rows;
      }
    });
    return;
  }
  const BroadcastRows plan(out_shape, {&a_shape, &b_shape});
  const int index = static_cast<int>(op);
  const bool a_runs = plan.inner_stride(0) != 0;
  const bool b_runs = plan.inner_stride(1) != 0;
  parallel_for(total, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
    const VectorKernels& k = vector_kernels();
    plan.for_each_run(
        begin, end, [&](const auto& offsets, int64_t column, int64_t count, int64_t position) {
          float* o = out + position;
          if (a_runs && b_runs) {
            k.binary[index](a + offsets[0] + column, b + offsets[1] + column, o, count);
          } else if (a_runs) {
            k.binary_scalar_right[index](a + offsets[0] + column, b[offsets[1]], o, count);
          } else if (b_runs) {
            k.binary_scalar_left[index](a[offsets[0]], b + offsets[1] + column, o, count);
          } else {
            float value = 0;
            k.binary[index](a + offsets[0], b + offsets[1], &value, 1);
            std::fill(o, o + count, value);
          }
        });
  });
}

namespace {

bool is_cheap(UnaryOp op) {
  switch (op) {
    case UnaryOp::kRelu:
    case UnaryOp::kLeakyRelu:
    case UnaryOp::kClip:
    case UnaryOp::kHardSigmoid:
    case UnaryOp::kHardSwish:
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kSquare:
    case UnaryOp::kCube:
      return true;
    default:
      return false;
  }
}

void unary_f32(UnaryOp op, const float* x, float* y, int64_t n, float p0 = 0, float p1 = 0) {
  const int64_t min_chunk = is_cheap(op) ? kMinParallelStreaming : kMinParallelCompute;
  parallel_for(n, min_chunk, [&](int64_t begin, int64_t end) {
    vector_kernels().unary[static_cast<int>(op)](x + begin, y + begin, end - begin, p0, p1);
  });
}

// Where output 0 goes: into the first of `inputs` that has the output's shape and is
// donated (nothing reads it after this step), else into a new tensor. Elementwise loops
// read element i before writing element i, so running in place is exact.
float* float_output(KernelContext& context, const Shape& shape,
                    std::initializer_list<size_t> inputs) {
  for (size_t i : inputs) {
    if (!context.has_input(i) || context.input(i).shape() != shape) continue;
    if (void* data = context.reuse_input_for_output(i, 0, DType::kFloat, shape)) {
      return static_cast<float*>(data);
    }
  }
  return context.allocate_output_uninitialized(0, DType::kFloat, shape).mutable_data<float>();
}

// ---- Add, Sub, Mul, Div ----

class FastBinaryKernel : public OpKernel {
 public:
  FastBinaryKernel(const KernelCreateContext& context, BinaryOp op)
      : op_(op), fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat) {
      return run_fallback(fallback_.get(), context);
    }
    Shape shape = broadcast_shapes(a.shape(), b.shape());
    float* out = float_output(context, shape, {0, 1});
    broadcast_binary_f32(op_, a.data<float>(), a.shape(), b.data<float>(), b.shape(), out, shape);
  }

 private:
  BinaryOp op_;
  std::unique_ptr<OpKernel> fallback_;
};

KernelFactory binary_factory(BinaryOp op) {
  return [op](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    if (known_non_float(context, 0)) return nullptr;
    return std::make_unique<FastBinaryKernel>(context, op);
  };
}

// ---- one-input maps ----

class FastUnaryKernel : public OpKernel {
 public:
  FastUnaryKernel(const KernelCreateContext& context, UnaryOp op, float p0, float p1)
      : op_(op), p0_(p0), p1_(p1), fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != DType::kFloat) return run_fallback(fallback_.get(), context);
    const float* in = x.data<float>();
    const int64_t n = x.numel();
    unary_f32(op_, in, float_output(context, x.shape(), {0}), n, p0_, p1_);
  }

 private:
  UnaryOp op_;
  float p0_, p1_;
  std::unique_ptr<OpKernel> fallback_;
};

KernelFactory unary_factory(UnaryOp op) {
  return [op](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    if (known_non_float(context, 0)) return nullptr;
    // The parameters the standalone op has, with its defaults.
    ActivationFunction params;
    if (op == UnaryOp::kLeakyRelu) params = activation_op(context, ActivationKind::kLeakyRelu);
    if (op == UnaryOp::kHardSigmoid) params = activation_op(context, ActivationKind::kHardSigmoid);
    return std::make_unique<FastUnaryKernel>(context, op, params.alpha, params.beta);
  };
}

// onnxkit's Gelu: the erf form or, with approximate = "tanh", the tanh form.
std::unique_ptr<OpKernel> make_gelu_kernel(const KernelCreateContext& context) {
  if (known_non_float(context, 0)) return nullptr;
  const std::string approximate = context.attr_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh") return nullptr;  // the reference says why
  const UnaryOp op = approximate == "tanh" ? UnaryOp::kGeluTanh : UnaryOp::kGelu;
  return std::make_unique<FastUnaryKernel>(context, op, 0.0f, 0.0f);
}

// ---- Clip: bounds are attributes before opset 11, optional scalar inputs from 11 ----

class FastClipKernel : public OpKernel {
 public:
  explicit FastClipKernel(const KernelCreateContext& context)
      : bounds_are_inputs_(context.opset() >= 11), fallback_(context.reference_kernel()) {
    if (!bounds_are_inputs_) {
      min_ = context.attr_float("min", std::numeric_limits<float>::lowest());
      max_ = context.attr_float("max", std::numeric_limits<float>::max());
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    float lo = min_, hi = max_;
    if (bounds_are_inputs_) {
      for (size_t i : {1, 2}) {
        if (!context.has_input(i)) continue;
        const Tensor& bound = context.input(i);
        if (bound.dtype() != DType::kFloat || bound.numel() != 1) {
          return run_fallback(fallback_.get(), context);  // the reference reports it
        }
        (i == 1 ? lo : hi) = bound.data<float>()[0];
      }
    }
    if (x.dtype() != DType::kFloat) return run_fallback(fallback_.get(), context);
    const float* in = x.data<float>();
    const int64_t n = x.numel();
    unary_f32(UnaryOp::kClip, in, float_output(context, x.shape(), {0}), n, lo, hi);
  }

 private:
  bool bounds_are_inputs_;
  float min_ = std::numeric_limits<float>::lowest();
  float max_ = std::numeric_limits<float>::max();
  std::unique_ptr<OpKernel> fallback_;
};

// ---- Pow with one exponent that has a cheap exact form ----

class FastPowKernel : public OpKernel {
 public:
  explicit FastPowKernel(const KernelCreateContext& context)
      : fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& exponent = context.input(1);
    const bool numeric_exponent =
        dtype_is_float(exponent.dtype()) || dtype_is_integer(exponent.dtype());
    if (x.dtype() != DType::kFloat || !numeric_exponent || exponent.numel() != 1 ||
        exponent.rank() > x.rank()) {
      return run_fallback(fallback_.get(), context);
    }
    const double e = read_scalar(exponent, "Pow exponent");
    UnaryOp op;
    if (e == 2.0) {
      op = UnaryOp::kSquare;
    } else if (e == 3.0) {
      op = UnaryOp::kCube;
    } else if (e == 0.5) {
      op = UnaryOp::kPowHalf;
    } else if (e == -1.0) {
      op = UnaryOp::kReciprocal;
    } else {
      return run_fallback(fallback_.get(), context);
    }
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, x.shape());
    unary_f32(op, x.data<float>(), y.mutable_data<float>(), x.numel());
  }

 private:
  std::unique_ptr<OpKernel> fallback_;
};

// ---- Where(condition, X, Y) for float X and Y ----

class FastWhereKernel : public OpKernel {
 public:
  explicit FastWhereKernel(const KernelCreateContext& context)
      : fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& condition = context.input(0);
    const Tensor& x = context.input(1);
    const Tensor& y = context.input(2);
    if (condition.dtype() != DType::kBool || x.dtype() != DType::kFloat ||
        y.dtype() != DType::kFloat) {
      return run_fallback(fallback_.get(), context);
    }
    const Shape shapes[] = {condition.shape(), x.shape(), y.shape()};
    Tensor& out = context.allocate_output_uninitialized(0, DType::kFloat, broadcast_shapes(shapes));
    const int64_t total = out.numel();
    if (total == 0) return;
    const BroadcastRows plan(out.shape(), {&shapes[0], &shapes[1], &shapes[2]});
    const auto* pc = reinterpret_cast<const uint8_t*>(condition.data<bool>());
    const float* px = x.data<float>();
    const float* py = y.data<float>();
    float* po = out.mutable_data<float>();
    const bool x_runs = plan.inner_stride(1) != 0;
    const bool y_runs = plan.inner_stride(2) != 0;
    parallel_for(total, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      plan.for_each_run(
          begin, end, [&](const auto& offsets, int64_t column, int64_t count, int64_t position) {
            const float* xs = x_runs ? px + offsets[1] + column : nullptr;
            const float* ys = y_runs ? py + offsets[2] + column : nullptr;
            const float x_scalar = px[offsets[1]], y_scalar = py[offsets[2]];
            float* o = po + position;
            if (plan.inner_stride(0) != 0) {
              k.select(pc + offsets[0] + column, xs, x_scalar, ys, y_scalar, o, count);
              return;
            }
            // One condition for the whole run: a copy or a fill.
            const bool take_x = pc[offsets[0]] != 0;
            const float* source = take_x ? xs : ys;
            if (source) {
              std::copy(source, source + count, o);
            } else {
              std::fill(o, o + count, take_x ? x_scalar : y_scalar);
            }
          });
    });
  }

 private:
  std::unique_ptr<OpKernel> fallback_;
};

template <typename K>
KernelFactory float_input_factory(size_t input) {
  return [input](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    if (known_non_float(context, input)) return nullptr;
    return std::make_unique<K>(context);
  };
}

}  // namespace

void register_fast_elementwise_kernels(OpRegistry& registry) {
  // Since-versions mirror the reference registrations (an optimized kernel serves an opset
  // only when it is at least as new as the reference one; version 1 of the unary ops and
  // Clip differs from 6 only by the ignored `consumed_inputs`); opsets 1-6 of the arithmetic
  // ops had another broadcasting rule and stay on the reference kernels.
  const std::pair<const char*, BinaryOp> arithmetic[] = {{"Add", BinaryOp::kAdd},
                                                         {"Sub", BinaryOp::kSub},
                                                         {"Mul", BinaryOp::kMul},
                                                         {"Div", BinaryOp::kDiv}};
  for (const auto& [name, op] : arithmetic) {
    for (int64_t since : {7, 13, 14}) registry.add_optimized("", name, since, binary_factory(op));
  }
  struct UnaryRegistration {
    const char* name;
    std::vector<int64_t> versions;
    UnaryOp op;
  };
  const UnaryRegistration unary[] = {
      {"Relu", {1, 6, 13, 14}, UnaryOp::kRelu},
      {"LeakyRelu", {1, 6, 16}, UnaryOp::kLeakyRelu},
      {"HardSigmoid", {1, 6, 22}, UnaryOp::kHardSigmoid},
      {"HardSwish", {14, 22}, UnaryOp::kHardSwish},
      {"Sigmoid", {1, 6, 13}, UnaryOp::kSigmoid},
      {"Tanh", {1, 6, 13}, UnaryOp::kTanh},
      {"Erf", {9, 13}, UnaryOp::kErf},
      {"Exp", {1, 6, 13}, UnaryOp::kExp},
      {"Sqrt", {1, 6, 13}, UnaryOp::kSqrt},
      {"Reciprocal", {1, 6, 13}, UnaryOp::kReciprocal},
      {"Neg", {1, 6, 13}, UnaryOp::kNeg},
      {"Abs", {1, 6, 13}, UnaryOp::kAbs},
  };
  for (const auto& [name, versions, op] : unary) {
    for (int64_t since : versions) registry.add_optimized("", name, since, unary_factory(op));
  }
  for (int64_t since : {1, 6, 11, 12, 13}) {
    registry.add_optimized("", "Clip", since, float_input_factory<FastClipKernel>(0));
  }
  for (int64_t since : {7, 12, 13, 15}) {
    registry.add_optimized("", "Pow", since, float_input_factory<FastPowKernel>(0));
  }
  for (int64_t since : {9, 16}) {
    registry.add_optimized("", "Where", since, float_input_factory<FastWhereKernel>(1));
  }
  registry.add_optimized(std::string(kOnnxkitDomain), "Gelu", 1, make_gelu_kernel);
  registry.add_optimized("", "Gelu", 20, make_gelu_kernel);
}

}  // namespace onnxkit
