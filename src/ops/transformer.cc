// Op family: the standard transformer ops: Attention (23, 24, 25), RMSNormalization (23),
// RotaryEmbedding (23), TensorScatter (24), LinearAttention (27), SwiGLU (28) and
// ai.onnx.preview's FlexAttention (1). (CausalConvWithState, a convolution, is in conv.cc.)
//
// Reference kernels: values are computed in double and rounded to the tensor's type where
// ONNX's reference (numpy, one rounding per op) rounds, so float16 and bfloat16 results
// follow the same steps as the expected outputs of onnx's backend cases.
#include "ops/transformer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {

OnnxAttentionAttributes::OnnxAttentionAttributes(const KernelCreateContext& context,
                                                 int64_t since_version)
    : version(since_version),
      is_causal(context.attr_int("is_causal", 0) != 0),
      q_num_heads(context.attr_int("q_num_heads", 0)),
      kv_num_heads(context.attr_int("kv_num_heads", 0)),
      scale(context.has_attribute("scale") ? std::optional(context.attr_float("scale"))
                                           : std::nullopt),
      softcap(context.attr_float("softcap", 0.0f)),
      softmax_precision(context.attr_int("softmax_precision", 0)),
      qk_matmul_output_mode(context.attr_int("qk_matmul_output_mode", 0)) {
  if (version >= 25) {
    left_window_size = context.attr_int("left_window_size", -1);
    right_window_size = context.attr_int("right_window_size", -1);
    if (left_window_size < -1 || right_window_size < -1) {
      context.fail("left_window_size and right_window_size must be -1 or >= 0, are {} and {}",
                   left_window_size, right_window_size);
    }
  }
  if (qk_matmul_output_mode < 0 || qk_matmul_output_mode > 3) {
    context.fail("qk_matmul_output_mode is {}; it needs 0, 1, 2 or 3", qk_matmul_output_mode);
  }
  if (q_num_heads < 0 || kv_num_heads < 0) {
    context.fail("q_num_heads ({}) and kv_num_heads ({}) must not be negative", q_num_heads,
                 kv_num_heads);
  }
  if (softmax_precision != 0 && !dtype_is_float(static_cast<DType>(softmax_precision))) {
    context.fail("softmax_precision is {}; it needs a floating-point type", softmax_precision);
  }
}

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// x rounded to T, as numpy rounds each op's result to its arrays' type.
using Rounder = double (*)(double);
template <typename T>
double round_as(double x) {
  if constexpr (std::is_same_v<T, double>) {
    return x;
  } else if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(x);
  } else {
    return static_cast<float>(T(static_cast<float>(x)));
  }
}
Rounder rounder_for(DType dtype, std::string_view what) {
  return dispatch_float(
      dtype, what, [](auto tag) -> Rounder { return &round_as<typename decltype(tag)::type>; });
}

// Any numeric or bool tensor's elements as double (bool: 0/1).
std::vector<double> read_numbers(const Tensor& tensor, std::string_view what) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  dispatch_numeric_bool(tensor.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = convert_element<double>(p[i]);
  });
  return values;
}

void require_float(const KernelContext& context, const Tensor& t, std::string_view what) {
  if (!dtype_is_float(t.dtype())) {
    context.fail("{} has type {}; it needs a floating-point type", what, dtype_name(t.dtype()));
  }
}

// ---------------------------------------------------------------------------------------
// Attention

// A Q/K/V-like operand in the [B, heads, S, head_size] order the op computes in, read from a
// 4-D tensor as it is or from a 3-D [B, S, heads * head_size] one.
struct HeadsView {
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  bool packed = false;  // 3-D
  int64_t at(int64_t b, int64_t h, int64_t s, int64_t c) const {
    return packed ? ((b * seq + s) * heads + h) * size + c : ((b * heads + h) * seq + s) * size + c;
  }
};

HeadsView heads_view(const KernelContext& context, const Tensor& t, int64_t num_heads,
                     std::string_view what) {
  const Shape& s = t.shape();
  HeadsView view;
  if (s.size() == 4) {
    view = {s[0], s[1], s[2], s[3], false};
  } else if (s.size() == 3) {
    if (num_heads <= 0) {
      context.fail("{} is 3-D ({}); that needs the q_num_heads and kv_num_heads attributes", what,
                   shape_to_string(s));
    }
    if (s[2] % num_heads != 0) {
      context.fail("{} has shape {}: its last dim is not a multiple of {} heads", what,
                   shape_to_string(s), num_heads);
    }
    view = {s[0], num_heads, s[1], s[2] / num_heads, true};
  } else {
    context.fail("{} has shape {}; it needs rank 3 or 4", what, shape_to_string(s));
  }
  return view;
}

