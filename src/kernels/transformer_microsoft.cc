// Optimized kernels of ONNX Runtime's com.microsoft transformer ops (ops/transformer_microsoft.h)
// on onnxkit's own kernels, no second implementation of any of them:
// - Attention: the QKV projection on the MatMul kernel's prepacked oneDNN product
//   (ConstantFloatMatMul), the heads on com.onnxkit Attention's engine (FloatAttention: AVX-512
//   tiles or oneDNN blocks) reading Q, K and V in place in the projection through strides,
//   with ORT's mask as its additive Mask;
// - QAttention: the projection on the int8 product of MatMulIntegerToFloat (Int8FloatProduct:
//   exact int32 products, then float(acc) * scale + bias as ORT), the heads as Attention;
// - EmbedLayerNormalization (and QEmbedLayerNormalization, its tables dequantized once when
//   they are constants): vector_math's add3 and layer_norm_row, as onnxkit's
//   SkipLayerNormalization, whose fast kernel (fast_normalization.cc) runs com.microsoft's too;
// - Gelu, BiasGelu, FastGelu: vector_math's bias rows and Gelu / GeluTanh maps.
// Each hands what it does not cover (other dtypes, non-constant weights) to the reference
// kernel.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "core/parallel.h"
#include "ir/domain.h"
#include "kernels/attention.h"
#include "kernels/dnnl_matmul.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/int8_kernel_util.h"
#include "kernels/vector_math.h"
#include "ops/registry.h"
#include "ops/transformer_microsoft.h"

namespace onnxkit {
namespace {

const Tensor* optional_input(const KernelContext& context, size_t i) {
  return context.has_input(i) ? &context.input(i) : nullptr;
}

// Rows per parallel chunk so that a chunk holds at least kMinParallelCompute elements.
int64_t rows_per_chunk(int64_t cols) {
  return std::max<int64_t>(1, kMinParallelCompute / std::max<int64_t>(cols, 1));
}

// ---------------------------------------------------------------------------------------
// Attention and QAttention.

template <bool kQuantized>
class MsAttentionFastKernel : public OpKernel {
  // Inputs: Attention (input, weights, bias, mask_index, past, attention_bias);
  // QAttention (input, weight, bias, input_scale, weight_scale, mask_index, input_zp,
  // weight_zp, past).
  static constexpr size_t kMask = kQuantized ? 5 : 3, kPast = kQuantized ? 8 : 4;

 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    const Tensor* weights = constant(context, 1);
    const Tensor* bias = constant(context, 2);
    if (!weights || weights->rank() != 2 || weights->numel() == 0) return nullptr;
    if (present(context, 2) &&
        (!bias || bias->dtype() != DType::kFloat || bias->shape() != Shape{weights->shape()[1]})) {
      return nullptr;
    }
    if constexpr (kQuantized) {
      if (!bias || !constant_matmul_weights(context, 1, 7)) return nullptr;
      const Tensor* scale = constant(context, 4);
      if (!scale || scale->dtype() != DType::kFloat ||
          !per_channel_shape(*scale, weights->shape()[1])) {
        return nullptr;
      }
    } else {
      if (weights->dtype() != DType::kFloat || present(context, 6)) return nullptr;
    }
    return std::make_unique<MsAttentionFastKernel>(context);
  }

