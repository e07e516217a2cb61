// Fast float32 kernels for the row-wise ops of transformers: Softmax and LogSoftmax over
// the last axis (and the 2-D coerced form of opsets 1-12), LayerNormalization (ONNX 17 and
// onnxkit's), RMSNormalization, SkipLayerNormalization (onnxkit's and com.microsoft's),
// onnxkit's BiasSoftmax, and
// ReduceMean over one block of adjacent axes. Rows are independent: parallel_for splits them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/vector_math.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"

namespace onnxkit {
namespace {

// Rows per parallel chunk so that a chunk holds at least kMinParallelCompute elements.
int64_t rows_per_chunk(int64_t cols) {
  return std::max<int64_t>(1, kMinParallelCompute / std::max<int64_t>(cols, 1));
}

// True when `shape` broadcasts to `target` without repeating anything: equal up to leading
// ones (a per-column parameter of a row-wise op, read as a plain row).
bool same_up_to_leading_ones(const Shape& shape, const Shape& target) {
  const size_t rank = std::max(shape.size(), target.size());
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < shape.size() ? shape[shape.size() - 1 - i] : 1;
    const int64_t b = i < target.size() ? target[target.size() - 1 - i] : 1;
    if (a != b) return false;
  }
  return true;
}

// ---- Softmax, LogSoftmax ----

class FastSoftmaxKernel : public OpKernel {
 public:
  FastSoftmaxKernel(const KernelCreateContext& context, bool log)
      : coerce_2d_(context.opset() < 13),
        // Only versions 1 to 10 take axis == rank (ops/softmax.cc).
        rank_axis_allowed_(context.opset() < 11),
        axis_(context.attr_int("axis", coerce_2d_ ? 1 : -1)),
        log_(log),
        fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // Invalid axes and other dtypes: the reference kernel runs (or reports) them.
    if (x.dtype() != DType::kFloat || axis < 0 || axis > rank ||
        (!rank_axis_allowed_ && axis == rank)) {
      return run_fallback(fallback_.get(), context);
    }
    const Shape& shape = x.shape();
    // Opset 13 runs along one axis: a row only when every dim after it is 1.
    const int64_t trailing = coerce_2d_ ? 1 : shape_numel(std::span(shape).subspan(axis + 1));
    if (trailing != 1) return run_fallback(fallback_.get(), context);
    const int64_t rows = shape_numel(std::span(shape).first(axis));
    const int64_t cols = shape_numel(std::span(shape).subspan(axis));
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, shape);
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    parallel_for(rows, rows_per_chunk(cols), [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      const auto row = log_ ? k.log_softmax_row : k.softmax_row;
      for (int64_t r = begin; r < end; ++r) row(px + r * cols, py + r * cols, cols);
    });
  }

 private:
  bool coerce_2d_;
  bool rank_axis_allowed_;
  int64_t axis_;
  bool log_;
  std::unique_ptr<OpKernel> fallback_;
};

// ---- LayerNormalization (ONNX 17; onnxkit's for older opsets) ----