class OnnxAttentionKernel : public OpKernel {
 public:
  OnnxAttentionKernel(const KernelCreateContext& context, int64_t version)
      : attrs_(context, version) {
    const auto& inputs = context.node().inputs();
    if (version < 24 && inputs.size() > 6 && inputs[6]) {
      context.fail("Attention-{} has 6 inputs; nonpad_kv_seqlen is an input from version 24",
                   version);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& q = context.input(0);
    const Tensor& k = context.input(1);
    const Tensor& v = context.input(2);
    require_float(context, q, "Q");
    require_float(context, v, "V");
    if (k.dtype() != q.dtype()) {
      context.fail("K has type {}, Q has {}", dtype_name(k.dtype()), dtype_name(q.dtype()));
    }
    if (k.rank() != q.rank() || v.rank() != q.rank()) {
      context.fail("Q {}, K {} and V {} need the same rank", shape_to_string(q.shape()),
                   shape_to_string(k.shape()), shape_to_string(v.shape()));
    }
    const HeadsView qv = heads_view(context, q, attrs_.q_num_heads, "Q");
    const HeadsView kv = heads_view(context, k, attrs_.kv_num_heads, "K");
    const HeadsView vv = heads_view(context, v, attrs_.kv_num_heads, "V");
    const int64_t batch = qv.batch, heads = qv.heads, sq = qv.seq, d = qv.size;
    const int64_t kv_heads = kv.heads, dv = vv.size;
    if (kv.batch != batch || vv.batch != batch || vv.heads != kv_heads || vv.seq != kv.seq ||
        kv.size != d) {
      context.fail(
          "Q {}, K {} and V {} do not fit together (as [B, H, S, D]: Q [{}, {}, {}, {}], K [{}, "
          "{}, {}, {}], V [{}, {}, {}, {}])",
          shape_to_string(q.shape()), shape_to_string(k.shape()), shape_to_string(v.shape()), batch,
          heads, sq, d, kv.batch, kv_heads, kv.seq, kv.size, vv.batch, vv.heads, vv.seq, dv);
    }
    if (kv_heads == 0 || heads % kv_heads != 0) {
      context.fail("Q's {} heads are not a multiple of K/V's {}", heads, kv_heads);
    }
    const int64_t group = heads / kv_heads;

    // The cache: present = concat(past, new) along the sequence.
    const bool has_past = context.has_input(4) || context.has_input(5);
    if (has_past && !(context.has_input(4) && context.has_input(5))) {
      context.fail("past_key and past_value must be given together");
    }
    const bool has_nonpad = context.has_input(6);
    if (has_past && has_nonpad) {
      context.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    }
    int64_t past = 0;
    if (has_past) {
      const Tensor& pk = context.input(4);
      const Tensor& pv = context.input(5);
      if (pk.rank() != 4 || pk.shape()[0] != batch || pk.shape()[1] != kv_heads ||
          pk.shape()[3] != d) {
        context.fail("past_key has shape {}; it needs [{}, {}, past, {}]",
                     shape_to_string(pk.shape()), batch, kv_heads, d);
      }
      past = pk.shape()[2];
      if (pv.shape() != Shape{batch, kv_heads, past, dv}) {
        context.fail("past_value has shape {}; it needs [{}, {}, {}, {}]",
                     shape_to_string(pv.shape()), batch, kv_heads, past, dv);
      }
      if (pk.dtype() != k.dtype() || pv.dtype() != v.dtype()) {
        context.fail("past_key/past_value have types {}/{}; they need K's and V's {}/{}",
                     dtype_name(pk.dtype()), dtype_name(pv.dtype()), dtype_name(k.dtype()),
                     dtype_name(v.dtype()));
      }
    }
    const int64_t total = past + kv.seq;
    const std::vector<double> key = present(context, 4, k, kv, past, "K");
    const std::vector<double> value = present(context, 5, v, vv, past, "V");
    if (context.wants_output(1)) {
      write_doubles(context, 1, k.dtype(), {batch, kv_heads, total, d}, key);
    }
    if (context.wants_output(2)) {
      write_doubles(context, 2, v.dtype(), {batch, kv_heads, total, dv}, value);
    }

    std::vector<int64_t> nonpad;
    if (has_nonpad) {
      const Tensor& t = context.input(6);
      nonpad = read_int64s(t, "nonpad_kv_seqlen");
      if (static_cast<int64_t>(nonpad.size()) != batch) {
        context.fail("nonpad_kv_seqlen has shape {}; it needs [{}]", shape_to_string(t.shape()),
                     batch);
      }
    }
    const Rounder round_t = rounder_for(q.dtype(), "Attention");
    const Rounder round_p =
        attrs_.softmax_precision != 0
            ? rounder_for(static_cast<DType>(attrs_.softmax_precision), "softmax_precision")
            : round_t;
    const DType softmax_dtype =
        attrs_.softmax_precision != 0 ? static_cast<DType>(attrs_.softmax_precision) : q.dtype();
    const bool stepwise_sum = softmax_dtype == DType::kBFloat16;
    const MaskView mask = mask_view(context, batch, heads, sq, total);

    const double scale_value =
        attrs_.scale ? static_cast<double>(*attrs_.scale) : 1.0 / std::sqrt(static_cast<double>(d));
    const double root_scale = round_t(std::sqrt(scale_value));
    std::vector<double> qs = read_doubles(context, q, "Q");
    for (double& x : qs) x = round_t(x * root_scale);
    std::vector<double> ks = key;
    for (double& x : ks) x = round_t(x * root_scale);

    const bool wants_scores = context.wants_output(3);
    std::vector<double> scores_out;
    if (wants_scores) scores_out.resize(static_cast<size_t>(batch * heads * sq * total));
    std::vector<double> y(static_cast<size_t>(batch * heads * sq * dv));
    std::vector<double> bias(static_cast<size_t>(total)), qk(static_cast<size_t>(total)),
        p(static_cast<size_t>(total));
    const HeadsView yv{batch, heads, sq, dv, qv.packed};
    auto cache_at = [&](int64_t b, int64_t h, int64_t s, int64_t size) {
      return ((b * kv_heads + h) * total + s) * size;
    };
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t offset = has_past ? past : has_nonpad ? nonpad[b] - sq : 0;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < sq; ++i) {
          double bias_max = kNegInf;
          for (int64_t j = 0; j < total; ++j) {
            double term = mask.data.empty() ? 0.0 : mask.value(b, h, i, j, round_t);
            const int64_t diff = i + offset - j;
            bool allowed = !(attrs_.is_causal && diff < 0);
            if (attrs_.left_window_size >= 0 && diff > attrs_.left_window_size) allowed = false;
            if (attrs_.right_window_size >= 0 && -diff > attrs_.right_window_size) allowed = false;
            if (has_nonpad && j >= nonpad[b]) allowed = false;
            if (!allowed) term += kNegInf;
            bias[j] = term;
            bias_max = std::max(bias_max, term);
            double dot = 0;
            for (int64_t c = 0; c < d; ++c) {
              dot += qs[qv.at(b, h, i, c)] * ks[cache_at(b, kh, j, d) + c];
            }
            qk[j] = round_t(dot);
            if (attrs_.softcap > 0) {
              const double cap = attrs_.softcap;
              qk[j] = round_t(round_t(std::tanh(round_t(qk[j] / cap))) * cap);
            }
          }
          double* scores_row =
              wants_scores ? scores_out.data() + ((b * heads + h) * sq + i) * total : nullptr;
          for (int64_t j = 0; j < total; ++j) {
            const double with_bias = round_t(qk[j] + bias[j]);
            if (scores_row && attrs_.qk_matmul_output_mode <= 1) scores_row[j] = qk[j];
            if (scores_row && attrs_.qk_matmul_output_mode == 2) scores_row[j] = with_bias;
            p[j] = round_p(with_bias);
          }
          softmax_row(p.data(), total, round_p, stepwise_sum);
          // A row the bias masks everywhere sees no key: its probabilities are 0, not NaN.
          const bool masked_row = total > 0 && std::isinf(bias_max) && bias_max < 0;
          for (int64_t j = 0; j < total; ++j) {
            p[j] = masked_row ? 0.0 : round_t(p[j]);
            if (scores_row && attrs_.qk_matmul_output_mode == 3) scores_row[j] = p[j];
          }
          for (int64_t c = 0; c < dv; ++c) {
            double sum = 0;
            for (int64_t j = 0; j < total; ++j) sum += p[j] * value[cache_at(b, kh, j, dv) + c];
            y[yv.at(b, h, i, c)] = round_t(sum);
          }
        }
      }
    }
    const Shape y_shape = qv.packed ? Shape{batch, sq, heads * dv} : Shape{batch, heads, sq, dv};
    write_doubles(context, 0, q.dtype(), y_shape, y);
    if (wants_scores) write_doubles(context, 3, q.dtype(), {batch, heads, sq, total}, scores_out);
  }

 private:
  // attn_mask read as [B, H, Sq, total]: broadcast right-aligned, its last dim padded to
  // `total` with masked entries.
  struct MaskView {
    std::vector<double> data;
    bool is_bool = false;
    int64_t last = 0;
    std::array<int64_t, 3> strides{};  // of B, H, Sq (0 where broadcast)
    double value(int64_t b, int64_t h, int64_t i, int64_t j, Rounder round_t) const {
      if (j >= last) return kNegInf;
      const double m = data[b * strides[0] + h * strides[1] + i * strides[2] + j];
      if (is_bool) return m != 0 ? 0.0 : kNegInf;
      return round_t(m);
    }
  };

  static MaskView mask_view(const KernelContext& context, int64_t batch, int64_t heads, int64_t sq,
                            int64_t total) {
    MaskView view;
    if (!context.has_input(3)) return view;
    const Tensor& m = context.input(3);
    const Shape& s = m.shape();
    if (s.empty() || s.size() > 4) {
      context.fail("attn_mask has shape {}; it needs rank 1 to 4", shape_to_string(s));
    }
    view.last = s.back();
    if (view.last > total) {
      context.fail("attn_mask has shape {}: its last dim exceeds the {} keys", shape_to_string(s),
                   total);
    }
    const std::array<int64_t, 3> dims{batch, heads, sq};
    int64_t stride = view.last;
    for (size_t a = 0; a + 1 < s.size(); ++a) {
      const size_t dim_index = s.size() - 2 - a;  // from the right, skipping the last
      const size_t target = 2 - a;
      const int64_t n = s[dim_index];
      if (n != 1 && n != dims[target]) {
        context.fail("attn_mask has shape {}; it does not broadcast to [{}, {}, {}, {}]",
                     shape_to_string(s), batch, heads, sq, total);
      }
      view.strides[target] = n == 1 ? 0 : stride;
      stride *= n;
    }
    view.is_bool = m.dtype() == DType::kBool;
    view.data = read_numbers(m, "attn_mask");
    return view;
  }

  // concat(past (input `past_input`), new) along the sequence as [B, kv_heads, total, size].
  static std::vector<double> present(const KernelContext& context, size_t past_input,
                                     const Tensor& t, const HeadsView& view, int64_t past,
                                     std::string_view what) {
    const int64_t total = past + view.seq;
    std::vector<double> out(static_cast<size_t>(view.batch * view.heads * total * view.size));
    std::vector<double> past_values;
    if (past > 0) past_values = read_doubles(context, context.input(past_input), what);
    const std::vector<double> values = read_doubles(context, t, what);
    for (int64_t b = 0; b < view.batch; ++b) {
      for (int64_t h = 0; h < view.heads; ++h) {
        double* dst = out.data() + (b * view.heads + h) * total * view.size;
        if (past > 0) {
          const double* src = past_values.data() + (b * view.heads + h) * past * view.size;
          std::copy(src, src + past * view.size, dst);
        }
        for (int64_t s = 0; s < view.seq; ++s) {
          for (int64_t c = 0; c < view.size; ++c) {
            dst[(past + s) * view.size + c] = values[view.at(b, h, s, c)];
          }
        }
      }
    }
    return out;
  }

  // Softmax of `row` in place, rounding as numpy does in the softmax's type; a row of -inf
  // gives zeros (the caller zeroes masked rows anyway). numpy sums bfloat16 (ml_dtypes) one
  // rounded addition at a time, the built-in float types in a wider accumulator.
  static void softmax_row(double* row, int64_t n, Rounder round_p, bool stepwise_sum) {
    if (n == 0) return;
    double max = row[0];
    for (int64_t j = 1; j < n; ++j) max = std::isnan(row[j]) || row[j] > max ? row[j] : max;
    const double safe_max = std::isinf(max) && max < 0 ? 0.0 : max;
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      row[j] = round_p(std::exp(round_p(row[j] - safe_max)));
      sum = stepwise_sum ? round_p(sum + row[j]) : sum + row[j];
    }
    sum = round_p(sum);
    if (sum == 0) sum = 1;
    for (int64_t j = 0; j < n; ++j) row[j] = round_p(row[j] / sum);
  }

  OnnxAttentionAttributes attrs_;
};

