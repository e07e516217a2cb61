// Op family: onnxkit's transformer ops (domain com.onnxkit, ops/fused_ops.h), reference
// kernels: LayerNormalization, SkipLayerNormalization, BiasSoftmax, Attention. Its Gelu is
// registered in activation.cc beside ONNX Gelu-20, whose kernel it shares.
//
// Written to be obviously right rather than fast (the optimized kernels in src/kernels are
// tested against these): every element is read into double, computed in double and
// written back in the tensor's own type (float, double, float16, bfloat16).
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/ranges.h>

#include "ops/attention_layout.h"
#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "ops/reference_math.h"
#include "ops/registry.h"

namespace onnxkit {

void reference_normalize_row(double* row, int64_t n, double epsilon) {
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += row[i];
  mean /= static_cast<double>(std::max<int64_t>(n, 1));
  double var = 0;
  for (int64_t i = 0; i < n; ++i) var += (row[i] - mean) * (row[i] - mean);
  var /= static_cast<double>(std::max<int64_t>(n, 1));
  const double inv_std = 1.0 / std::sqrt(var + epsilon);
  for (int64_t i = 0; i < n; ++i) row[i] = (row[i] - mean) * inv_std;
}

void reference_softmax_row(double* row, int64_t n) {
  if (n == 0) return;
  double max = row[0];
  for (int64_t i = 1; i < n; ++i) max = std::max(max, row[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    row[i] = std::exp(row[i] - max);
    sum += row[i];
  }
  for (int64_t i = 0; i < n; ++i) row[i] /= sum;
}

void reference_attention(const double* q, const AttentionView& qv, const double* k,
                         const AttentionView& kv, const double* v, const AttentionView& vv,
                         double* y, const AttentionView& yv, double scale,
                         const std::function<double(double score, int64_t index)>& terms) {
  const int64_t batch = qv.dims[0], heads = qv.dims[1], sq = qv.dims[2], depth = qv.dims[3];
  const int64_t sk = kv.dims[2], dv = vv.dims[3];
  std::vector<double> row(static_cast<size_t>(sk));
  auto at = [](const AttentionView& view, int64_t b, int64_t h, int64_t i, int64_t j) {
    return b * view.strides[0] + h * view.strides[1] + i * view.strides[2] + j * view.strides[3];
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < sq; ++i) {
        for (int64_t j = 0; j < sk; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < depth; ++c) dot += q[at(qv, b, h, i, c)] * k[at(kv, b, h, j, c)];
          row[j] = terms(scale * dot, ((b * heads + h) * sq + i) * sk + j);
        }
        reference_softmax_row(row.data(), sk);
        for (int64_t j = 0; j < sk; ++j) {
          for (int64_t c = 0; c < dv; ++c) y[at(yv, b, h, i, c)] += row[j] * v[at(vv, b, h, j, c)];
        }
      }
    }
  }
}

