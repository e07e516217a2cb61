// Op family: recurrent (RNN, GRU, LSTM).
//
// Each direction projects the whole input sequence at once (X * W^T for every time step in
// one GEMM, biases folded in), then walks the time steps with one GEMM per step for the
// recurrent product H_{t-1} * R^T. float16 computes in float; float and double in their own
// type. A batch entry whose sequence is shorter than seq_length (sequence_lens) stops
// updating after its last step: its Y rows are zero from there on and Y_h / Y_c hold its
// state at its last valid step (zero for a length of 0, as ONNX Runtime does). A reverse
// direction starts each entry at its own last valid step.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "ops/recurrent.h"

#include "core/gemm.h"
#include "ops/fused_activation.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

enum class CellKind { kRnn, kGru, kLstm };

// Gate blocks stacked in W and R: RNN [i], GRU [z r h], LSTM [i o f c].
constexpr int64_t gate_count(CellKind kind) {
  return kind == CellKind::kRnn ? 1 : kind == CellKind::kGru ? 3 : 4;
}
// Activations per direction: RNN f, GRU f g, LSTM f g h.
constexpr size_t activation_count(CellKind kind) {
  return kind == CellKind::kRnn ? 1 : kind == CellKind::kGru ? 2 : 3;
}

// The activations ONNX's recurrent ops accept (names compared ignoring case).
constexpr std::array<ActivationKind, 11> kRecurrentActivations = {
    ActivationKind::kRelu,       ActivationKind::kTanh,        ActivationKind::kSigmoid,
    ActivationKind::kAffine,     ActivationKind::kLeakyRelu,   ActivationKind::kThresholdedRelu,
    ActivationKind::kScaledTanh, ActivationKind::kHardSigmoid, ActivationKind::kElu,
    ActivationKind::kSoftsign,   ActivationKind::kSoftplus};

// Inputs of one run, converted to the compute type C and laid out sequence-major.
template <typename C>
struct RunData {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1;
  const C* x = nullptr;          // [seq, batch, input]
  const C* w = nullptr;          // [directions, gates * hidden, input]
  const C* r = nullptr;          // [directions, gates * hidden, hidden]
  const C* b = nullptr;          // [directions, 2 * gates * hidden] or null
  const C* p = nullptr;          // [directions, 3 * hidden] or null (LSTM)
  const C* h0 = nullptr;         // [directions, batch, hidden] or null
  const C* c0 = nullptr;         // [directions, batch, hidden] or null (LSTM)
  std::vector<int64_t> lengths;  // per batch entry
  C* y = nullptr;                // [seq, directions, batch, hidden] or null
  C* y_h = nullptr;              // [directions, batch, hidden]
  C* y_c = nullptr;              // [directions, batch, hidden] or null (LSTM)
};

// dst [b, a, k] = src [a, b, k], converting elements (the batch-major layout <-> ours).
template <typename From, typename To>
void swap_leading(const From* src, int64_t a, int64_t b, int64_t k, To* dst) {
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      const From* from = src + (i * b + j) * k;
      To* to = dst + (j * a + i) * k;
      for (int64_t e = 0; e < k; ++e) to[e] = convert_element<To>(from[e]);
    }
  }
}

template <typename C>
void clip_values(C* v, int64_t n, C limit) {
  for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -limit, limit);
}

template <CellKind kKind>
class RecurrentKernel final : public OpKernel {
  static constexpr int64_t kGates = gate_count(kKind);
  static constexpr size_t kActs = activation_count(kKind);