class FastLayerNormKernel : public OpKernel {
 public:
  explicit FastLayerNormKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)),
        epsilon_(context.attr_float("epsilon", 1e-5f)),
        fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    const Tensor* bias = context.has_input(2) ? &context.input(2) : nullptr;
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // Mean / InvStdDev outputs (training), broadcast parameters, other dtypes: reference.
    if (x.dtype() != DType::kFloat || scale.dtype() != DType::kFloat ||
        (bias && bias->dtype() != DType::kFloat) || axis < 0 || axis >= rank ||
        context.wants_output(1) || context.wants_output(2)) {
      return run_fallback(fallback_.get(), context);
    }
    const Shape& shape = x.shape();
    const Shape norm_shape(shape.begin() + axis, shape.end());
    const auto plain_row = [&](const Tensor& t) {
      return t.rank() <= norm_shape.size() && same_up_to_leading_ones(t.shape(), norm_shape);
    };
    if (!plain_row(scale) || (bias && !plain_row(*bias))) {
      return run_fallback(fallback_.get(), context);
    }
    const int64_t cols = shape_numel(norm_shape);
    const int64_t rows = shape_numel(std::span(shape).first(axis));
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, shape);
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    const float* gamma = scale.data<float>();
    const float* beta = bias ? bias->data<float>() : nullptr;
    float* py = y.mutable_data<float>();
    parallel_for(rows, rows_per_chunk(cols), [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      for (int64_t r = begin; r < end; ++r) {
        k.layer_norm_row(px + r * cols, gamma, beta, epsilon_, py + r * cols, cols);
      }
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
  std::unique_ptr<OpKernel> fallback_;
};

// ---- RMSNormalization (ONNX 23) ----

class FastRmsNormKernel : public OpKernel {
 public:
  explicit FastRmsNormKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)),
        epsilon_(context.attr_float("epsilon", 1e-5f)),
        fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (x.dtype() != DType::kFloat || scale.dtype() != DType::kFloat || axis < 0 || axis >= rank) {
      return run_fallback(fallback_.get(), context);
    }
    const Shape& shape = x.shape();
    const Shape norm_shape(shape.begin() + axis, shape.end());
    if (scale.rank() > norm_shape.size() || !same_up_to_leading_ones(scale.shape(), norm_shape)) {
      return run_fallback(fallback_.get(), context);
    }
    const int64_t cols = shape_numel(norm_shape);
    const int64_t rows = shape_numel(std::span(shape).first(axis));
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, shape);
    if (x.numel() == 0) return;
    const float* px = x.data<float>();
    const float* gamma = scale.data<float>();
    float* py = y.mutable_data<float>();
    parallel_for(rows, rows_per_chunk(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* row = px + r * cols;
        float* out = py + r * cols;
        // Eight partial sums: the loop vectorizes without reassociating one accumulator.
        float partial[8] = {};
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8) {
          for (int lane = 0; lane < 8; ++lane) partial[lane] += row[c + lane] * row[c + lane];
        }
        double sum = 0;
        for (float p : partial) sum += p;
        for (; c < cols; ++c) sum += static_cast<double>(row[c]) * row[c];
        const auto inv = static_cast<float>(
            1.0 / std::sqrt(sum / static_cast<double>(cols) + static_cast<double>(epsilon_)));
        for (c = 0; c < cols; ++c) out[c] = row[c] * inv * gamma[c];
      }
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
  std::unique_ptr<OpKernel> fallback_;
};

// ---- SkipLayerNormalization(X, Skip, Gamma, Beta?, Bias?) -> Y, Sum? ----
// onnxkit's (fused_ops.h: Sum is output 1, epsilon 1e-5, Skip has X's shape) and ONNX
// Runtime's com.microsoft one (ops/transformer_microsoft.h: the sum is output 3 after mean and
// inv_std_var, which it does not write, epsilon 1e-12, and a [S, H] / [1, S, H] Skip serves
// every batch of an [B, S, H] X).

struct SkipLayerNormForm {
  size_t sum_output;
  float default_epsilon;
  bool skip_per_batch;
};
constexpr SkipLayerNormForm kOnnxkitSkipLayerNorm{1, 1e-5f, false};
constexpr SkipLayerNormForm kMicrosoftSkipLayerNorm{3, 1e-12f, true};