// Attention's outputs: Y [B, Hq, Sq, Dv] (3-D: [B, Sq, Hq * Dv]), present_key/value
// [B, Hkv, past + Skv, D or Dv], qk_matmul_output [B, Hq, Sq, past + Skv].
void infer_attention(TypeInferenceContext& context) {
  const DType t1 = input_dtype(context, 0);
  const DType t2 = input_dtype(context, 2);
  const std::vector<Dim>* q = input_dims(context, 0);
  const std::vector<Dim>* k = input_dims(context, 1);
  const std::vector<Dim>* v = input_dims(context, 2);
  const std::vector<Dim>* past_key = context.has_input(4) ? input_dims(context, 4) : nullptr;
  auto int_attr = [&](const char* name) -> int64_t {
    const Attribute* a = context.node().find_attribute(name);
    return a && a->type == AttrType::kInt ? a->i : 0;
  };
  const int64_t q_heads = int_attr("q_num_heads"), kv_heads_attr = int_attr("kv_num_heads");
  auto div = [](const Dim& dim, int64_t n) {
    return dim.is_known() && n > 0 ? Dim::known(dim.value / n) : Dim{};
  };
  auto mul = [](const Dim& dim, int64_t n) {
    return dim.is_known() && n > 0 ? Dim::known(checked_mul(dim.value, n, "heads x head size"))
                                   : Dim{};
  };
  auto add = [](const Dim& a, const Dim& b) {
    return a.is_known() && b.is_known()
               ? Dim::known(checked_add(a.value, b.value, "past + new sequence length"))
               : Dim{};
  };
  // Q, K and V as [B, H, S, head_size]; nullopt where the rank is unknown.
  auto as_heads = [&](const std::vector<Dim>* dims, int64_t num_heads) -> SymbolicShape {
    if (!dims) return std::nullopt;
    if (dims->size() == 4) return *dims;
    if (dims->size() == 3) {
      return std::vector<Dim>{(*dims)[0], num_heads > 0 ? Dim::known(num_heads) : Dim{}, (*dims)[1],
                              div((*dims)[2], num_heads)};
    }
    fail("Q, K and V need rank 3 or 4");
  };
  const SymbolicShape qh = as_heads(q, q_heads);
  const SymbolicShape kh = as_heads(k, kv_heads_attr);
  const SymbolicShape vh = as_heads(v, kv_heads_attr);
  const bool packed = q && q->size() == 3;
  Dim total;
  if (kh)
    total = context.has_input(4)
                ? (past_key && past_key->size() == 4 ? add((*past_key)[2], (*kh)[2]) : Dim{})
                : (*kh)[2];
  if (t1 != DType::kUndefined) {
    SymbolicShape y;
    if (qh && vh) {
      if (packed) {
        const Dim& dv = (*vh)[3];
        y = std::vector<Dim>{(*qh)[0], (*qh)[2], mul(dv, q_heads)};
      } else {
        y = std::vector<Dim>{(*qh)[0], (*qh)[1], (*qh)[2], (*vh)[3]};
      }
    }
    context.set_output(0, tensor_type(t1, y));
    if (kh) {
      context.set_output(1, tensor_type(t1, std::vector<Dim>{(*kh)[0], (*kh)[1], total, (*kh)[3]}));
    } else {
      context.set_output(1, tensor_type(t1, std::nullopt));
    }
    SymbolicShape scores;
    if (qh) scores = std::vector<Dim>{(*qh)[0], (*qh)[1], (*qh)[2], total};
    context.set_output(3, tensor_type(t1, scores));
  }
  if (t2 != DType::kUndefined) {
    SymbolicShape present_value;
    if (vh) present_value = std::vector<Dim>{(*vh)[0], (*vh)[1], total, (*vh)[3]};
    context.set_output(2, tensor_type(t2, present_value));
  }
}

