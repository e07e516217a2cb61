// Op family: ONNX Runtime's com.microsoft transformer ops, as its transformer optimizer and
// its dynamic quantization write them (ops/transformer_microsoft.h): Attention, QAttention,
// EmbedLayerNormalization, QEmbedLayerNormalization, SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, BiasGelu, FastGelu, Gelu, QuickGelu and BiasAdd.
// Reference kernels, written to be obviously right: values read into double, computed in
// double, written back in the output's type (float, float16, bfloat16). Integer products are
// exact. The optimized kernels (kernels/transformer_microsoft.cc) are tested against these.
#include "ops/transformer_microsoft.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "ir/domain.h"
#include "ops/op_utils.h"
#include "ops/reference_math.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {

// ---------------------------------------------------------------------------------------
// Shared parts (transformer_microsoft.h).

MsAttentionAttributes::MsAttentionAttributes(const KernelCreateContext& context)
    : num_heads(context.attr_int("num_heads")),
      unidirectional(context.attr_int("unidirectional", 0) != 0),
      mask_filter_value(context.attr_float("mask_filter_value", -10000.0f)),
      qkv_hidden_sizes(context.attr_ints("qkv_hidden_sizes")) {
  if (context.has_attribute("scale")) scale = context.attr_float("scale");
  if (num_heads < 1) context.fail("num_heads is {}; it needs to be at least 1", num_heads);
  if (context.attr_int("do_rotary", 0) != 0) {
    context.fail("do_rotary = 1 (rotary embedding inside Attention) is not supported");
  }
  if (context.attr_int("past_present_share_buffer", 0) != 0) {
    context.fail("past_present_share_buffer = 1 is not supported");
  }
  if (!qkv_hidden_sizes.empty()) {
    if (qkv_hidden_sizes.size() != 3) {
      context.fail("qkv_hidden_sizes has {} values; it needs 3 (Q, K, V)", qkv_hidden_sizes.size());
    }
    if (qkv_hidden_sizes[0] != qkv_hidden_sizes[1]) {
      context.fail("qkv_hidden_sizes gives Q {} and K {}; they must be equal", qkv_hidden_sizes[0],
                   qkv_hidden_sizes[1]);
    }
    for (int64_t size : qkv_hidden_sizes) {
      if (size < 1) context.fail("qkv_hidden_sizes holds {}; sizes must be positive", size);
    }
  }
}

MsAttentionShape ms_attention_shape(const KernelContext& context,
                                    const MsAttentionAttributes& attributes, const Shape& input,
                                    const Shape& weights, const Tensor* bias, const Tensor* past) {
  if (input.size() != 3) {
    context.fail("input has shape {}; it needs [batch, sequence, hidden]", shape_to_string(input));
  }
  if (weights.size() != 2 || weights[0] != input[2]) {
    context.fail("weights have shape {}; with input {} they need [{}, Q + K + V hidden]",
                 shape_to_string(weights), shape_to_string(input), input[2]);
  }
  MsAttentionShape shape;
  shape.batch = input[0];
  shape.sequence = input[1];
  shape.input_hidden = input[2];
  const int64_t width = weights[1];
  if (attributes.qkv_hidden_sizes.empty()) {
    if (width % 3 != 0) {
      context.fail(
          "weights have {} columns, not 3 equal parts (Q, K, V); qkv_hidden_sizes is "
          "not given",
          width);
    }
    shape.q_hidden = shape.k_hidden = shape.v_hidden = width / 3;
  } else {
    shape.q_hidden = attributes.qkv_hidden_sizes[0];
    shape.k_hidden = attributes.qkv_hidden_sizes[1];
    shape.v_hidden = attributes.qkv_hidden_sizes[2];
    if (shape.qkv_width() != width) {
      context.fail("weights have {} columns; qkv_hidden_sizes add up to {}", width,
                   shape.qkv_width());
    }
  }
  const int64_t heads = attributes.num_heads;
  if (shape.q_hidden % heads != 0 || shape.v_hidden % heads != 0) {
    context.fail("num_heads {} does not divide the hidden sizes (Q/K {}, V {})", heads,
                 shape.q_hidden, shape.v_hidden);
  }
  shape.head_size = shape.q_hidden / heads;
  shape.v_head_size = shape.v_hidden / heads;
  if (bias && (bias->rank() != 1 || bias->shape()[0] != width)) {
    context.fail("bias has shape {}; it needs [{}] (the weights' columns)",
                 shape_to_string(bias->shape()), width);
  }
  if (past) {
    const Shape& p = past->shape();
    if (shape.q_hidden != shape.v_hidden) {
      context.fail("past is given but Q/K and V hidden sizes differ ({} and {})", shape.q_hidden,
                   shape.v_hidden);
    }
    if (p.size() != 5 || p[0] != 2 || p[1] != shape.batch || p[2] != heads ||
        p[4] != shape.head_size) {
      context.fail("past has shape {}; it needs [2, {}, {}, past_sequence, {}]", shape_to_string(p),
                   shape.batch, heads, shape.head_size);
    }
    shape.past_sequence = p[3];
  }
  shape.total_sequence = shape.past_sequence + shape.sequence;
  shape.scale = attributes.scale
                    ? *attributes.scale
                    : 1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(shape.head_size, 1)));
  return shape;
}