class FastSkipLayerNormKernel : public OpKernel {
 public:
  FastSkipLayerNormKernel(const KernelCreateContext& context, SkipLayerNormForm form)
      : form_(form),
        epsilon_(context.attr_float("epsilon", form.default_epsilon)),
        fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& skip = context.input(1);
    const Tensor& gamma = context.input(2);
    const Tensor* beta = context.has_input(3) ? &context.input(3) : nullptr;
    const Tensor* bias = context.has_input(4) ? &context.input(4) : nullptr;
    const Shape& shape = x.shape();
    if (shape.empty()) context.fail("X is a scalar; it needs rank >= 1");
    const int64_t cols = shape.back();
    const auto is_row = [cols](const Tensor* t) {
      return !t || (t->dtype() == DType::kFloat && t->numel() == cols);
    };
    if (x.dtype() != DType::kFloat || skip.dtype() != DType::kFloat || !is_row(&gamma) ||
        !is_row(beta) || !is_row(bias)) {
      return run_fallback(fallback_.get(), context);
    }
    // A Skip of one batch's rows: its shape is X's without the batch dim (or with a batch 1).
    const bool per_batch = form_.skip_per_batch && shape.size() == 3 &&
                           skip.numel() == shape[1] * cols && skip.shape().back() == cols &&
                           (skip.rank() == 2 || (skip.rank() == 3 && skip.shape()[0] == 1));
    if (skip.shape() != shape && !per_batch) {
      if (form_.skip_per_batch) return run_fallback(fallback_.get(), context);  // it reports
      context.fail("Skip has shape {}, X has {} (they must match)", shape_to_string(skip.shape()),
                   shape_to_string(shape));
    }
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, shape);
    float* sum = context.wants_output(form_.sum_output)
                     ? context.allocate_output_uninitialized(form_.sum_output, DType::kFloat, shape)
                           .mutable_data<float>()
                     : nullptr;
    if (x.numel() == 0) return;
    const int64_t rows = x.numel() / cols, skip_rows = skip.numel() / cols;
    const float* px = x.data<float>();
    const float* ps = skip.data<float>();
    const float* pg = gamma.data<float>();
    const float* pb = beta ? beta->data<float>() : nullptr;
    const float* pbias = bias ? bias->data<float>() : nullptr;
    float* py = y.mutable_data<float>();
    parallel_for(rows, rows_per_chunk(cols), [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      // Without a Sum output each row's sum lives in Y's row until it is normalized.
      for (int64_t r = begin; r < end; ++r) {
        float* row_sum = sum ? sum + r * cols : py + r * cols;
        k.add3(px + r * cols, ps + (r % skip_rows) * cols, pbias, row_sum, cols);
        k.layer_norm_row(row_sum, pg, pb, epsilon_, py + r * cols, cols);
      }
    });
  }

 private:
  SkipLayerNormForm form_;
  float epsilon_;
  std::unique_ptr<OpKernel> fallback_;
};

KernelFactory skip_layer_norm_factory(SkipLayerNormForm form) {
  return [form](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    if (known_non_float(context, 0)) return nullptr;
    for (size_t i = 1; i < 3 && form.sum_output == 3 && i < context.node().outputs().size(); ++i) {
      if (context.node().outputs()[i]) return nullptr;  // mean / inv_std_var: the reference's
    }
    return std::make_unique<FastSkipLayerNormKernel>(context, form);
  };
}

// ---- BiasSoftmax(X, Bias) = Softmax(X + Bias) along `axis` (onnxkit) ----

class FastBiasSoftmaxKernel : public OpKernel {
 public:
  explicit FastBiasSoftmaxKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)), fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& bias = context.input(1);
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const Shape& shape = x.shape();
    if (x.dtype() != DType::kFloat || bias.dtype() != DType::kFloat || axis < 0 || axis >= rank ||
        shape_numel(std::span(shape).subspan(axis + 1)) != 1) {
      return run_fallback(fallback_.get(), context);
    }
    if (broadcast_shapes(shape, bias.shape()) != shape) {
      context.fail("Bias of shape {} does not broadcast to X of shape {}",
                   shape_to_string(bias.shape()), shape_to_string(shape));
    }
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, shape);
    if (x.numel() == 0) return;
    float* py = y.mutable_data<float>();
    broadcast_binary_f32(BinaryOp::kAdd, x.data<float>(), shape, bias.data<float>(), bias.shape(),
                         py, shape);
    const int64_t cols = shape[axis];
    parallel_for(x.numel() / cols, rows_per_chunk(cols), [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      for (int64_t r = begin; r < end; ++r) k.softmax_row(py + r * cols, py + r * cols, cols);
    });
  }

 private:
  int64_t axis_;
  std::unique_ptr<OpKernel> fallback_;
};

// ---- ReduceMean over one block of adjacent axes (axes attribute, opsets 1-17) ----