 public:
  RecurrentKernel(const KernelCreateContext& context, FloatGemm float_gemm)
      : float_gemm_(float_gemm) {
    const std::string direction = context.attr_string("direction", "forward");
    if (direction == "forward") {
      directions_ = 1;
    } else if (direction == "reverse") {
      directions_ = 1;
      reverse_ = true;
    } else if (direction == "bidirectional") {
      directions_ = 2;
    } else {
      context.fail("direction '{}' is not one of forward, reverse, bidirectional", direction);
    }
    hidden_size_ = context.attr_int("hidden_size", -1);
    if (context.has_attribute("hidden_size") && hidden_size_ <= 0)
      context.fail("hidden_size {} must be positive", hidden_size_);
    if (context.has_attribute("clip")) {
      const float clip = context.attr_float("clip");
      if (!(clip > 0.0f)) context.fail("clip {} must be positive", clip);
      clip_ = clip;
    }
    if (context.opset() >= 14) {
      layout_ = context.attr_int("layout", 0);
      if (layout_ != 0 && layout_ != 1) context.fail("layout {} is not 0 or 1", layout_);
    }
    if constexpr (kKind == CellKind::kGru)
      linear_before_reset_ = context.attr_int("linear_before_reset", 0) != 0;
    if constexpr (kKind == CellKind::kLstm)
      input_forget_ = context.attr_int("input_forget", 0) != 0;
    parse_activations(context);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& w = context.input(1);
    const Tensor& r = context.input(2);
    if (x.rank() != 3) context.fail("X must have rank 3, got shape {}", shape_to_string(x.shape()));
    if (r.rank() != 3) context.fail("R must have rank 3, got shape {}", shape_to_string(r.shape()));
    const int64_t seq = layout_ ? x.shape()[1] : x.shape()[0];
    const int64_t batch = layout_ ? x.shape()[0] : x.shape()[1];
    const int64_t input = x.shape()[2];
    const int64_t hidden = r.shape()[2];
    if (hidden_size_ >= 0 && hidden != hidden_size_)
      context.fail("R has shape {} but hidden_size is {}", shape_to_string(r.shape()),
                   hidden_size_);
    const int64_t gh = kGates * hidden;
    check_shape(context, w, "W", {directions_, gh, input});
    check_shape(context, r, "R", {directions_, gh, hidden});
    for (size_t i = 1; i < context.num_inputs(); ++i) {
      if (i != 4 && context.has_input(i) && context.input(i).dtype() != x.dtype())
        context.fail("input {} has type {} but X has type {}", i,
                     dtype_name(context.input(i).dtype()), dtype_name(x.dtype()));
    }
    if (context.has_input(3)) check_shape(context, context.input(3), "B", {directions_, 2 * gh});
    const Shape state_shape =
        layout_ ? Shape{batch, directions_, hidden} : Shape{directions_, batch, hidden};
    if (context.has_input(5)) check_shape(context, context.input(5), "initial_h", state_shape);
    if constexpr (kKind == CellKind::kLstm) {
      if (context.has_input(6)) check_shape(context, context.input(6), "initial_c", state_shape);
      if (context.has_input(7))
        check_shape(context, context.input(7), "P", {directions_, 3 * hidden});
    }

    std::vector<int64_t> lengths(static_cast<size_t>(batch), seq);
    if (context.has_input(4)) {
      const Tensor& lens = context.input(4);
      check_shape(context, lens, "sequence_lens", {batch});
      lengths = read_int64s(lens, "sequence_lens");
      for (int64_t i = 0; i < batch; ++i) {
        if (lengths[i] < 0 || lengths[i] > seq)
          context.fail("sequence_lens value {} at index {} is outside [0, {}]", lengths[i], i, seq);
      }
    }

    switch (x.dtype()) {
      case DType::kFloat:
        return run<float, float>(context, seq, batch, input, hidden, std::move(lengths));
      case DType::kDouble:
        return run<double, double>(context, seq, batch, input, hidden, std::move(lengths));
      case DType::kFloat16:
        return run<Float16, float>(context, seq, batch, input, hidden, std::move(lengths));
      default:
        context.fail("type {} is not supported (needs float16, float or double)",
                     dtype_name(x.dtype()));
    }
  }