MsAttentionMask ms_attention_mask(const KernelContext& context,
                                  const MsAttentionAttributes& attributes,
                                  const MsAttentionShape& shape, const Tensor* mask_index,
                                  const Tensor* attention_bias) {
  MsAttentionMask mask;
  if (!mask_index && !attributes.unidirectional && !attention_bias) return mask;
  const int64_t b_count = shape.batch, s_count = shape.sequence, t_count = shape.total_sequence;
  const int64_t past = shape.past_sequence;
  const float filter = attributes.mask_filter_value;
  std::vector<float> base(static_cast<size_t>(b_count * s_count * t_count), 0.0f);
  if (mask_index) {
    if (mask_index->dtype() != DType::kInt32) {
      context.fail("mask_index has type {}; it needs int32", dtype_name(mask_index->dtype()));
    }
    const Shape& m = mask_index->shape();
    const int32_t* values = mask_index->data<int32_t>();
    if (m.size() == 1 && (m[0] == b_count || m[0] == 2 * b_count)) {
      // Key lengths: positions from the end on are padding; with 2B values the second half
      // gives the first position that is not left padding.
      for (int64_t b = 0; b < b_count; ++b) {
        const int64_t end = std::clamp<int64_t>(values[b], 0, t_count);
        const int64_t start =
            m[0] == 2 * b_count ? std::clamp<int64_t>(values[b + b_count], 0, t_count) : 0;
        for (int64_t s = 0; s < s_count; ++s) {
          float* row = base.data() + (b * s_count + s) * t_count;
          for (int64_t t = end; t < t_count; ++t) row[t] = filter;
          for (int64_t t = 0; t < start; ++t) row[t] = filter;
        }
      }
    } else if (m.size() == 2 && m[0] == b_count && m[1] == t_count) {
      for (int64_t b = 0; b < b_count; ++b) {
        for (int64_t s = 0; s < s_count; ++s) {
          for (int64_t t = 0; t < t_count; ++t) {
            base[(b * s_count + s) * t_count + t] = values[b * t_count + t] > 0 ? 0.0f : filter;
          }
        }
      }
    } else if (m.size() == 3 && m[0] == b_count && m[1] == s_count && m[2] == t_count) {
      for (size_t i = 0; i < base.size(); ++i) base[i] = values[i] > 0 ? 0.0f : filter;
    } else if (m.size() == 4) {
      context.fail(
          "mask_index has shape {}: 4-D masks are not supported (ONNX Runtime's CPU "
          "kernel refuses them too)",
          shape_to_string(m));
    } else {
      context.fail(
          "mask_index has shape {}; with batch {}, sequence {} and total sequence {} "
          "it needs [{}], [{}], [{}, {}] or [{}, {}, {}]",
          shape_to_string(m), b_count, s_count, t_count, b_count, 2 * b_count, b_count, t_count,
          b_count, s_count, t_count);
    }
  }
  if (attributes.unidirectional) {
    for (int64_t b = 0; b < b_count; ++b) {
      for (int64_t s = 0; s < s_count; ++s) {
        float* row = base.data() + (b * s_count + s) * t_count;
        for (int64_t t = past + s + 1; t < t_count; ++t)
          row[t] = std::numeric_limits<float>::lowest();
      }
    }
  }
  const int64_t heads = attributes.num_heads;
  if (!attention_bias) {
    mask.values = std::move(base);
    mask.dims = {b_count, 1, s_count, t_count};
    return mask;
  }
  const Shape& ab = attention_bias->shape();
  if (attention_bias->dtype() != DType::kFloat || ab.size() != 4 ||
      (ab[0] != 1 && ab[0] != b_count) || (ab[1] != 1 && ab[1] != heads) || ab[2] != s_count ||
      ab[3] != t_count) {
    context.fail("attention_bias has {} {}; it needs float [{} or 1, {} or 1, {}, {}]",
                 dtype_name(attention_bias->dtype()), shape_to_string(ab), b_count, heads, s_count,
                 t_count);
  }
  const int64_t out_heads = ab[1];
  mask.dims = {b_count, out_heads, s_count, t_count};
  mask.values.resize(static_cast<size_t>(b_count * out_heads * s_count * t_count));
  const float* bias = attention_bias->data<float>();
  for (int64_t b = 0; b < b_count; ++b) {
    for (int64_t h = 0; h < out_heads; ++h) {
      for (int64_t i = 0; i < s_count * t_count; ++i) {
        const int64_t bias_at = ((ab[0] == 1 ? 0 : b) * ab[1] + h) * s_count * t_count + i;
        mask.values[static_cast<size_t>((b * out_heads + h) * s_count * t_count + i)] =
            base[static_cast<size_t>(b * s_count * t_count + i)] + bias[bias_at];
      }
    }
  }
  return mask;
}