// ---------------------------------------------------------------------------------------
// RMSNormalization(X, scale) -> Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale

class RmsNormalizationKernel : public OpKernel {
 public:
  explicit RmsNormalizationKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)), epsilon_(context.attr_float("epsilon", 1e-5f)) {
    const int64_t stash_type = context.attr_int("stash_type", 1);
    if (stash_type != 1) {
      context.fail("stash_type is {}; only 1 (float32 statistics) is defined", stash_type);
    }
    if (context.node().outputs().size() > 1 && context.node().outputs()[1]) {
      context.fail("output 1 (inv_std_var) is not supported");
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& scale = context.input(1);
    const auto rank = static_cast<int64_t>(x.rank());
    if (rank == 0) context.fail("X is a scalar; it needs rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    int64_t cols = 1;
    for (int64_t a = axis; a < rank; ++a) cols *= x.shape()[a];
    const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
    std::vector<double> y = read_doubles(context, x, "X");
    const std::vector<double> w = read_doubles(context, scale, "scale");
    const std::vector<int64_t> w_at = broadcast_offsets(context, scale, x.shape(), "scale");
    for (int64_t r = 0; r < rows; ++r) {
      double* row = y.data() + r * cols;
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += row[c] * row[c];
      const double inv = 1.0 / std::sqrt(sum / static_cast<double>(cols) + epsilon_);
      for (int64_t c = 0; c < cols; ++c) row[c] = row[c] * inv * w[w_at[r * cols + c]];
    }
    write_doubles(context, 0, scale.dtype(), x.shape(), y);
  }

 private:
  int64_t axis_;
  float epsilon_;
};

// Y has X's shape and scale's type.
void infer_rms_normalization(TypeInferenceContext& context) {
  const ValueType* x = context.input_type(0);
  const DType dtype = input_dtype(context, 1);
  if (!x || dtype == DType::kUndefined) return;
  context.set_output(0, tensor_type(dtype, x->shape));
}

// ---------------------------------------------------------------------------------------
// RotaryEmbedding(X, cos_cache, sin_cache, position_ids?) -> Y

class RotaryEmbeddingKernel : public OpKernel {
 public:
  explicit RotaryEmbeddingKernel(const KernelCreateContext& context)
      : interleaved_(context.attr_int("interleaved", 0) != 0),
        rotary_dim_(context.attr_int("rotary_embedding_dim", 0)),
        num_heads_(context.attr_int("num_heads", 0)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& cos_cache = context.input(1);
    const Tensor& sin_cache = context.input(2);
    require_float(context, x, "X");
    if (cos_cache.dtype() != x.dtype() || sin_cache.dtype() != x.dtype()) {
      context.fail("cos_cache and sin_cache need X's type {}", dtype_name(x.dtype()));
    }
    // X as [B, S, H, D] (3-D input) or [B, H, S, D] (4-D), indexed as (b, s, h, c).
    const Shape& shape = x.shape();
    int64_t batch, seq, heads, size;
    bool seq_major = true;
    if (shape.size() == 4) {
      batch = shape[0], heads = shape[1], seq = shape[2], size = shape[3];
      seq_major = false;
    } else if (shape.size() == 3) {
      if (num_heads_ <= 0)
        context.fail("X is 3-D ({}); that needs num_heads", shape_to_string(shape));
      if (shape[2] % num_heads_ != 0) {
        context.fail("X's last dim {} is not a multiple of num_heads {}", shape[2], num_heads_);
      }
      batch = shape[0], seq = shape[1], heads = num_heads_, size = shape[2] / num_heads_;
    } else {
      context.fail("X has shape {}; it needs rank 3 or 4", shape_to_string(shape));
    }
    const int64_t rotary = rotary_dim_ == 0 ? size : rotary_dim_;
    if (rotary > size || rotary % 2 != 0) {
      context.fail("rotary_embedding_dim {} needs to be even and at most the head size {}", rotary,
                   size);
    }
    const int64_t half = rotary / 2;
    std::vector<int64_t> positions;
    if (context.has_input(3)) {
      const Tensor& ids = context.input(3);
      if (ids.shape() != Shape{batch, seq}) {
        context.fail("position_ids has shape {}; it needs [{}, {}]", shape_to_string(ids.shape()),
                     batch, seq);
      }
      positions = read_int64s(ids, "position_ids");
      if (cos_cache.rank() != 2 || cos_cache.shape()[1] != half ||
          sin_cache.shape() != cos_cache.shape()) {
        context.fail(
            "with position_ids, cos_cache and sin_cache need shape [max_position, {}], "
            "are {} and {}",
            half, shape_to_string(cos_cache.shape()), shape_to_string(sin_cache.shape()));
      }
      for (int64_t p : positions) {
        if (p < 0 || p >= cos_cache.shape()[0]) {
          context.fail("position id {} is outside the cache's {} positions", p,
                       cos_cache.shape()[0]);
        }
      }
    } else if (cos_cache.shape() != Shape{batch, seq, half} ||
               sin_cache.shape() != cos_cache.shape()) {
      context.fail(
          "without position_ids, cos_cache and sin_cache need shape [{}, {}, {}], are {} "
          "and {}",
          batch, seq, half, shape_to_string(cos_cache.shape()), shape_to_string(sin_cache.shape()));
    }
    const std::vector<double> xs = read_doubles(context, x, "X");
    const std::vector<double> cs = read_doubles(context, cos_cache, "cos_cache");
    const std::vector<double> ss = read_doubles(context, sin_cache, "sin_cache");
    const Rounder round_t = rounder_for(x.dtype(), "RotaryEmbedding");
    std::vector<double> y = xs;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < seq; ++s) {
        const int64_t row = positions.empty() ? b * seq + s : positions[b * seq + s];
        const double* cos_row = cs.data() + row * half;
        const double* sin_row = ss.data() + row * half;
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t base =
              seq_major ? ((b * seq + s) * heads + h) * size : ((b * heads + h) * seq + s) * size;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t at1 = base + (interleaved_ ? 2 * i : i);
            const int64_t at2 = base + (interleaved_ ? 2 * i + 1 : i + half);
            const double x1 = xs[at1], x2 = xs[at2];
            y[at1] = round_t(round_t(cos_row[i] * x1) - round_t(sin_row[i] * x2));
            y[at2] = round_t(round_t(sin_row[i] * x1) + round_t(cos_row[i] * x2));
          }
        }
      }
    }
    write_doubles(context, 0, x.dtype(), shape, y);
  }

 private:
  bool interleaved_;
  int64_t rotary_dim_;
  int64_t num_heads_;
};