 private:
  void parse_activations(const KernelCreateContext& context) {
    std::vector<std::string> names = context.attr_strings("activations");
    if (names.empty()) {
      if constexpr (kKind == CellKind::kRnn) names = {"Tanh"};
      if constexpr (kKind == CellKind::kGru) names = {"Sigmoid", "Tanh"};
      if constexpr (kKind == CellKind::kLstm) names = {"Sigmoid", "Tanh", "Tanh"};
    }
    const size_t wanted = kActs * static_cast<size_t>(directions_);
    // One direction's list for a bidirectional node serves both directions.
    if (names.size() != wanted && names.size() != kActs) {
      context.fail("activations has {} entries, expected {} ({} per direction)", names.size(),
                   wanted, kActs);
    }
    const std::vector<float> alphas = context.attr_floats("activation_alpha");
    const std::vector<float> betas = context.attr_floats("activation_beta");
    size_t next_alpha = 0;
    size_t next_beta = 0;
    for (const std::string& name : names) {
      const ActivationSpec* spec = find_activation(name, true);
      if (!spec ||
          std::ranges::find(kRecurrentActivations, spec->kind) == kRecurrentActivations.end()) {
        context.fail("activation '{}' is not supported", name);
      }
      ActivationFunction act{spec->kind};
      // alpha / beta values are consumed in order by the functions that take them.
      if (spec->params >= 1) {
        act.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : spec->alpha;
      }
      if (spec->params >= 2) act.beta = next_beta < betas.size() ? betas[next_beta++] : spec->beta;
      activations_.push_back(act);
    }
    if (activations_.size() < wanted) {
      const std::vector<ActivationFunction> forward = activations_;
      activations_.insert(activations_.end(), forward.begin(), forward.end());
    }
  }

  static void check_shape(const KernelContext& context, const Tensor& tensor, const char* what,
                          const Shape& expected) {
    if (tensor.shape() != expected)
      context.fail("{} has shape {}, expected {}", what, shape_to_string(tensor.shape()),
                   shape_to_string(expected));
  }

  template <typename T, typename C>
  void run(KernelContext& context, int64_t seq, int64_t batch, int64_t input, int64_t hidden,
           std::vector<int64_t> lengths) const {
    RunData<C> data;
    data.seq = seq;
    data.batch = batch;
    data.input = input;
    data.hidden = hidden;
    data.directions = directions_;
    data.lengths = std::move(lengths);

    std::vector<C> x_buf, w_buf, r_buf, b_buf, p_buf, h0_buf, c0_buf;
    const Tensor& x = context.input(0);
    if (layout_) {
      x_buf.resize(static_cast<size_t>(x.numel()));
      swap_leading(x.data<T>(), batch, seq, input, x_buf.data());
      data.x = x_buf.data();
    } else {
      data.x = elements_as<T>(x, x_buf);
    }
    data.w = elements_as<T>(context.input(1), w_buf);
    data.r = elements_as<T>(context.input(2), r_buf);
    if (context.has_input(3)) data.b = elements_as<T>(context.input(3), b_buf);
    auto state = [&](size_t index, std::vector<C>& buf) -> const C* {
      if (!context.has_input(index)) return nullptr;
      const Tensor& tensor = context.input(index);
      if (!layout_) return elements_as<T>(tensor, buf);
      buf.resize(static_cast<size_t>(tensor.numel()));
      swap_leading(tensor.data<T>(), batch, directions_, hidden, buf.data());
      return buf.data();
    };
    data.h0 = state(5, h0_buf);
    if constexpr (kKind == CellKind::kLstm) {
      data.c0 = state(6, c0_buf);
      if (context.has_input(7)) data.p = elements_as<T>(context.input(7), p_buf);
    }

    const int64_t state_size = directions_ * batch * hidden;
    std::vector<C> y, y_h(static_cast<size_t>(state_size)), y_c;
    if (context.wants_output(0)) {
      y.assign(static_cast<size_t>(seq * state_size), C(0));
      data.y = y.data();
    }
    data.y_h = y_h.data();
    if constexpr (kKind == CellKind::kLstm) {
      y_c.resize(static_cast<size_t>(state_size));
      data.y_c = y_c.data();
    }

    for (int64_t d = 0; d < directions_; ++d) run_direction(data, d, reverse_ || d == 1);

    const DType dtype = x.dtype();
    auto store = [&](size_t index, const std::vector<C>& values, int64_t outer) {
      if (!context.wants_output(index)) return;
      // outer: the dims before batch in our layout (seq * directions, or directions).
      Shape shape = layout_ ? Shape{batch, outer, hidden} : Shape{outer, batch, hidden};
      if (index == 0)
        shape = layout_ ? Shape{batch, seq, directions_, hidden}
                        : Shape{seq, directions_, batch, hidden};
      T* out = context.allocate_output(index, dtype, shape).template mutable_data<T>();
      if (layout_) {
        swap_leading(values.data(), outer, batch, hidden, out);
      } else {
        for (size_t i = 0; i < values.size(); ++i) out[i] = convert_element<T>(values[i]);
      }
    };
    store(0, y, seq * directions_);
    store(1, y_h, directions_);
    if constexpr (kKind == CellKind::kLstm) store(2, y_c, directions_);
  }