  explicit MsAttentionFastKernel(const KernelCreateContext& context)
      : attributes_(context), reference_(context.reference_kernel()) {
    const Tensor& weights = *constant(context, 1);
    if (present(context, 2)) bias_ = float_values(*constant(context, 2));
    if constexpr (kQuantized) {
      product_ =
          make_int8_float_product(weights, present(context, 7) ? int8_values(*constant(context, 7))
                                                               : std::vector<int32_t>{0});
      weight_scales_ = float_values(*constant(context, 4));
    } else {
      matmul_ = make_constant_float_matmul(weights);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor* past = optional_input(context, kPast);
    const bool float_operands = (!past || past->dtype() == DType::kFloat);
    if constexpr (kQuantized) {
      const Tensor& input_scale = context.input(3);
      const Tensor* zp = optional_input(context, 6);
      if (!float_operands || !is_int8(input.dtype()) || input_scale.dtype() != DType::kFloat ||
          input_scale.numel() != 1 || (zp && (zp->numel() != 1 || zp->dtype() != input.dtype()))) {
        return reference_->compute(context);
      }
    } else {
      if (!float_operands || input.dtype() != DType::kFloat) return reference_->compute(context);
    }
    const Tensor& weights = context.input(1);
    const Tensor* bias = optional_input(context, 2);
    const MsAttentionShape shape =
        ms_attention_shape(context, attributes_, input.shape(), weights.shape(), bias, past);
    if (shape.head_size == 0 || shape.v_head_size == 0) return reference_->compute(context);
    const int64_t B = shape.batch, S = shape.sequence, P = shape.past_sequence,
                  T = shape.total_sequence, N = attributes_.num_heads, H = shape.head_size,
                  Hv = shape.v_head_size, W = shape.qkv_width();

    // QKV [B, S, W].
    thread_local std::vector<float> qkv_buffer;
    qkv_buffer.resize(static_cast<size_t>(B * S * W));
    float* qkv = qkv_buffer.data();
    if (B * S > 0) project(context, input, B * S, qkv);

    const MsAttentionMask mask =
        ms_attention_mask(context, attributes_, shape, optional_input(context, kMask),
                          kQuantized ? nullptr : optional_input(context, 5));
    Tensor& output =
        context.allocate_output_uninitialized(0, DType::kFloat, {B, S, shape.v_hidden});
    if (output.numel() == 0) {
      if (context.wants_output(1)) context.allocate_output(1, DType::kFloat, {2, B, N, T, H});
      return;
    }
    AttentionOperands o;
    o.q = qkv;
    o.qv = {{B, N, S, H}, {S * W, H, W, 1}};
    // K and V: in place in QKV, or in present ([2, B, N, T, H], past first) when there is a
    // past or present is wanted.
    if (past || context.wants_output(1)) {
      Tensor& present = context.allocate_output_uninitialized(1, DType::kFloat, {2, B, N, T, H});
      float* keys = present.mutable_data<float>();
      float* values = keys + B * N * T * H;
      const float* past_data = past ? past->data<float>() : nullptr;
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t n = 0; n < N; ++n) {
          const int64_t head = (b * N + n) * T * H;
          if (P > 0) {
            const int64_t from = (b * N + n) * P * H;
            std::memcpy(keys + head, past_data + from, static_cast<size_t>(P * H) * sizeof(float));
            std::memcpy(values + head, past_data + B * N * P * H + from,
                        static_cast<size_t>(P * H) * sizeof(float));
          }
          for (int64_t s = 0; s < S; ++s) {
            const float* row = qkv + (b * S + s) * W;
            std::memcpy(keys + head + (P + s) * H, row + shape.q_hidden + n * H,
                        static_cast<size_t>(H) * sizeof(float));
            std::memcpy(values + head + (P + s) * H, row + shape.q_hidden + shape.k_hidden + n * H,
                        static_cast<size_t>(H) * sizeof(float));
          }
        }
      }
      o.k = keys;
      o.kv = {{B, N, T, H}, {N * T * H, T * H, H, 1}};
      o.v = values;
      o.vv = {{B, N, T, H}, {N * T * H, T * H, H, 1}};
    } else {
      o.k = qkv + shape.q_hidden;
      o.kv = {{B, N, S, H}, {S * W, H, W, 1}};
      o.v = qkv + shape.q_hidden + shape.k_hidden;
      o.vv = {{B, N, S, Hv}, {S * W, Hv, W, 1}};
    }
    o.y = output.mutable_data<float>();
    o.yv = {{B, N, S, Hv}, {S * shape.v_hidden, Hv, shape.v_hidden, 1}};
    o.scale = shape.scale;
    if (!mask.empty()) {
      o.mask = mask.values.data();
      o.mask_strides = mask.strides();
    }
    if (T == 0) {
      std::fill(o.y, o.y + output.numel(), 0.0f);
      return;
    }
    attention_.run(context, o);
  }

 private:
  void project(KernelContext& context, const Tensor& input, int64_t rows, float* qkv) const {
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    if constexpr (kQuantized) {
      const float input_scale = context.input(3).data<float>()[0];
      const int32_t input_zp = context.has_input(6) ? int8_scalar(context.input(6)) : 0;
      thread_local std::vector<float> multipliers;
      multipliers.resize(weight_scales_.size());
      for (size_t j = 0; j < weight_scales_.size(); ++j) {
        multipliers[j] = input_scale * weight_scales_[j];
      }
      product_->run(int8_data(input), rows, input_zp, multipliers[0],
                    multipliers.size() == 1 ? nullptr : multipliers.data(), bias, qkv);
    } else {
      // The product writes into a tensor view of the thread's QKV buffer.
      Shape shape = input.shape();
      shape.back() = matmul_->n();
      Tensor out = Tensor::external(DType::kFloat, shape, static_cast<void*>(qkv));
      matmul_->run(context, input, bias, out);
    }
  }