// ---------------------------------------------------------------------------------------
// TensorScatter(past_cache, update, write_indices?) -> present_cache: each batch's update
// written into the cache along `axis` from its write index on (modulo the cache's length
// when mode is "circular").

class TensorScatterKernel : public OpKernel {
 public:
  explicit TensorScatterKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -2)), mode_(context.attr_string("mode", "linear")) {
    if (mode_ != "linear" && mode_ != "circular") {
      context.fail("mode is '{}'; it needs 'linear' or 'circular'", mode_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& cache = context.input(0);
    const Tensor& update = context.input(1);
    const auto rank = static_cast<int64_t>(cache.rank());
    if (update.dtype() != cache.dtype()) {
      context.fail("update has type {}, past_cache {}", dtype_name(update.dtype()),
                   dtype_name(cache.dtype()));
    }
    if (rank < 2 || update.rank() != cache.rank()) {
      context.fail("past_cache {} and update {} need the same rank, at least 2",
                   shape_to_string(cache.shape()), shape_to_string(update.shape()));
    }
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    if (axis == 0) context.fail("axis is the batch axis; it must come after it");
    for (int64_t a = 0; a < rank; ++a) {
      const bool fits =
          a == axis ? update.shape()[a] <= cache.shape()[a] : update.shape()[a] == cache.shape()[a];
      if (!fits) {
        context.fail("update {} does not fit past_cache {} (axis {})",
                     shape_to_string(update.shape()), shape_to_string(cache.shape()), axis);
      }
    }
    const int64_t batch = cache.shape()[0];
    std::vector<int64_t> write(static_cast<size_t>(batch), 0);
    if (context.has_input(2)) {
      write = read_int64s(context.input(2), "write_indices");
      if (static_cast<int64_t>(write.size()) != batch) {
        context.fail("write_indices has {} values; it needs one per batch ({})", write.size(),
                     batch);
      }
    }
    const size_t element = dtype_size(cache.dtype());
    if (element == 0 && cache.dtype() != DType::kString) {
      context.fail("type {} is not supported", dtype_name(cache.dtype()));
    }
    int64_t outer = 1, inner = 1;
    for (int64_t a = 1; a < axis; ++a) outer *= cache.shape()[a];
    for (int64_t a = axis + 1; a < rank; ++a) inner *= cache.shape()[a];
    const int64_t length = cache.shape()[axis], updates = update.shape()[axis];
    Tensor out = cache;  // copied on the first write
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < updates; ++s) {
        int64_t to = write[b] + s;
        if (mode_ == "circular") to = ((to % length) + length) % length;
        if (to < 0 || to >= length) {
          context.fail("batch {} writes position {}, outside the cache's {}", b, to, length);
        }
        for (int64_t o = 0; o < outer; ++o) {
          const int64_t dst = ((b * outer + o) * length + to) * inner;
          const int64_t src = ((b * outer + o) * updates + s) * inner;
          if (cache.dtype() == DType::kString) {
            std::copy_n(update.strings().begin() + src, inner, out.mutable_strings().begin() + dst);
          } else {
            std::memcpy(static_cast<char*>(out.mutable_raw_data()) + dst * element,
                        static_cast<const char*>(update.raw_data()) + src * element,
                        static_cast<size_t>(inner) * element);
          }
        }
      }
    }
    context.set_output(0, std::move(out));
  }

 private:
  int64_t axis_;
  std::string mode_;
};

// ---------------------------------------------------------------------------------------
// SwiGLU(A, B) -> Y = A * sigmoid(alpha * A) * B

class SwiGluKernel : public OpKernel {
 public:
  explicit SwiGluKernel(const KernelCreateContext& context)
      : alpha_(context.attr_float("alpha", 1.0f)) {}