namespace {

void check_int32_ids(const KernelContext& context, const Tensor* t, std::string_view name,
                     int64_t batch, int64_t sequence, bool one_row_allowed) {
  if (!t) return;
  if (t->dtype() != DType::kInt32) {
    context.fail("{} has type {}; it needs int32", name, dtype_name(t->dtype()));
  }
  const Shape& s = t->shape();
  const bool ok =
      s.size() == 2 && s[1] == sequence && (s[0] == batch || (one_row_allowed && s[0] == 1));
  if (!ok) {
    context.fail("{} has shape {}; it needs [{}, {}] like input_ids", name, shape_to_string(s),
                 batch, sequence);
  }
}

}  // namespace

int64_t check_embed_layer_norm(const KernelContext& context, const EmbedLayerNormInputs& in) {
  const Shape& ids = in.input_ids->shape();
  if (in.input_ids->dtype() != DType::kInt32 || ids.size() != 2) {
    context.fail("input_ids is {} {}; it needs int32 [batch, sequence]",
                 dtype_name(in.input_ids->dtype()), shape_to_string(ids));
  }
  const int64_t batch = ids[0], sequence = ids[1];
  check_int32_ids(context, in.segment_ids, "segment_ids", batch, sequence, false);
  check_int32_ids(context, in.mask, "mask", batch, sequence, false);
  check_int32_ids(context, in.position_ids, "position_ids", batch, sequence, true);
  if (in.segment_ids && !in.segment) {
    context.fail("segment_ids is given without segment_embedding");
  }
  if (in.word->rank() != 2) {
    context.fail("word_embedding has shape {}; it needs [vocabulary, hidden]",
                 shape_to_string(in.word->shape()));
  }
  const int64_t hidden = in.word->shape()[1];
  const auto check_table = [&](const Tensor* t, std::string_view name) {
    if (t && (t->rank() != 2 || t->shape()[1] != hidden)) {
      context.fail("{} has shape {}; it needs [rows, {}] (word_embedding's hidden size)", name,
                   shape_to_string(t->shape()), hidden);
    }
  };
  check_table(in.position, "position_embedding");
  check_table(in.segment, "segment_embedding");
  for (const auto& [t, name] : {std::pair{in.gamma, "gamma"}, {in.beta, "beta"}}) {
    if (t && (t->rank() != 1 || t->shape()[0] != hidden)) {
      context.fail("{} has shape {}; it needs [{}]", name, shape_to_string(t->shape()), hidden);
    }
  }
  if (!in.position_ids && in.position->shape()[0] < sequence) {
    context.fail("position_embedding has {} rows; the sequence has {} tokens",
                 in.position->shape()[0], sequence);
  }
  return hidden;
}

EmbeddingRows embedding_rows(const KernelContext& context, const EmbedLayerNormInputs& in,
                             int64_t b, int64_t s) {
  const int64_t sequence = in.input_ids->shape()[1];
  const int64_t token = b * sequence + s;
  const auto checked = [&](int64_t id, const Tensor& table, std::string_view name) {
    if (id < 0 || id >= table.shape()[0]) {
      context.fail("{} of token [{}, {}] is {}; the table has {} rows", name, b, s, id,
                   table.shape()[0]);
    }
    return id;
  };
  EmbeddingRows rows;
  rows.word = checked(in.input_ids->data<int32_t>()[token], *in.word, "input_ids");
  int64_t position = s;
  if (in.position_ids) {
    const int64_t row = in.position_ids->shape()[0] == 1 ? 0 : b;
    position = in.position_ids->data<int32_t>()[row * sequence + s];
  }
  rows.position = checked(position, *in.position, "position id");
  if (in.segment_ids) {
    rows.segment = checked(in.segment_ids->data<int32_t>()[token], *in.segment, "segment_ids");
  }
  return rows;
}

std::vector<int32_t> embed_mask_index(const EmbedLayerNormInputs& in, int64_t batch,
                                      int64_t sequence) {
  std::vector<int32_t> index(static_cast<size_t>(batch), 0);
  if (!in.mask) return index;
  const int32_t* mask = in.mask->data<int32_t>();
  for (int64_t b = 0; b < batch; ++b) {
    index[b] = static_cast<int32_t>(std::count(mask + b * sequence, mask + (b + 1) * sequence, 1));
  }
  return index;
}