class FastReduceMeanKernel : public OpKernel {
 public:
  explicit FastReduceMeanKernel(const KernelCreateContext& context)
      : keepdims_(context.attr_int("keepdims", 1) != 0),
        axes_(context.attr_ints_opt("axes")),
        fallback_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    if (x.dtype() != DType::kFloat || !axes_ || axes_->empty() || context.has_input(1)) {
      return run_fallback(fallback_.get(), context);
    }
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    for (int64_t axis : *axes_) {
      const int64_t a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank || reduced[a]) return run_fallback(fallback_.get(), context);
      reduced[a] = true;
    }
    // The reduced axes must be one block [first, last] (dims of size 1 do not count).
    const Shape& shape = x.shape();
    int64_t first = rank, last = -1;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d] && shape[d] != 1) first = std::min(first, d), last = d;
    }
    for (int64_t d = first; d <= last; ++d) {
      if (!reduced[d] && shape[d] != 1) return run_fallback(fallback_.get(), context);
    }
    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[d]) {
        out_shape.push_back(shape[d]);
      } else if (keepdims_) {
        out_shape.push_back(1);
      }
    }
    if (last < 0) first = last = rank;  // only size-1 dims reduced: a copy
    const int64_t outer = shape_numel(std::span(shape).first(first));
    const int64_t count =
        last < rank ? shape_numel(std::span(shape).subspan(first, last - first + 1)) : 1;
    const int64_t inner = last < rank ? shape_numel(std::span(shape).subspan(last + 1)) : 1;
    if (count == 0) return run_fallback(fallback_.get(), context);  // mean of nothing: NaN
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, out_shape);
    if (y.numel() == 0) return;
    const float* px = x.data<float>();
    float* py = y.mutable_data<float>();
    const auto divisor = static_cast<float>(count);
    if (inner == 1) {
      parallel_for(outer, rows_per_chunk(count), [&](int64_t begin, int64_t end) {
        const VectorKernels& k = vector_kernels();
        for (int64_t r = begin; r < end; ++r) py[r] = k.sum(px + r * count, count) / divisor;
      });
      return;
    }
    // Column sums: each output row accumulates `count` contiguous input rows.
    const int64_t min_chunk = std::max<int64_t>(64, kMinParallelStreaming / count);
    parallel_for(outer * inner, min_chunk, [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      const auto add = k.binary[static_cast<int>(BinaryOp::kAdd)];
      while (begin < end) {
        const int64_t o = begin / inner, i = begin % inner;
        const int64_t n = std::min(inner - i, end - begin);
        const float* src = px + o * count * inner + i;
        float* dst = py + o * inner + i;
        std::copy(src, src + n, dst);
        for (int64_t r = 1; r < count; ++r) add(dst, src + r * inner, dst, n);
        k.binary_scalar_right[static_cast<int>(BinaryOp::kDiv)](dst, divisor, dst, n);
        begin += n;
      }
    });
  }

 private:
  bool keepdims_;
  std::optional<std::vector<int64_t>> axes_;
  std::unique_ptr<OpKernel> fallback_;
};

template <typename K>
KernelFactory float_kernel_factory() {
  return [](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    if (known_non_float(context, 0)) return nullptr;
    return std::make_unique<K>(context);
  };
}

KernelFactory softmax_factory(bool log) {
  return [log](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    if (known_non_float(context, 0)) return nullptr;
    return std::make_unique<FastSoftmaxKernel>(context, log);
  };
}

}  // namespace

void register_fast_normalization_kernels(OpRegistry& registry) {
  for (int64_t since : {1, 11, 13}) {
    registry.add_optimized("", "Softmax", since, softmax_factory(false));
    registry.add_optimized("", "LogSoftmax", since, softmax_factory(true));
  }
  for (int64_t since : {1, 11, 13, 18}) {
    registry.add_optimized("", "ReduceMean", since, float_kernel_factory<FastReduceMeanKernel>());
  }
  for (int64_t since : {1, 17}) {  // 1: ONNX Runtime's pre-17 form (ops/normalization.cc)
    registry.add_optimized("", "LayerNormalization", since,
                           float_kernel_factory<FastLayerNormKernel>());
  }
  registry.add_optimized("", "RMSNormalization", 23, float_kernel_factory<FastRmsNormKernel>());
  registry.add_optimized("", "SimplifiedLayerNormalization", 1,  // ONNX Runtime's, the same op
                         float_kernel_factory<FastRmsNormKernel>());
  const std::string onnxkit(kOnnxkitDomain);
  registry.add_optimized(onnxkit, "LayerNormalization", 1,
                         float_kernel_factory<FastLayerNormKernel>());
  registry.add_optimized(onnxkit, "SkipLayerNormalization", 1,
                         skip_layer_norm_factory(kOnnxkitSkipLayerNorm));
  registry.add_optimized(std::string(kMicrosoftDomain), "SkipLayerNormalization", 1,
                         skip_layer_norm_factory(kMicrosoftSkipLayerNorm));
  registry.add_optimized(onnxkit, "BiasSoftmax", 1, float_kernel_factory<FastBiasSoftmaxKernel>());
}

}  // namespace onnxkit