  void compute(KernelContext& context) const override {
    const Tensor& a = context.input(0);
    const Tensor& b = context.input(1);
    require_float(context, a, "A");
    if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
      context.fail("A ({} {}) and B ({} {}) need the same shape and type (no broadcasting)",
                   dtype_name(a.dtype()), shape_to_string(a.shape()), dtype_name(b.dtype()),
                   shape_to_string(b.shape()));
    }
    const Rounder round_t = rounder_for(a.dtype(), "SwiGLU");
    std::vector<double> y = read_doubles(context, a, "A");
    const std::vector<double> bs = read_doubles(context, b, "B");
    for (size_t i = 0; i < y.size(); ++i) {
      const double x = y[i];
      const double gate = round_t(1.0 / round_t(1.0 + round_t(std::exp(round_t(-alpha_ * x)))));
      y[i] = round_t(round_t(x * gate) * bs[i]);
    }
    write_doubles(context, 0, a.dtype(), a.shape(), y);
  }

 private:
  double alpha_;
};

// ---------------------------------------------------------------------------------------
// LinearAttention(query, key, value, past_state?, decay?, beta?) -> output, present_state:
// the recurrent form, one step per position, the state [B, H_kv, d_k, d_v] in double.

class LinearAttentionKernel : public OpKernel {
 public:
  explicit LinearAttentionKernel(const KernelCreateContext& context)
      : q_heads_(context.attr_int("q_num_heads")),
        kv_heads_(context.attr_int("kv_num_heads")),
        scale_(context.attr_float("scale", 0.0f)),
        rule_(context.attr_string("update_rule", "gated_delta")) {
    if (rule_ != "linear" && rule_ != "gated" && rule_ != "delta" && rule_ != "gated_delta") {
      context.fail("update_rule is '{}'; it needs linear, gated, delta or gated_delta", rule_);
    }
    if (q_heads_ <= 0 || kv_heads_ <= 0 || q_heads_ % kv_heads_ != 0) {
      context.fail("q_num_heads ({}) must be a positive multiple of kv_num_heads ({})", q_heads_,
                   kv_heads_);
    }
    gating_ = rule_ == "gated" || rule_ == "gated_delta";
    delta_ = rule_ == "delta" || rule_ == "gated_delta";
  }

  void compute(KernelContext& context) const override {
    const Tensor& query = context.input(0);
    const Tensor& key = context.input(1);
    const Tensor& value = context.input(2);
    require_float(context, query, "query");
    for (const auto& [t, name] : {std::pair{&query, "query"}, {&key, "key"}, {&value, "value"}}) {
      if (t->rank() != 3) {
        context.fail("{} has shape {}; it needs (B, T, heads * size)", name,
                     shape_to_string(t->shape()));
      }
    }
    if (gating_ != context.has_input(4)) {
      context.fail("update_rule '{}' {} the decay input", rule_, gating_ ? "needs" : "forbids");
    }
    if (delta_ != context.has_input(5)) {
      context.fail("update_rule '{}' {} the beta input", rule_, delta_ ? "needs" : "forbids");
    }
    const int64_t batch = query.shape()[0], steps = query.shape()[1];
    if (query.shape()[2] % q_heads_ != 0 || value.shape()[2] % kv_heads_ != 0) {
      context.fail("query's last dim must divide by q_num_heads and value's by kv_num_heads");
    }
    const int64_t dk = query.shape()[2] / q_heads_, dv = value.shape()[2] / kv_heads_;
    if (key.shape() != Shape{batch, steps, kv_heads_ * dk} || value.shape()[0] != batch ||
        value.shape()[1] != steps) {
      context.fail("key {} and value {} do not fit query {}", shape_to_string(key.shape()),
                   shape_to_string(value.shape()), shape_to_string(query.shape()));
    }
    const int64_t group = q_heads_ / kv_heads_;
    const std::vector<double> q = read_doubles(context, query, "query");
    const std::vector<double> k = read_doubles(context, key, "key");
    const std::vector<double> v = read_doubles(context, value, "value");
    const Shape state_shape{batch, kv_heads_, dk, dv};
    // [B, H, dk, dv] from two [B, T, H x d] inputs: bounded before it is allocated.
    check_allocation(
        checked_nbytes(DType::kDouble, shape_numel(state_shape), shape_to_string(state_shape)));
    std::vector<double> state(static_cast<size_t>(shape_numel(state_shape)), 0.0);
    DType state_dtype = query.dtype();
    if (context.has_input(3)) {
      const Tensor& past = context.input(3);
      if (past.shape() != state_shape) {
        context.fail("past_state has shape {}; it needs {}", shape_to_string(past.shape()),
                     shape_to_string(state_shape));
      }
      state = read_doubles(context, past, "past_state");
      state_dtype = past.dtype();
    }
    std::vector<double> decay, beta;
    int64_t decay_width = 0, beta_width = 0;
    if (gating_) {
      const Tensor& t = context.input(4);
      decay_width = t.rank() == 3 ? t.shape()[2] : -1;
      if (t.rank() != 3 || t.shape()[0] != batch || t.shape()[1] != steps ||
          (decay_width != kv_heads_ && decay_width != kv_heads_ * dk)) {
        context.fail("decay has shape {}; it needs [{}, {}, {} or {}]", shape_to_string(t.shape()),
                     batch, steps, kv_heads_, kv_heads_ * dk);
      }
      decay = read_doubles(context, t, "decay");
    }
    if (delta_) {
      const Tensor& t = context.input(5);
      beta_width = t.rank() == 3 ? t.shape()[2] : -1;
      if (t.rank() != 3 || t.shape()[0] != batch || t.shape()[1] != steps ||
          (beta_width != kv_heads_ && beta_width != 1)) {
        context.fail("beta has shape {}; it needs [{}, {}, {} or 1]", shape_to_string(t.shape()),
                     batch, steps, kv_heads_);
      }
      beta = read_doubles(context, t, "beta");
    }
    const double scale = scale_ == 0.0f ? 1.0 / std::sqrt(static_cast<double>(dk)) : scale_;
    std::vector<double> out(static_cast<size_t>(batch * steps * q_heads_ * dv));
    std::vector<double> v_t(static_cast<size_t>(dv));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < steps; ++t) {
        for (int64_t h = 0; h < kv_heads_; ++h) {
          double* s = state.data() + (b * kv_heads_ + h) * dk * dv;
          const double* k_t = k.data() + ((b * steps + t) * kv_heads_ + h) * dk;
          const double* v_in = v.data() + ((b * steps + t) * kv_heads_ + h) * dv;
          if (gating_) {
            const double* g = decay.data() + (b * steps + t) * decay_width;
            for (int64_t r = 0; r < dk; ++r) {
              const double factor = std::exp(decay_width == kv_heads_ ? g[h] : g[h * dk + r]);
              for (int64_t c = 0; c < dv; ++c) s[r * dv + c] *= factor;
            }
          }
          std::copy(v_in, v_in + dv, v_t.begin());
          if (delta_) {
            const double bt = beta[(b * steps + t) * beta_width + (beta_width == 1 ? 0 : h)];
            for (int64_t c = 0; c < dv; ++c) {
              double retrieved = 0;
              for (int64_t r = 0; r < dk; ++r) retrieved += s[r * dv + c] * k_t[r];
              v_t[c] = bt * (v_t[c] - retrieved);
            }
          }
          for (int64_t r = 0; r < dk; ++r) {
            for (int64_t c = 0; c < dv; ++c) s[r * dv + c] += k_t[r] * v_t[c];
          }
          for (int64_t g = 0; g < group; ++g) {
            const int64_t qh = h * group + g;
            const double* q_t = q.data() + ((b * steps + t) * q_heads_ + qh) * dk;
            double* o = out.data() + ((b * steps + t) * q_heads_ + qh) * dv;
            for (int64_t c = 0; c < dv; ++c) {
              double sum = 0;
              for (int64_t r = 0; r < dk; ++r) sum += q_t[r] * s[r * dv + c];
              o[c] = scale * sum;
            }
          }
        }
      }
    }
    write_doubles(context, 0, query.dtype(), {batch, steps, q_heads_ * dv}, out);
    write_doubles(context, 1, state_dtype, state_shape, state);
  }

 private:
  int64_t q_heads_, kv_heads_;
  float scale_;
  std::string rule_;
  bool gating_ = false, delta_ = false;
};