namespace {

// ---------------------------------------------------------------------------------------
// Attention and QAttention: the projection differs, the rest is shared.

// Outputs 0 (and present, output 1) from QKV [B, S, Dq + Dk + Dv] in double.
void attention_from_qkv(KernelContext& context, const MsAttentionAttributes& attributes,
                        const MsAttentionShape& shape, const std::vector<double>& qkv, DType dtype,
                        const Tensor* past, const Tensor* mask_index,
                        const Tensor* attention_bias) {
  const int64_t B = shape.batch, S = shape.sequence, P = shape.past_sequence,
                T = shape.total_sequence, N = attributes.num_heads, H = shape.head_size,
                Hv = shape.v_head_size, W = shape.qkv_width();
  const MsAttentionMask mask =
      ms_attention_mask(context, attributes, shape, mask_index, attention_bias);
  // K and V of every position, past first: [B, N, T, H].
  std::vector<double> keys(static_cast<size_t>(B * N * T * H)),
      values(static_cast<size_t>(B * N * T * Hv));
  std::vector<double> past_values;
  if (past) past_values = read_doubles(context, *past, "past");
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t h = 0; h < H; ++h) {
          double k = 0, v = 0;
          if (t < P) {
            k = past_values[static_cast<size_t>(((b * N + n) * P + t) * H + h)];
            v = past_values[static_cast<size_t>((((B + b) * N + n) * P + t) * H + h)];
          } else {
            const double* row = qkv.data() + (b * S + (t - P)) * W;
            k = row[shape.q_hidden + n * H + h];
            v = row[shape.q_hidden + shape.k_hidden + n * Hv + h];
          }
          keys[static_cast<size_t>(((b * N + n) * T + t) * H + h)] = k;
          if (h < Hv) values[static_cast<size_t>(((b * N + n) * T + t) * Hv + h)] = v;
        }
      }
    }
  }
  std::vector<double> out(static_cast<size_t>(B * S * shape.v_hidden), 0.0);
  const AttentionView qv{{B, N, S, H}, {S * W, H, W, 1}};
  const AttentionView kv{{B, N, T, H}, {N * T * H, T * H, H, 1}};
  const AttentionView vv{{B, N, T, Hv}, {N * T * Hv, T * Hv, Hv, 1}};
  const AttentionView yv{{B, N, S, Hv}, {S * shape.v_hidden, Hv, shape.v_hidden, 1}};
  const auto strides = mask.strides();
  reference_attention(qkv.data(), qv, keys.data(), kv, values.data(), vv, out.data(), yv,
                      shape.scale, [&](double score, int64_t index) {
                        if (mask.empty()) return score;
                        const int64_t t = index % T, s = index / T % S, n = index / (T * S) % N,
                                      b = index / (T * S * N);
                        return score + mask.values[static_cast<size_t>(
                                           b * strides[0] + n * strides[1] + s * strides[2] + t)];
                      });
  write_doubles(context, 0, dtype, {B, S, shape.v_hidden}, out);
  if (context.wants_output(1)) {
    std::vector<double> present(keys);
    present.insert(present.end(), values.begin(), values.end());
    write_doubles(context, 1, dtype, {2, B, N, T, H}, present);
  }
}

const Tensor* optional_input(const KernelContext& context, size_t i) {
  return context.has_input(i) ? &context.input(i) : nullptr;
}

// Attention(input, weights, bias?, mask_index?, past?, attention_bias?, past_sequence_length?)
class MsAttentionKernel : public OpKernel {
 public:
  explicit MsAttentionKernel(const KernelCreateContext& context) : attributes_(context) {
    if (present(context, 6)) context.fail("past_sequence_length is not supported");
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& weights = context.input(1);
    const Tensor* bias = optional_input(context, 2);
    const Tensor* past = optional_input(context, 4);
    if (weights.dtype() != input.dtype() || (bias && bias->dtype() != input.dtype())) {
      context.fail("input, weights and bias must have one type (got {}, {}{})",
                   dtype_name(input.dtype()), dtype_name(weights.dtype()),
                   bias ? fmt::format(", {}", dtype_name(bias->dtype())) : std::string());
    }
    const MsAttentionShape shape =
        ms_attention_shape(context, attributes_, input.shape(), weights.shape(), bias, past);
    const int64_t rows = shape.batch * shape.sequence, k = shape.input_hidden,
                  width = shape.qkv_width();
    const std::vector<double> x = read_doubles(context, input, "input");
    const std::vector<double> w = read_doubles(context, weights, "weights");
    std::vector<double> qkv(static_cast<size_t>(rows * width), 0.0);
    if (bias) {
      const std::vector<double> b = read_doubles(context, *bias, "bias");
      for (int64_t r = 0; r < rows; ++r) std::copy(b.begin(), b.end(), qkv.begin() + r * width);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const double a = x[static_cast<size_t>(r * k + c)];
        for (int64_t j = 0; j < width; ++j) qkv[r * width + j] += a * w[c * width + j];
      }
    }
    attention_from_qkv(context, attributes_, shape, qkv, input.dtype(), past,
                       optional_input(context, 3), optional_input(context, 5));
  }

  static bool present(const KernelCreateContext& context, size_t i) {
    return i < context.node().inputs().size() && context.node().inputs()[i] != nullptr;
  }

 private:
  MsAttentionAttributes attributes_;
};

// The values of a u8 / s8 tensor as int32.
std::vector<int32_t> integer_values(const KernelContext& context, const Tensor& t,
                                    std::string_view name) {
  std::vector<int32_t> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kUInt8) {
    std::copy(t.data<uint8_t>(), t.data<uint8_t>() + t.numel(), out.begin());
  } else if (t.dtype() == DType::kInt8) {
    std::copy(t.data<int8_t>(), t.data<int8_t>() + t.numel(), out.begin());
  } else {
    context.fail("{} has type {}; it needs uint8 or int8", name, dtype_name(t.dtype()));
  }
  return out;
}

// A scale or zero point of one value, or `count` values (per column) when allowed.
void check_parameter(const KernelContext& context, const Tensor& t, std::string_view name,
                     int64_t count) {
  if (t.numel() != 1 && (count == 1 || t.numel() != count || t.rank() != 1)) {
    context.fail("{} has shape {}; it needs one value{}", name, shape_to_string(t.shape()),
                 count == 1 ? "" : fmt::format(" or [{}] (one per column)", count));
  }
}