  MsAttentionAttributes attributes_;
  std::unique_ptr<OpKernel> reference_;
  std::vector<float> bias_;
  std::unique_ptr<const ConstantFloatMatMul> matmul_;
  std::unique_ptr<const Int8FloatProduct> product_;
  std::vector<float> weight_scales_;
  FloatAttention attention_;
};

// ---------------------------------------------------------------------------------------
// EmbedLayerNormalization and QEmbedLayerNormalization.

template <bool kQuantized>
class EmbedLayerNormFastKernel : public OpKernel {
 public:
  static std::unique_ptr<OpKernel> create(const KernelCreateContext& context) {
    if constexpr (kQuantized) {
      // Tables, gamma and beta (2-6), their scales (8-12) and zero points (13-17) constant.
      for (size_t i : {2, 3, 5, 6, 8, 9, 11, 12}) {
        if (!constant(context, i)) return nullptr;
      }
      for (size_t i : {4, 10, 13, 14, 15, 16, 17}) {
        if (present(context, i) && !constant(context, i)) return nullptr;
      }
    } else if (known_non_float(context, 2)) {
      return nullptr;
    }
    return std::make_unique<EmbedLayerNormFastKernel>(context);
  }

  explicit EmbedLayerNormFastKernel(const KernelCreateContext& context)
      : epsilon_(context.attr_float("epsilon", 1e-12f)), reference_(context.reference_kernel()) {
    if constexpr (kQuantized) {
      for (size_t k = 0; k < 5; ++k) {
        const Tensor* table = constant(context, 2 + k);
        if (!table) continue;  // no segment table
        const Tensor* scale = constant(context, 8 + k);
        const Tensor* zp = present(context, 13 + k) ? constant(context, 13 + k) : nullptr;
        if (!is_int8(table->dtype()) || scale->dtype() != DType::kFloat || scale->numel() != 1 ||
            (zp && (zp->numel() != 1 || zp->dtype() != table->dtype()))) {
          valid_ = false;  // the reference kernel reports it
          return;
        }
        const std::vector<int32_t> q = int8_values(*table);
        const int32_t z = zp ? int8_scalar(*zp) : 0;
        const float s = scale->data<float>()[0];
        Tensor dequantized(DType::kFloat, table->shape());
        float* out = dequantized.mutable_data<float>();
        for (size_t i = 0; i < q.size(); ++i) out[i] = static_cast<float>(q[i] - z) * s;
        tables_[k] = std::move(dequantized);
      }
    }
  }

  void compute(KernelContext& context) const override {
    EmbedLayerNormInputs in;
    in.input_ids = &context.input(0);
    in.segment_ids = optional_input(context, 1);
    in.mask = optional_input(context, 7);
    if constexpr (kQuantized) {
      if (!valid_) return reference_->compute(context);
      in.word = &*tables_[0];
      in.position = &*tables_[1];
      in.segment = tables_[2] ? &*tables_[2] : nullptr;
      in.gamma = &*tables_[3];
      in.beta = &*tables_[4];
    } else {
      in.word = &context.input(2);
      in.position = &context.input(3);
      in.segment = optional_input(context, 4);
      in.gamma = &context.input(5);
      in.beta = optional_input(context, 6);
      in.position_ids = optional_input(context, 8);
      for (const Tensor* t : {in.word, in.position, in.segment, in.gamma, in.beta}) {
        if (t && t->dtype() != DType::kFloat) return reference_->compute(context);
      }
    }
    const int64_t hidden = check_embed_layer_norm(context, in);
    const int64_t batch = in.input_ids->shape()[0], sequence = in.input_ids->shape()[1];
    const int64_t tokens = batch * sequence;
    // Every id is checked before any row is written (a bad id fails naming its token).
    std::vector<EmbeddingRows> rows(static_cast<size_t>(tokens));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < sequence; ++s)
        rows[b * sequence + s] = embedding_rows(context, in, b, s);
    }
    float* y = context.allocate_output_uninitialized(0, DType::kFloat, {batch, sequence, hidden})
                   .mutable_data<float>();
    const bool wants_sum = !kQuantized && context.wants_output(2);
    float* sums =
        wants_sum
            ? context.allocate_output_uninitialized(2, DType::kFloat, {batch, sequence, hidden})
                  .mutable_data<float>()
            : nullptr;
    const float* word = in.word->data<float>();
    const float* position = in.position->data<float>();
    const float* segment = in.segment ? in.segment->data<float>() : nullptr;
    const float* gamma = in.gamma->data<float>();
    const float* beta = in.beta ? in.beta->data<float>() : nullptr;
    parallel_for(tokens, rows_per_chunk(hidden), [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      for (int64_t t = begin; t < end; ++t) {
        const EmbeddingRows& r = rows[static_cast<size_t>(t)];
        // Without an embedding_sum output the sum lives in Y's row until it is normalized.
        float* sum = sums ? sums + t * hidden : y + t * hidden;
        k.add3(word + r.word * hidden, position + r.position * hidden,
               r.segment >= 0 ? segment + r.segment * hidden : nullptr, sum, hidden);
        k.layer_norm_row(sum, gamma, beta, epsilon_, y + t * hidden, hidden);
      }
    });
    if (context.wants_output(1)) {
      const std::vector<int32_t> index = embed_mask_index(in, batch, sequence);
      Tensor& out = context.allocate_output(1, DType::kInt32, {batch});
      std::copy(index.begin(), index.end(), out.mutable_data<int32_t>());
    }
  }

 private:
  float epsilon_;
  std::unique_ptr<OpKernel> reference_;
  std::array<std::optional<Tensor>, 5> tables_;  // quantized: dequantized inputs 2-6
  bool valid_ = true;
};