  template <typename C>
  void run_direction(const RunData<C>& data, int64_t d, bool reverse) const {
    const int64_t seq = data.seq, batch = data.batch, hidden = data.hidden;
    const int64_t gh = kGates * hidden;
    const C* w = data.w + d * gh * data.input;
    const C* r = data.r + d * gh * hidden;
    const ActivationFunction* act = &activations_[static_cast<size_t>(d) * kActs];
    const bool lbr = linear_before_reset_;
    const C limit = clip_ ? static_cast<C>(*clip_) : C(0);

    // Input projection of every time step at once, with the biases folded in (GRU with
    // linear_before_reset keeps Rbh apart: it sits inside the reset gate's product).
    std::vector<C> projected(static_cast<size_t>(seq * batch * gh));
    multiply_transposed<C>(seq * batch, gh, data.input, data.x, data.input, w, data.input,
                           projected.data(), gh);
    std::vector<C> rb_h;  // GRU linear_before_reset: Rbh
    if (data.b) {
      const C* wb = data.b + d * 2 * gh;
      const C* rb = wb + gh;
      std::vector<C> bias(static_cast<size_t>(gh));
      for (int64_t j = 0; j < gh; ++j) bias[j] = wb[j] + rb[j];
      if (kKind == CellKind::kGru && lbr) {
        rb_h.assign(rb + 2 * hidden, rb + 3 * hidden);
        for (int64_t j = 0; j < hidden; ++j) bias[2 * hidden + j] = wb[2 * hidden + j];
      }
      for (int64_t row = 0; row < seq * batch; ++row) {
        C* dst = projected.data() + row * gh;
        for (int64_t j = 0; j < gh; ++j) dst[j] += bias[j];
      }
    }
    const C* p_i = nullptr;
    const C* p_o = nullptr;
    const C* p_f = nullptr;
    if (data.p) {
      p_i = data.p + d * 3 * hidden;
      p_o = p_i + hidden;
      p_f = p_o + hidden;
    }

    const int64_t state_size = batch * hidden;
    std::vector<C> h(static_cast<size_t>(state_size), C(0));
    std::vector<C> c;
    if (data.h0) std::copy_n(data.h0 + d * state_size, state_size, h.begin());
    if constexpr (kKind == CellKind::kLstm) {
      c.assign(static_cast<size_t>(state_size), C(0));
      if (data.c0) std::copy_n(data.c0 + d * state_size, state_size, c.begin());
    }
    std::vector<C> gates(static_cast<size_t>(batch * gh));
    std::vector<C> h_next(static_cast<size_t>(state_size));
    std::vector<C> c_next(kKind == CellKind::kLstm ? static_cast<size_t>(state_size) : 0);
    std::vector<C> scratch(kKind == CellKind::kGru ? static_cast<size_t>(state_size) : 0);

    for (int64_t step = 0; step < seq; ++step) {
      const int64_t t = reverse ? seq - 1 - step : step;
      const C* xt = projected.data() + t * batch * gh;
      // gates = H_{t-1} * R^T (GRU without linear_before_reset: the z and r blocks only).
      const int64_t rec_cols = (kKind == CellKind::kGru && !lbr) ? 2 * hidden : gh;
      multiply_transposed<C>(batch, rec_cols, hidden, h.data(), hidden, r, hidden, gates.data(),
                             gh);

      if constexpr (kKind == CellKind::kRnn) {
        for (int64_t i = 0; i < state_size; ++i) h_next[i] = xt[i] + gates[i];
        if (clip_) clip_values(h_next.data(), state_size, limit);
        act[0].apply(h_next.data(), state_size);
      } else if constexpr (kKind == CellKind::kGru) {
        for (int64_t b = 0; b < batch; ++b) {
          C* g = gates.data() + b * gh;
          const C* xg = xt + b * gh;
          for (int64_t j = 0; j < 2 * hidden; ++j) g[j] += xg[j];
          if (clip_) clip_values(g, 2 * hidden, limit);
          act[0].apply(g, 2 * hidden);  // z, r
        }
        if (!lbr) {
          // (r . H_{t-1}) * Rh^T
          for (int64_t b = 0; b < batch; ++b) {
            const C* rg = gates.data() + b * gh + hidden;
            for (int64_t j = 0; j < hidden; ++j)
              scratch[b * hidden + j] = rg[j] * h[b * hidden + j];
          }
          multiply_transposed<C>(batch, hidden, hidden, scratch.data(), hidden,
                                 r + 2 * hidden * hidden, hidden, gates.data() + 2 * hidden, gh);
        }
        for (int64_t b = 0; b < batch; ++b) {
          C* g = gates.data() + b * gh;
          const C* xg = xt + b * gh + 2 * hidden;
          C* hg = g + 2 * hidden;
          if (lbr) {
            for (int64_t j = 0; j < hidden; ++j)
              hg[j] = xg[j] + g[hidden + j] * (hg[j] + (rb_h.empty() ? C(0) : rb_h[j]));
          } else {
            for (int64_t j = 0; j < hidden; ++j) hg[j] += xg[j];
          }
          if (clip_) clip_values(hg, hidden, limit);
          act[1].apply(hg, hidden);
          const C* hp = h.data() + b * hidden;
          C* hn = h_next.data() + b * hidden;
          for (int64_t j = 0; j < hidden; ++j) hn[j] = (C(1) - g[j]) * hg[j] + g[j] * hp[j];
        }
      } else {
        for (int64_t b = 0; b < batch; ++b) {
          C* gi = gates.data() + b * gh;
          C* go = gi + hidden;
          C* gf = go + hidden;
          C* gc = gf + hidden;
          const C* xg = xt + b * gh;
          for (int64_t j = 0; j < gh; ++j) gi[j] += xg[j];
          const C* cp = c.data() + b * hidden;
          C* cn = c_next.data() + b * hidden;
          C* hn = h_next.data() + b * hidden;
          if (p_i) {
            for (int64_t j = 0; j < hidden; ++j) gi[j] += p_i[j] * cp[j];
          }
          if (clip_) clip_values(gi, hidden, limit);
          act[0].apply(gi, hidden);
          if (input_forget_) {
            for (int64_t j = 0; j < hidden; ++j) gf[j] = C(1) - gi[j];
          } else {
            if (p_f) {
              for (int64_t j = 0; j < hidden; ++j) gf[j] += p_f[j] * cp[j];
            }
            if (clip_) clip_values(gf, hidden, limit);
            act[0].apply(gf, hidden);
          }
          if (clip_) clip_values(gc, hidden, limit);
          act[1].apply(gc, hidden);
          for (int64_t j = 0; j < hidden; ++j) cn[j] = gf[j] * cp[j] + gi[j] * gc[j];
          if (p_o) {
            for (int64_t j = 0; j < hidden; ++j) go[j] += p_o[j] * cn[j];
          }
          if (clip_) clip_values(go, hidden, limit);
          act[0].apply(go, hidden);
          // h(Ct) is not clipped (as ONNX Runtime): clip bounds the gate inputs.
          std::copy_n(cn, hidden, hn);
          act[2].apply(hn, hidden);
          for (int64_t j = 0; j < hidden; ++j) hn[j] *= go[j];
        }
      }

      // Commit the new state of the entries still inside their sequence.
      for (int64_t b = 0; b < batch; ++b) {
        if (t >= data.lengths[b]) continue;
        std::copy_n(h_next.data() + b * hidden, hidden, h.data() + b * hidden);
        if constexpr (kKind == CellKind::kLstm)
          std::copy_n(c_next.data() + b * hidden, hidden, c.data() + b * hidden);
        if (data.y)
          std::copy_n(h_next.data() + b * hidden, hidden,
                      data.y + ((t * directions_ + d) * batch + b) * hidden);
      }
    }

    for (int64_t b = 0; b < batch; ++b) {
      const bool empty = data.lengths[b] == 0;
      C* yh = data.y_h + (d * batch + b) * hidden;
      if (empty) {
        std::fill_n(yh, hidden, C(0));
      } else {
        std::copy_n(h.data() + b * hidden, hidden, yh);
      }
      if constexpr (kKind == CellKind::kLstm) {
        C* yc = data.y_c + (d * batch + b) * hidden;
        if (empty) {
          std::fill_n(yc, hidden, C(0));
        } else {
          std::copy_n(c.data() + b * hidden, hidden, yc);
        }
      }
    }
  }