// QAttention(input, weight, bias, input_scale, weight_scale, mask_index?, input_zero_point?,
//            weight_zero_point?, past?)
class QAttentionKernel : public OpKernel {
 public:
  explicit QAttentionKernel(const KernelCreateContext& context) : attributes_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& weight = context.input(1);
    const Tensor& bias = context.input(2);
    const Tensor& input_scale = context.input(3);
    const Tensor& weight_scale = context.input(4);
    const Tensor* past = optional_input(context, 8);
    if (bias.dtype() != DType::kFloat || input_scale.dtype() != DType::kFloat ||
        weight_scale.dtype() != DType::kFloat) {
      context.fail("bias, input_scale and weight_scale must be float32");
    }
    const MsAttentionShape shape =
        ms_attention_shape(context, attributes_, input.shape(), weight.shape(), &bias, past);
    const int64_t rows = shape.batch * shape.sequence, k = shape.input_hidden,
                  width = shape.qkv_width();
    check_parameter(context, input_scale, "input_scale", 1);
    check_parameter(context, weight_scale, "weight_scale", width);
    const std::vector<int32_t> a = integer_values(context, input, "input");
    const std::vector<int32_t> w = integer_values(context, weight, "weight");
    int32_t a_zp = 0;
    if (const Tensor* zp = optional_input(context, 6)) {
      if (zp->dtype() != input.dtype()) {
        context.fail("input_zero_point has type {}, input has {}", dtype_name(zp->dtype()),
                     dtype_name(input.dtype()));
      }
      check_parameter(context, *zp, "input_zero_point", 1);
      a_zp = integer_values(context, *zp, "input_zero_point")[0];
    }
    std::vector<int32_t> w_zp{0};
    if (const Tensor* zp = optional_input(context, 7)) {
      if (zp->dtype() != weight.dtype()) {
        context.fail("weight_zero_point has type {}, weight has {}", dtype_name(zp->dtype()),
                     dtype_name(weight.dtype()));
      }
      check_parameter(context, *zp, "weight_zero_point", width);
      w_zp = integer_values(context, *zp, "weight_zero_point");
    }
    const float* scales = weight_scale.data<float>();
    const float a_scale = input_scale.data<float>()[0];
    const float* b = bias.data<float>();
    // float(acc) * (input_scale * weight_scale) + bias, in float as ORT's output processor.
    std::vector<double> qkv(static_cast<size_t>(rows * width));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < width; ++j) {
        const int32_t zp = w_zp.size() == 1 ? w_zp[0] : w_zp[j];
        int64_t acc = 0;
        for (int64_t c = 0; c < k; ++c) {
          acc += static_cast<int64_t>(a[r * k + c] - a_zp) * (w[c * width + j] - zp);
        }
        const float scale = a_scale * scales[weight_scale.numel() == 1 ? 0 : j];
        qkv[r * width + j] = static_cast<float>(acc) * scale + b[j];
      }
    }
    attention_from_qkv(context, attributes_, shape, qkv, DType::kFloat, past,
                       optional_input(context, 5), nullptr);
  }

 private:
  MsAttentionAttributes attributes_;
};

// ---------------------------------------------------------------------------------------
// Embedding + layer normalization.

// y = (x - mean) / sqrt(var + epsilon) * gamma + beta over each row of `hidden` values.
void layer_norm_rows(std::vector<double>& rows, int64_t hidden, const std::vector<double>& gamma,
                     const std::vector<double>& beta, double epsilon, bool simplified) {
  const int64_t count = hidden == 0 ? 0 : static_cast<int64_t>(rows.size()) / hidden;
  for (int64_t r = 0; r < count; ++r) {
    double* row = rows.data() + r * hidden;
    if (simplified) {  // RMS: no mean taken out
      double square = 0;
      for (int64_t i = 0; i < hidden; ++i) square += row[i] * row[i];
      const double inv = 1.0 / std::sqrt(square / static_cast<double>(hidden) + epsilon);
      for (int64_t i = 0; i < hidden; ++i) row[i] *= inv;
    } else {
      reference_normalize_row(row, hidden, epsilon);
    }
    for (int64_t i = 0; i < hidden; ++i) {
      row[i] = row[i] * gamma[i] + (beta.empty() ? 0.0 : beta[i]);
    }
  }
}

// EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
//   segment_embedding?, gamma, beta, mask?, position_ids?) -> output, mask_index?, embedding_sum?
// and QEmbedLayerNormalization, whose tables, gamma and beta are u8/s8 with a scale (input
// 8 + k) and zero point (input 13 + k) each, dequantized as (q - zero_point) * scale.
template <bool kQuantized>
class EmbedLayerNormKernel : public OpKernel {
 public:
  explicit EmbedLayerNormKernel(const KernelCreateContext& context)
      : epsilon_(context.attr_float("epsilon", 1e-12f)) {}