// ---------------------------------------------------------------------------------------
// FlexAttention(Q, K, V) -> Y (ai.onnx.preview 1): attention whose scores and probabilities
// pass through the score_mod and prob_mod graphs (each maps [B, H, L, S] to the same).

class FlexAttentionKernel : public OpKernel {
 public:
  explicit FlexAttentionKernel(const KernelCreateContext& context)
      : scale_(context.has_attribute("scale") ? std::optional(context.attr_float("scale"))
                                              : std::nullopt),
        softmax_precision_(context.attr_int("softmax_precision", 0)) {
    if (const Graph* g = context.attr_graph("score_mod")) score_mod_ = context.compile_subgraph(*g);
    if (const Graph* g = context.attr_graph("prob_mod")) prob_mod_ = context.compile_subgraph(*g);
    if (softmax_precision_ != 0 && !dtype_is_float(static_cast<DType>(softmax_precision_))) {
      context.fail("softmax_precision is {}; it needs a floating-point type", softmax_precision_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& q = context.input(0);
    const Tensor& k = context.input(1);
    const Tensor& v = context.input(2);
    require_float(context, q, "Q");
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
      context.fail("Q {}, K {} and V {} need rank 4", shape_to_string(q.shape()),
                   shape_to_string(k.shape()), shape_to_string(v.shape()));
    }
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
      context.fail("Q, K and V need one type");
    }
    const int64_t batch = q.shape()[0], heads = q.shape()[1], sq = q.shape()[2], d = q.shape()[3];
    const int64_t kv_heads = k.shape()[1], sk = k.shape()[2], dv = v.shape()[3];
    if (k.shape()[0] != batch || k.shape()[3] != d || v.shape()[0] != batch ||
        v.shape()[1] != kv_heads || v.shape()[2] != sk || kv_heads == 0 || heads % kv_heads != 0) {
      context.fail("Q {}, K {} and V {} do not fit together", shape_to_string(q.shape()),
                   shape_to_string(k.shape()), shape_to_string(v.shape()));
    }
    const int64_t group = heads / kv_heads;
    const Rounder round_t = rounder_for(q.dtype(), "FlexAttention");
    // The softmax's type: softmax_precision, else float32 for the 16-bit floats.
    DType compute_dtype = q.dtype() == DType::kDouble ? DType::kDouble : DType::kFloat;
    if (softmax_precision_ != 0) compute_dtype = static_cast<DType>(softmax_precision_);
    const Rounder round_c = rounder_for(compute_dtype, "softmax_precision");
    const double scale = scale_ ? *scale_ : 1.0 / std::sqrt(static_cast<double>(d));
    const double root = round_t(std::sqrt(static_cast<float>(scale)));
    std::vector<double> qs = read_doubles(context, q, "Q");
    std::vector<double> ks = read_doubles(context, k, "K");
    const std::vector<double> vs = read_doubles(context, v, "V");
    for (double& x : qs) x = round_t(x * root);
    for (double& x : ks) x = round_t(x * root);
    const Shape scores_shape{batch, heads, sq, sk};
    // Sq x Sk scores from Q and K of a head size of 1: bounded before they are allocated.
    check_allocation(
        checked_nbytes(DType::kDouble, shape_numel(scores_shape), shape_to_string(scores_shape)));
    std::vector<double> scores(static_cast<size_t>(shape_numel(scores_shape)));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < sq; ++i) {
          for (int64_t j = 0; j < sk; ++j) {
            double dot = 0;
            for (int64_t c = 0; c < d; ++c) {
              dot += qs[((b * heads + h) * sq + i) * d + c] *
                     ks[((b * kv_heads + kh) * sk + j) * d + c];
            }
            scores[((b * heads + h) * sq + i) * sk + j] = round_c(round_t(dot));
          }
        }
      }
    }
    if (score_mod_)
      scores = apply_mod(context, *score_mod_, "score_mod", scores, scores_shape, compute_dtype);
    for (int64_t r = 0; r < batch * heads * sq; ++r) {
      double* row = scores.data() + r * sk;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < sk; ++j) max = std::max(max, row[j]);
      double sum = 0;
      for (int64_t j = 0; j < sk; ++j) {
        row[j] = round_c(std::exp(round_c(row[j] - max)));
        sum += row[j];
      }
      sum = round_c(sum);
      for (int64_t j = 0; j < sk; ++j) row[j] = round_c(row[j] / sum);
    }
    if (prob_mod_)
      scores = apply_mod(context, *prob_mod_, "prob_mod", scores, scores_shape, compute_dtype);
    std::vector<double> y(static_cast<size_t>(batch * heads * sq * dv));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t kh = h / group;
        for (int64_t i = 0; i < sq; ++i) {
          const double* p = scores.data() + ((b * heads + h) * sq + i) * sk;
          for (int64_t c = 0; c < dv; ++c) {
            double sum = 0;
            for (int64_t j = 0; j < sk; ++j)
              sum += p[j] * vs[((b * kv_heads + kh) * sk + j) * dv + c];
            y[((b * heads + h) * sq + i) * dv + c] = round_c(sum);
          }
        }
      }
    }
    write_doubles(context, 0, v.dtype(), {batch, heads, sq, dv}, y);
  }

 private:
  // The mod graph applied to `values` (a `dtype` tensor of `shape`); its one output read back
  // in the same shape.
  static std::vector<double> apply_mod(KernelContext& context, const CompiledGraph& graph,
                                       std::string_view what, const std::vector<double>& values,
                                       const Shape& shape, DType dtype) {
    Tensor input(dtype, shape);
    dispatch_float(dtype, what, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = input.mutable_data<T>();
      for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
    });
    std::vector<RuntimeValue> inputs;
    inputs.emplace_back(std::move(input));
    std::vector<RuntimeValue> results =
        context.subgraph_runner().run(graph, std::move(inputs), context.frame());
    if (results.size() != 1 || !results[0].is_tensor()) {
      context.fail("{} must return one tensor", what);
    }
    const Tensor& out = results[0].tensor();
    if (out.shape() != shape) {
      context.fail("{} returned shape {}; it needs {}", what, shape_to_string(out.shape()),
                   shape_to_string(shape));
    }
    const Rounder round_c = rounder_for(dtype, what);
    std::vector<double> back = read_doubles(context, out, what);
    for (double& x : back) x = round_c(x);
    return back;
  }

  std::optional<float> scale_;
  int64_t softmax_precision_;
  std::shared_ptr<const CompiledGraph> score_mod_;
  std::shared_ptr<const CompiledGraph> prob_mod_;
};