namespace {

// LayerNormalization(X, Scale, B?) -> Y: ONNX opset 17's op, Y output only.
class LayerNormalizationKernel : public OpKernel {
 public:
  explicit LayerNormalizationKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)), epsilon_(context.attr_float("epsilon", 1e-5f)) {
    for (size_t i = 1; i < context.node().outputs().size(); ++i) {
      if (context.node().output(i)) {
        context.fail("only the Y output is supported (Mean and InvStdDev are not)");
      }
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    if (rank == 0) context.fail("input X is a scalar; it needs rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t cols = shape_numel(norm_shape);
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    const std::vector<double> scale = read_doubles(context, context.input(1), "Scale");
    const std::vector<int64_t> scale_at =
        broadcast_offsets(context, context.input(1), norm_shape, "Scale");
    std::vector<double> bias;
    std::vector<int64_t> bias_at;
    if (context.has_input(2)) {
      bias = read_doubles(context, context.input(2), "B");
      bias_at = broadcast_offsets(context, context.input(2), norm_shape, "B");
    }
    std::vector<double> y = read_doubles(context, x, "X");
    for (int64_t r = 0; r < rows; ++r) {
      double* row = y.data() + r * cols;
      reference_normalize_row(row, cols, epsilon_);
      for (int64_t c = 0; c < cols; ++c) {
        row[c] = row[c] * scale[scale_at[c]] + (bias.empty() ? 0.0 : bias[bias_at[c]]);
      }
    }
    write_doubles(context, 0, x.dtype(), x.shape(), y);
  }

 private:
  int64_t axis_;
  float epsilon_;
};

// SkipLayerNormalization(X, Skip, Gamma, Beta?, Bias?) -> Y, Sum?
class SkipLayerNormalizationKernel : public OpKernel {
 public:
  explicit SkipLayerNormalizationKernel(const KernelCreateContext& context)
      : epsilon_(context.attr_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& skip = context.input(1);
    if (x.rank() == 0) context.fail("input X is a scalar; it needs rank >= 1");
    if (skip.shape() != x.shape()) {
      context.fail("Skip has shape {}; it needs X's shape {}", shape_to_string(skip.shape()),
                   shape_to_string(x.shape()));
    }
    if (skip.dtype() != x.dtype()) {
      context.fail("Skip has type {}, X has {}", dtype_name(skip.dtype()), dtype_name(x.dtype()));
    }
    const int64_t cols = x.shape().back();
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    const std::vector<double> gamma = channel_vector(context, 2, "Gamma", cols);
    const std::vector<double> beta = channel_vector(context, 3, "Beta", cols);
    const std::vector<double> bias = channel_vector(context, 4, "Bias", cols);
    std::vector<double> sum = read_doubles(context, x, "X");
    const std::vector<double> skip_values = read_doubles(context, skip, "Skip");
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i] += skip_values[i] + (bias.empty() ? 0.0 : bias[i % cols]);
    }
    std::vector<double> y = sum;
    for (int64_t r = 0; r < rows; ++r) {
      double* row = y.data() + r * cols;
      reference_normalize_row(row, cols, epsilon_);
      for (int64_t c = 0; c < cols; ++c) {
        row[c] = row[c] * gamma[c] + (beta.empty() ? 0.0 : beta[c]);
      }
    }
    write_doubles(context, 0, x.dtype(), x.shape(), y);
    if (context.wants_output(1)) write_doubles(context, 1, x.dtype(), x.shape(), sum);
  }

 private:
  // Input `index` as `cols` values (empty when the optional input is absent).
  static std::vector<double> channel_vector(const KernelContext& context, size_t index,
                                            std::string_view what, int64_t cols) {
    if (!context.has_input(index)) {
      if (index == 2) context.fail("input Gamma is required");
      return {};
    }
    const Tensor& t = context.input(index);
    if (t.rank() != 1 || t.shape()[0] != cols) {
      context.fail("{} has shape {}; it needs [{}] (the last dim of X)", what,
                   shape_to_string(t.shape()), cols);
    }
    return read_doubles(context, t, what);
  }

  float epsilon_;
};

// BiasSoftmax(X, Bias) -> Y = Softmax(X + Bias) over one axis.
class BiasSoftmaxKernel : public OpKernel {
 public:
  explicit BiasSoftmaxKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& bias = context.input(1);
    const auto rank = static_cast<int64_t>(x.rank());
    if (rank == 0) context.fail("input X is a scalar; it needs rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    std::vector<double> y = read_doubles(context, x, "X");
    const std::vector<double> b = read_doubles(context, bias, "Bias");
    const std::vector<int64_t> bias_at = broadcast_offsets(context, bias, x.shape(), "Bias");
    for (size_t i = 0; i < y.size(); ++i) y[i] += b[bias_at[i]];
    int64_t outer = 1, inner = 1;
    const int64_t dim = x.shape()[axis];
    for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x.shape()[i];
    std::vector<double> line(static_cast<size_t>(dim));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        double* base = y.data() + o * dim * inner + i;
        for (int64_t k = 0; k < dim; ++k) line[k] = base[k * inner];
        reference_softmax_row(line.data(), dim);
        for (int64_t k = 0; k < dim; ++k) base[k * inner] = line[k];
      }
    }
    write_doubles(context, 0, x.dtype(), x.shape(), y);
  }

 private:
  int64_t axis_;
};