  void compute(KernelContext& context) const override {
    EmbedLayerNormInputs in;
    in.input_ids = &context.input(0);
    in.segment_ids = optional_input(context, 1);
    in.word = &context.input(2);
    in.position = &context.input(3);
    in.segment = optional_input(context, 4);
    in.gamma = &context.input(5);
    in.beta = kQuantized ? &context.input(6) : optional_input(context, 6);
    in.mask = optional_input(context, 7);
    in.position_ids = kQuantized ? nullptr : optional_input(context, 8);
    const int64_t hidden = check_embed_layer_norm(context, in);
    const int64_t batch = in.input_ids->shape()[0], sequence = in.input_ids->shape()[1];
    // Quantized: table k (word, position, segment, gamma, beta) has its scale at 8 + k and
    // zero point at 13 + k.
    const auto table = [&](const Tensor* t, size_t k, std::string_view name) {
      if (!t) return std::vector<double>{};
      if constexpr (!kQuantized) {
        return read_doubles(context, *t, name);
      } else {
        const Tensor& scale = context.input(8 + k);
        if (scale.dtype() != DType::kFloat || scale.numel() != 1) {
          context.fail("the scale of {} must be one float32 value", name);
        }
        int32_t zp = 0;
        if (const Tensor* z = optional_input(context, 13 + k)) {
          if (z->numel() != 1 || z->dtype() != t->dtype()) {
            context.fail("the zero point of {} must be one value of its type", name);
          }
          zp = integer_values(context, *z, name)[0];
        }
        const std::vector<int32_t> q = integer_values(context, *t, name);
        std::vector<double> out(q.size());
        const float s = scale.data<float>()[0];
        for (size_t i = 0; i < q.size(); ++i) out[i] = static_cast<float>(q[i] - zp) * s;
        return out;
      }
    };
    const std::vector<double> word = table(in.word, 0, "word_embedding");
    const std::vector<double> position = table(in.position, 1, "position_embedding");
    const std::vector<double> segment = table(in.segment, 2, "segment_embedding");
    const std::vector<double> gamma = table(in.gamma, 3, "gamma");
    const std::vector<double> beta = table(in.beta, 4, "beta");
    std::vector<double> sum(static_cast<size_t>(batch * sequence * hidden));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < sequence; ++s) {
        const EmbeddingRows rows = embedding_rows(context, in, b, s);
        double* out = sum.data() + (b * sequence + s) * hidden;
        for (int64_t i = 0; i < hidden; ++i) {
          out[i] = word[rows.word * hidden + i] + position[rows.position * hidden + i] +
                   (rows.segment >= 0 ? segment[rows.segment * hidden + i] : 0.0);
        }
      }
    }
    const DType dtype = kQuantized ? DType::kFloat : in.word->dtype();
    std::vector<double> y = sum;
    layer_norm_rows(y, hidden, gamma, beta, epsilon_, false);
    write_doubles(context, 0, dtype, {batch, sequence, hidden}, y);
    if (context.wants_output(1)) {
      const std::vector<int32_t> index = embed_mask_index(in, batch, sequence);
      Tensor& out = context.allocate_output(1, DType::kInt32, {batch});
      std::copy(index.begin(), index.end(), out.mutable_data<int32_t>());
    }
    if (!kQuantized && context.wants_output(2)) {
      write_doubles(context, 2, dtype, {batch, sequence, hidden}, sum);
    }
  }

 private:
  float epsilon_;
};

// SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output, mean?, inv_std_var?,
// input_skip_bias_sum? and SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) (RMS:
// no mean, no beta). Skip has input's shape, or [1, S, H] / [S, H] for every batch.
template <bool kSimplified>
class MsSkipLayerNormKernel : public OpKernel {
 public:
  static constexpr size_t kBias = kSimplified ? 3 : 4;

  explicit MsSkipLayerNormKernel(const KernelCreateContext& context)
      : epsilon_(context.attr_float("epsilon", 1e-12f)) {
    const auto& outputs = context.node().outputs();
    for (size_t i = 1; i < 3 && i < outputs.size(); ++i) {
      if (outputs[i]) context.fail("output {} (mean / inv_std_var) is not supported", i);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& skip = context.input(1);
    const Shape& shape = x.shape();
    const int64_t hidden = check_skip_layer_norm(context, x, skip, kBias);
    std::vector<double> sum = read_doubles(context, x, "input");
    const std::vector<double> skip_values = read_doubles(context, skip, "skip");
    const std::vector<double> gamma = read_doubles(context, context.input(2), "gamma");
    std::vector<double> beta, bias;
    if (!kSimplified && context.has_input(3))
      beta = read_doubles(context, context.input(3), "beta");
    if (context.has_input(kBias)) bias = read_doubles(context, context.input(kBias), "bias");
    const size_t skip_count = skip_values.size();
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i] += skip_values[i % skip_count] + (bias.empty() ? 0.0 : bias[i % hidden]);
    }
    std::vector<double> y = sum;
    layer_norm_rows(y, hidden, gamma, beta, epsilon_, kSimplified);
    write_doubles(context, 0, x.dtype(), shape, y);
    if (context.wants_output(3)) write_doubles(context, 3, x.dtype(), shape, sum);
  }

 private:
  float epsilon_;
};

// Elementwise: Gelu (erf), BiasGelu(A, B) = Gelu(A + B), FastGelu(X, bias?) (tanh form),
// QuickGelu(X) = X * Sigmoid(alpha X), BiasAdd(X, bias, skip) = X + bias + skip.
enum class MsActivation { kGelu, kBiasGelu, kFastGelu, kQuickGelu, kBiasAdd };