// Y: [B, Hq, L, Dv] of V's type.
void infer_flex_attention(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 2);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* q = input_dims(context, 0);
  const std::vector<Dim>* v = input_dims(context, 2);
  SymbolicShape y;
  if (q && v) {
    if (q->size() != 4 || v->size() != 4) fail("Q, K and V need rank 4");
    y = std::vector<Dim>{(*q)[0], (*q)[1], (*q)[2], (*v)[3]};
  }
  context.set_output(0, tensor_type(dtype, y));
}

// output: query's type, [B, T, q_num_heads * d_v]; present_state: past_state's type (else
// query's), [B, kv_num_heads, d_k, d_v].
void infer_linear_attention(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* q = input_dims(context, 0);
  const std::vector<Dim>* v = input_dims(context, 2);
  const Attribute* qh = context.node().find_attribute("q_num_heads");
  const Attribute* kvh = context.node().find_attribute("kv_num_heads");
  const int64_t q_heads = qh && qh->type == AttrType::kInt ? qh->i : 0;
  const int64_t kv_heads = kvh && kvh->type == AttrType::kInt ? kvh->i : 0;
  auto per_head = [](const Dim& dim, int64_t heads) {
    return dim.is_known() && heads > 0 ? Dim::known(dim.value / heads) : Dim{};
  };
  Dim dv = v && v->size() == 3 ? per_head((*v)[2], kv_heads) : Dim{};
  if (dtype != DType::kUndefined) {
    SymbolicShape out;
    if (q && q->size() == 3) {
      out = std::vector<Dim>{(*q)[0], (*q)[1],
                             dv.is_known() && q_heads > 0
                                 ? Dim::known(checked_mul(dv.value, q_heads, "q_num_heads x d_v"))
                                 : Dim{}};
    }
    context.set_output(0, tensor_type(dtype, out));
  }
  const DType state_dtype = context.has_input(3) ? input_dtype(context, 3) : dtype;
  if (state_dtype != DType::kUndefined) {
    SymbolicShape state;
    if (q && q->size() == 3) {
      state = std::vector<Dim>{(*q)[0], kv_heads > 0 ? Dim::known(kv_heads) : Dim{},
                               per_head((*q)[2], q_heads), dv};
    }
    context.set_output(1, tensor_type(state_dtype, state));
  }
}

}  // namespace

void register_transformer_ops(OpRegistry& registry) {
  for (int64_t version : {23, 24, 25}) {
    registry.add(
        "", "Attention", version,
        OpDefinition([version](const KernelCreateContext& context) {
          return std::unique_ptr<OpKernel>(std::make_unique<OnnxAttentionKernel>(context, version));
        }).with_types(infer_attention));
  }
  registry.add(
      "RMSNormalization", {23},
      OpDefinition(kernel_factory<RmsNormalizationKernel>()).with_types(infer_rms_normalization));
  // ONNX Runtime's SimplifiedLayerNormalization (its own op in ONNX's domain, version 1, which
  // its transformer optimizer writes for T5 / LLaMA-style RMS norms): RMSNormalization's
  // attributes and meaning, Y of scale's type.
  registry.add(
      "", "SimplifiedLayerNormalization", 1,
      OpDefinition(kernel_factory<RmsNormalizationKernel>()).with_types(infer_rms_normalization));
  registry.add(
      "RotaryEmbedding", {23},
      OpDefinition(kernel_factory<RotaryEmbeddingKernel>()).with_types(infer_same_as_input));
  registry.add("TensorScatter", {24},
               OpDefinition(kernel_factory<TensorScatterKernel>()).with_types(infer_same_as_input));
  registry.add(
      "LinearAttention", {27},
      OpDefinition(kernel_factory<LinearAttentionKernel>()).with_types(infer_linear_attention));
  registry.add("SwiGLU", {28},
               OpDefinition(kernel_factory<SwiGluKernel>()).with_types(infer_same_as_input));
  registry.add(
      "ai.onnx.preview", "FlexAttention", 1,
      OpDefinition(kernel_factory<FlexAttentionKernel>()).with_types(infer_flex_attention));
}

}  // namespace onnxkit