// ---------------------------------------------------------------------------------------
// Gelu, BiasGelu (input 1 a bias row), FastGelu (optional bias row; tanh form).

class MsGeluFastKernel : public OpKernel {
 public:
  MsGeluFastKernel(const KernelCreateContext& context, UnaryOp op, bool may_have_bias)
      : op_(op),
        has_bias_(may_have_bias && present(context, 1)),
        reference_(context.reference_kernel()) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor* bias = has_bias_ ? &context.input(1) : nullptr;
    const int64_t cols = x.rank() == 0 ? 1 : x.shape().back();
    if (x.dtype() != DType::kFloat || (bias && (bias->dtype() != DType::kFloat ||
                                                bias->rank() != 1 || bias->shape()[0] != cols))) {
      return reference_->compute(context);
    }
    Tensor& y = context.allocate_output_uninitialized(0, DType::kFloat, x.shape());
    if (x.numel() == 0) return;
    const int64_t rows = x.numel() / cols;
    const float* px = x.data<float>();
    const float* pb = bias ? bias->data<float>() : nullptr;
    float* py = y.mutable_data<float>();
    parallel_for(rows, rows_per_chunk(cols), [&](int64_t begin, int64_t end) {
      const VectorKernels& k = vector_kernels();
      const int64_t n = (end - begin) * cols;
      const float* in = px + begin * cols;
      float* out = py + begin * cols;
      if (pb) {
        k.binary_repeat[0][static_cast<int>(BinaryOp::kAdd)](in, pb, cols, out, end - begin);
        in = out;
      }
      k.unary[static_cast<int>(op_)](in, out, n, 0.0f, 0.0f);
    });
  }

 private:
  UnaryOp op_;
  bool has_bias_;
  std::unique_ptr<OpKernel> reference_;
};

}  // namespace

void register_transformer_microsoft_kernels(OpRegistry& registry) {
  const std::string ms(kMicrosoftDomain);
  registry.add_optimized(ms, "Attention", 1, &MsAttentionFastKernel<false>::create);
  registry.add_optimized(ms, "QAttention", 1, &MsAttentionFastKernel<true>::create);
  registry.add_optimized(ms, "EmbedLayerNormalization", 1,
                         &EmbedLayerNormFastKernel<false>::create);
  registry.add_optimized(ms, "QEmbedLayerNormalization", 1,
                         &EmbedLayerNormFastKernel<true>::create);
  registry.add_optimized(ms, "Gelu", 1, [](const KernelCreateContext& context) {
    return std::make_unique<MsGeluFastKernel>(context, UnaryOp::kGelu, false);
  });
  registry.add_optimized(ms, "BiasGelu", 1, [](const KernelCreateContext& context) {
    return std::make_unique<MsGeluFastKernel>(context, UnaryOp::kGelu, true);
  });
  registry.add_optimized(ms, "FastGelu", 1, [](const KernelCreateContext& context) {
    return std::make_unique<MsGeluFastKernel>(context, UnaryOp::kGeluTanh, true);
  });
}

}  // namespace onnxkit