template <MsActivation kOp>
class MsElementwiseKernel : public OpKernel {
 public:
  explicit MsElementwiseKernel(const KernelCreateContext& context)
      : alpha_(context.attr_float("alpha", 1.702f)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (!dtype_is_float(x.dtype())) {
      context.fail("input has type {}; it needs a float type", dtype_name(x.dtype()));
    }
    std::vector<double> v = read_doubles(context, x, "X");
    const bool has_bias = kOp == MsActivation::kBiasGelu || kOp == MsActivation::kBiasAdd ||
                          (kOp == MsActivation::kFastGelu && context.has_input(1));
    if (has_bias) {
      const Tensor& bias = context.input(1);
      const int64_t cols = x.rank() == 0 ? 1 : x.shape().back();
      if (bias.rank() != 1 || bias.shape()[0] != cols || bias.dtype() != x.dtype()) {
        context.fail("bias is {} {}; it needs {} [{}] (the last dim of the input)",
                     dtype_name(bias.dtype()), shape_to_string(bias.shape()), dtype_name(x.dtype()),
                     cols);
      }
      const std::vector<double> b = read_doubles(context, bias, "bias");
      for (size_t i = 0; i < v.size(); ++i) v[i] += b[i % b.size()];
    }
    if constexpr (kOp == MsActivation::kBiasAdd) {
      const Tensor& skip = context.input(2);
      if (skip.shape() != x.shape() || skip.dtype() != x.dtype()) {
        context.fail("skip is {} {}; it needs the input's {} {}", dtype_name(skip.dtype()),
                     shape_to_string(skip.shape()), dtype_name(x.dtype()),
                     shape_to_string(x.shape()));
      }
      const std::vector<double> s = read_doubles(context, skip, "skip");
      for (size_t i = 0; i < v.size(); ++i) v[i] += s[i];
    } else {
      for (double& value : v) value = activate(value);
    }
    write_doubles(context, 0, x.dtype(), x.shape(), v);
  }

 private:
  double activate(double x) const {
    if constexpr (kOp == MsActivation::kFastGelu) {
      const double c = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    } else if constexpr (kOp == MsActivation::kQuickGelu) {
      return x / (1.0 + std::exp(-alpha_ * x));
    } else {
      return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
    }
  }

  float alpha_;
};

// ---------------------------------------------------------------------------------------
// Type inference (ops/type_inference.h).

// Attention / QAttention: output [B, S, Dv] float (QAttention) or the input's type; present
// [2, B, N, P + S, H].
template <bool kQuantized>
void infer_ms_attention(TypeInferenceContext& context) {
  const DType dtype = kQuantized ? DType::kFloat : input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const MsAttentionAttributes attrs(attributes);
  const std::vector<Dim>* input = input_dims(context, 0);
  const std::vector<Dim>* weights = input_dims(context, 1);
  if (input && input->size() != 3) fail("input has rank {}; it needs 3", input->size());
  if (weights && weights->size() != 2) fail("weights have rank {}; they need 2", weights->size());
  Dim batch, sequence, v_hidden, head_size;
  if (input) {
    batch = (*input)[0];
    sequence = (*input)[1];
  }
  if (!attrs.qkv_hidden_sizes.empty()) {
    v_hidden = Dim::known(attrs.qkv_hidden_sizes[2]);
    head_size = Dim::known(attrs.qkv_hidden_sizes[0] / attrs.num_heads);
    if (attrs.qkv_hidden_sizes[0] % attrs.num_heads != 0 ||
        attrs.qkv_hidden_sizes[2] % attrs.num_heads != 0) {
      fail("num_heads {} does not divide qkv_hidden_sizes", attrs.num_heads);
    }
  } else if (weights && (*weights)[1].is_known()) {
    const int64_t width = (*weights)[1].value;
    if (width % 3 != 0 || (width / 3) % attrs.num_heads != 0) {
      fail("weights have {} columns: not 3 equal parts divisible by num_heads {}", width,
           attrs.num_heads);
    }
    v_hidden = Dim::known(width / 3);
    head_size = Dim::known(width / 3 / attrs.num_heads);
  }
  context.set_output(0, tensor_type(dtype, std::vector<Dim>{batch, sequence, v_hidden}));
  if (context.has_output(1)) {
    Dim total;
    const std::vector<Dim>* past = input_dims(context, kQuantized ? 8 : 4);
    if (!context.has_input(kQuantized ? 8 : 4)) {
      total = sequence;
    } else if (past && past->size() == 5 && (*past)[3].is_known() && sequence.is_known()) {
      total = Dim::known((*past)[3].value + sequence.value);
    }
    context.set_output(
        1, tensor_type(dtype, std::vector<Dim>{Dim::known(2), batch, Dim::known(attrs.num_heads),
                                               total, head_size}));
  }
}