// Attention(Q, K, V, Mask?, Keep?) -> Y: scaled dot-product attention per batch and head,
// each operand read (and Y written) through the strides its perm attribute gives.
class AttentionKernel : public OpKernel {
 public:
  explicit AttentionKernel(const KernelCreateContext& context)
      : has_scale_(context.has_attribute("scale")),
        scale_(context.attr_float("scale", 1.0f)),
        masked_value_(context.attr_float("masked_value", -std::numeric_limits<float>::infinity())),
        layout_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& q = context.input(0);
    const Tensor& k = context.input(1);
    const Tensor& v = context.input(2);
    for (const auto& [t, name] : {std::pair{&q, "Q"}, {&k, "K"}, {&v, "V"}}) {
      if (t->rank() != 4) {
        context.fail("{} has shape {}; it needs rank 4", name, shape_to_string(t->shape()));
      }
      if (t->dtype() != q.dtype()) {
        context.fail("{} has type {}, Q has {}", name, dtype_name(t->dtype()),
                     dtype_name(q.dtype()));
      }
    }
    const AttentionView qv = layout_.input_view(0, q.shape());
    const AttentionView kv = layout_.input_view(1, k.shape());
    const AttentionView vv = layout_.input_view(2, v.shape());
    const int64_t batch = qv.dims[0], heads = qv.dims[1], sq = qv.dims[2], depth = qv.dims[3];
    const int64_t sk = kv.dims[2], dv = vv.dims[3];
    if (kv.dims[0] != batch || kv.dims[1] != heads || kv.dims[3] != depth) {
      context.fail(
          "K is [{}] as [B, H, Sk, D]; with Q [{}] as [B, H, Sq, D] it needs [{}, {}, Sk, {}]",
          fmt::join(kv.dims, ", "), fmt::join(qv.dims, ", "), batch, heads, depth);
    }
    if (vv.dims[0] != batch || vv.dims[1] != heads || vv.dims[2] != sk) {
      context.fail("V is [{}] as [B, H, Sk, Dv]; it needs [{}, {}, {}, Dv]",
                   fmt::join(vv.dims, ", "), batch, heads, sk);
    }
    const Shape scores_shape{batch, heads, sq, sk};
    std::vector<double> mask;
    std::vector<int64_t> mask_at;
    if (context.has_input(3)) {
      mask = read_doubles(context, context.input(3), "Mask");
      mask_at = broadcast_offsets(context, context.input(3), scores_shape, "Mask");
    }
    std::vector<int64_t> keep_at;
    const bool* keep = nullptr;
    if (context.has_input(4)) {
      const Tensor& keep_tensor = context.input(4);
      if (keep_tensor.dtype() != DType::kBool) {
        context.fail("Keep has type {}; it needs bool", dtype_name(keep_tensor.dtype()));
      }
      keep = keep_tensor.data<bool>();
      keep_at = broadcast_offsets(context, keep_tensor, scores_shape, "Keep");
    }
    const double scale =
        has_scale_ ? scale_ : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(depth, 1)));

    const std::vector<double> qd = read_doubles(context, q, "Q");
    const std::vector<double> kd = read_doubles(context, k, "K");
    const std::vector<double> vd = read_doubles(context, v, "V");
    const AttentionView yv = layout_.output_view({batch, heads, sq, dv});
    std::vector<double> y(static_cast<size_t>(batch * heads * sq * dv), 0.0);
    reference_attention(qd.data(), qv, kd.data(), kv, vd.data(), vv, y.data(), yv, scale,
                        [&](double s, int64_t at) {
                          if (!mask.empty()) s += mask[mask_at[at]];
                          if (keep && !keep[keep_at[at]]) s = masked_value_;
                          return s;
                        });
    write_doubles(context, 0, q.dtype(), layout_.output_shape({batch, heads, sq, dv}), y);
  }

 private:
  bool has_scale_;
  float scale_;
  float masked_value_;
  AttentionLayout layout_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// SkipLayerNormalization: Y and Sum like X.
void infer_skip_layer_normalization(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type) return;
  context.set_output(0, *type);
  context.set_output(1, *type);
}

// Attention: Y [B, H, Sq, Dv] (B, H, Sq from Q, Dv from V, each read through its perm) stored
// through y_perm.
void infer_attention(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const AttentionLayout layout(attribute_reader(context));
  std::array<Dim, 4> logical;
  const auto logical_dim = [&](size_t input, size_t d) {
    const std::vector<Dim>* stored = input_dims(context, input);
    if (!stored) return Dim{};
    if (stored->size() != 4) fail("input {} has rank {}; it needs rank 4", input, stored->size());
    return (*stored)[static_cast<size_t>(layout.perm(input)[d])];
  };
  for (size_t d = 0; d < 3; ++d) logical[d] = logical_dim(0, d);
  logical[3] = logical_dim(2, 3);
  std::vector<Dim> out(4);
  for (size_t j = 0; j < 4; ++j) out[j] = logical[static_cast<size_t>(layout.perm(3)[j])];
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_fused_transformer_ops(OpRegistry& registry) {
  const std::string domain(kOnnxkitDomain);
  registry.add(domain, "LayerNormalization", 1, kernel_factory<LayerNormalizationKernel>());
  registry.add(domain, "SkipLayerNormalization", 1, kernel_factory<SkipLayerNormalizationKernel>());
  registry.add(domain, "BiasSoftmax", 1, kernel_factory<BiasSoftmaxKernel>());
  registry.add(domain, "Attention", 1, kernel_factory<AttentionKernel>());

  // Type inference, every version.
  registry.set_type_rule(domain, "LayerNormalization", infer_same_as_input);
  registry.set_type_rule(domain, "SkipLayerNormalization", infer_skip_layer_normalization);
  registry.set_type_rule(domain, "BiasSoftmax", infer_same_as_input);
  registry.set_type_rule(domain, "Attention", infer_attention);
}

}  // namespace onnxkit