  // C = op(A) * B^T for the compute type: float through float_gemm_, double through core/gemm.
  template <typename C>
  void multiply_transposed(int64_t m, int64_t n, int64_t k, const C* a, int64_t lda, const C* b,
                           int64_t ldb, C* c, int64_t ldc) const {
    if constexpr (std::is_same_v<C, float>) {
      float_gemm_(false, true, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    } else {
      gemm<C>(false, true, m, n, k, C(1), a, lda, b, ldb, C(0), c, ldc);
    }
  }

  FloatGemm float_gemm_;
  int64_t directions_ = 1;
  bool reverse_ = false;
  int64_t hidden_size_ = -1;
  std::optional<float> clip_;
  int64_t layout_ = 0;
  bool linear_before_reset_ = false;
  bool input_forget_ = false;
  std::vector<ActivationFunction> activations_;  // kActs per direction, forward first
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// RNN, GRU, LSTM: Y [seq, directions, batch, hidden] and Y_h (and LSTM's Y_c) [directions,
// batch, hidden]; with layout 1 (opset 14) batch comes first: [batch, seq, directions,
// hidden] and [batch, directions, hidden]. hidden from hidden_size or R's last dim.
void infer_recurrent(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const bool batch_first = context.opset() >= 14 && attributes.attr_int("layout", 0) != 0;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* r = input_dims(context, 2);
  if (x && x->size() != 3) fail("X must have rank 3, got {}", x->size());
  const Dim seq = x ? (*x)[batch_first ? 1 : 0] : Dim{};
  const Dim batch = x ? (*x)[batch_first ? 0 : 1] : Dim{};
  Dim hidden;
  if (attributes.has_attribute("hidden_size")) {
    hidden = Dim::known(attributes.attr_int("hidden_size"));
  } else if (r && r->size() == 3) {
    hidden = (*r)[2];
  }
  const Dim directions =
      Dim::known(attributes.attr_string("direction", "forward") == "bidirectional" ? 2 : 1);
  context.set_output(
      0, tensor_type(dtype, batch_first ? std::vector<Dim>{batch, seq, directions, hidden}
                                        : std::vector<Dim>{seq, directions, batch, hidden}));
  const std::vector<Dim> state = batch_first ? std::vector<Dim>{batch, directions, hidden}
                                             : std::vector<Dim>{directions, batch, hidden};
  for (size_t i = 1; i < context.num_outputs(); ++i)
    context.set_output(i, tensor_type(dtype, state));
}

}  // namespace

KernelFactory recurrent_kernel_factory(std::string_view op_type, FloatGemm gemm) {
  auto factory = [gemm]<CellKind kKind>() -> KernelFactory {
    return [gemm](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
      return std::make_unique<RecurrentKernel<kKind>>(context, gemm);
    };
  };
  if (op_type == "RNN") return factory.template operator()<CellKind::kRnn>();
  if (op_type == "GRU") return factory.template operator()<CellKind::kGru>();
  if (op_type == "LSTM") return factory.template operator()<CellKind::kLstm>();
  fail("no recurrent op '{}'", op_type);
}

void register_recurrent_ops(OpRegistry& registry) {
  // Version 22 of each added bfloat16.
  registry.add("RNN", {1, 7, 14, 22}, recurrent_kernel_factory("RNN", gemm<float>));
  registry.add("GRU", {1, 3, 7, 14, 22}, recurrent_kernel_factory("GRU", gemm<float>));
  registry.add("LSTM", {1, 7, 14, 22}, recurrent_kernel_factory("LSTM", gemm<float>));

  // Type inference, every version.
  registry.set_type_rule("", "RNN", infer_recurrent);
  registry.set_type_rule("", "GRU", infer_recurrent);
  registry.set_type_rule("", "LSTM", infer_recurrent);
}

}  // namespace onnxkit