// (Q)EmbedLayerNormalization: output [B, S, Hidden], mask_index [B] int32, embedding_sum
// like output.
template <bool kQuantized>
void infer_embed_layer_norm(TypeInferenceContext& context) {
  const DType dtype = kQuantized ? DType::kFloat : input_dtype(context, 2);
  const std::vector<Dim>* ids = input_dims(context, 0);
  const std::vector<Dim>* word = input_dims(context, 2);
  if (ids && ids->size() != 2) fail("input_ids has rank {}; it needs 2", ids->size());
  if (word && word->size() != 2) fail("word_embedding has rank {}; it needs 2", word->size());
  Dim batch, sequence, hidden;
  if (ids) {
    batch = (*ids)[0];
    sequence = (*ids)[1];
  }
  if (word) hidden = (*word)[1];
  if (dtype != DType::kUndefined) {
    context.set_output(0, tensor_type(dtype, std::vector<Dim>{batch, sequence, hidden}));
    context.set_output(2, tensor_type(dtype, std::vector<Dim>{batch, sequence, hidden}));
  }
  context.set_output(1, tensor_type(DType::kInt32, std::vector<Dim>{batch}));
}

// SkipLayerNormalization: output and input_skip_bias_sum like the input; mean and inv_std_var
// float [..., 1].
void infer_ms_skip_layer_norm(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type) return;
  context.set_output(0, *type);
  context.set_output(3, *type);
}

}  // namespace

int64_t check_skip_layer_norm(const KernelContext& context, const Tensor& x, const Tensor& skip,
                              size_t bias_index) {
  const Shape& shape = x.shape();
  if (shape.size() < 2 || shape.size() > 3) {
    context.fail("input has shape {}; it needs [batch, sequence, hidden] or [tokens, hidden]",
                 shape_to_string(shape));
  }
  const int64_t hidden = shape.back();
  const Shape& s = skip.shape();
  const bool every_batch =
      shape.size() == 3 && ((s.size() == 3 && s[0] == 1 && s[1] == shape[1] && s[2] == hidden) ||
                            (s.size() == 2 && s[0] == shape[1] && s[1] == hidden));
  if (s != shape && !every_batch) {
    context.fail("skip has shape {}; it needs the input's {}{}", shape_to_string(s),
                 shape_to_string(shape),
                 shape.size() == 3
                     ? fmt::format(", [1, {}, {}] or [{}, {}]", shape[1], hidden, shape[1], hidden)
                     : std::string());
  }
  if (skip.dtype() != x.dtype()) {
    context.fail("skip has type {}, input has {}", dtype_name(skip.dtype()), dtype_name(x.dtype()));
  }
  for (size_t i = 2; i <= bias_index; ++i) {
    if (!context.has_input(i)) {
      if (i == 2) context.fail("input gamma is required");
      continue;
    }
    const Tensor& t = context.input(i);
    if (t.rank() != 1 || t.shape()[0] != hidden || t.dtype() != x.dtype()) {
      context.fail("input {} is {} {}; it needs {} [{}] (the hidden size)", i,
                   dtype_name(t.dtype()), shape_to_string(t.shape()), dtype_name(x.dtype()),
                   hidden);
    }
  }
  return hidden;
}

void register_transformer_microsoft_ops(OpRegistry& registry) {
  const std::string ms(kMicrosoftDomain);
  registry.add(
      ms, "Attention", 1,
      OpDefinition(kernel_factory<MsAttentionKernel>()).with_types(infer_ms_attention<false>));
  registry.add(
      ms, "QAttention", 1,
      OpDefinition(kernel_factory<QAttentionKernel>()).with_types(infer_ms_attention<true>));
  registry.add(ms, "EmbedLayerNormalization", 1,
               OpDefinition(kernel_factory<EmbedLayerNormKernel<false>>())
                   .with_types(infer_embed_layer_norm<false>));
  registry.add(ms, "QEmbedLayerNormalization", 1,
               OpDefinition(kernel_factory<EmbedLayerNormKernel<true>>())
                   .with_types(infer_embed_layer_norm<true>));
  registry.add(ms, "SkipLayerNormalization", 1,
               OpDefinition(kernel_factory<MsSkipLayerNormKernel<false>>())
                   .with_types(infer_ms_skip_layer_norm));
  registry.add(ms, "SkipSimplifiedLayerNormalization", 1,
               OpDefinition(kernel_factory<MsSkipLayerNormKernel<true>>())
                   .with_types(infer_ms_skip_layer_norm));
  registry.add(
      ms, "Gelu", 1,
      OpDefinition(kernel_factory<MsElementwiseKernel<MsActivation::kGelu>>(), kElementwiseOp)
          .with_types(infer_same_as_input));
  registry.add(
      ms, "QuickGelu", 1,
      OpDefinition(kernel_factory<MsElementwiseKernel<MsActivation::kQuickGelu>>(), kElementwiseOp)
          .with_types(infer_same_as_input));
  registry.add(ms, "BiasGelu", 1,
               OpDefinition(kernel_factory<MsElementwiseKernel<MsActivation::kBiasGelu>>())
                   .with_types(infer_same_as_input));
  registry.add(ms, "FastGelu", 1,
               OpDefinition(kernel_factory<MsElementwiseKernel<MsActivation::kFastGelu>>())
                   .with_types(infer_same_as_input));
  registry.add(ms, "BiasAdd", 1,
               OpDefinition(kernel_factory<MsElementwiseKernel<MsActivation::kBiasAdd>>())
                   .with_types(infer_same_as_input));
}

}  // namespace onnxkit
