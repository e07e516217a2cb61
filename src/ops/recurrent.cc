// Op family: recurrent (RNN, GRU, LSTM).
//
// Each direction projects the whole input sequence at once (X * W^T for every time step in
// one GEMM, biases folded in), then walks the time steps with one GEMM per step for the
// recurrent product H_{t-1} * R^T. float16 computes in float; float and double in their own
// type. A batch entry whose sequence is shorter than seq_length (sequence_lens) stops
// updating after its last step: its Y rows are zero from there on and Y_h / Y_c hold its
// state at its last valid step (zero for a length of 0, as ONNX Runtime does). A reverse
// direction starts each entry at its own last valid step, all entries at the same step, as
// ORT aligns reversed sequences.
//
// com.microsoft DynamicQuantizeLSTM (ops/recurrent.h) runs this LSTM with its two weight
// products replaced by ONNX Runtime's dynamically quantized ones. Each quantizes its whole
// operand at once, so which rows share a product decides the result; they are ORT's: X over
// the steps some entry reaches, and per step the entries' states, a finished entry's state
// once more after its last step and as zeros after that (ORT's zeroed output rows).
#include "ops/recurrent.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "core/gemm.h"
#include "ir/domain.h"
#include "ops/fused_activation.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

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

constexpr std::array<const char*, 4> kQuantizedInputNames = {"W_scale", "W_zero_point", "R_scale",
                                                             "R_zero_point"};

// DynamicQuantizeLSTM's products on plain loops, from the node's inputs at run time.
class ReferenceLstmProducts final : public RecurrentProducts {
 public:
  ReferenceLstmProducts(const Tensor& w, LstmWeightParams w_params, const Tensor& r,
                        LstmWeightParams r_params)
      : w_(w), r_(r), w_params_(std::move(w_params)), r_params_(std::move(r_params)) {}

  void multiply(Weights weights, int64_t direction, const float* a, int64_t rows,
                float* y) const override {
    const Tensor& t = weights == Weights::kInput ? w_ : r_;
    const LstmWeightParams& p = weights == Weights::kInput ? w_params_ : r_params_;
    const int64_t k = t.shape()[1], n = t.shape()[2];
    // DynamicQuantizeLinear's range, scale and zero point (ORT's GetQuantizationParameter).
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < rows * k; ++i) {
      lo = std::fmin(lo, a[i]);
      hi = std::fmax(hi, a[i]);
    }
    const float a_scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    const int32_t a_zp =
        static_cast<int32_t>(std::nearbyint(std::clamp(0.0f - lo / a_scale, 0.0f, 255.0f)));
    std::vector<int32_t> qa(static_cast<size_t>(rows * k));
    for (int64_t i = 0; i < rows * k; ++i) {
      const float q = std::nearbyint(a[i] / a_scale) + static_cast<float>(a_zp);
      qa[i] = static_cast<int32_t>(std::clamp(q, 0.0f, 255.0f)) - a_zp;
    }
    std::vector<int32_t> qw(static_cast<size_t>(k * n));
    const int32_t w_zp = p.zero_points[static_cast<size_t>(direction)];
    for (int64_t i = 0; i < k * n; ++i) {
      const int64_t at = direction * k * n + i;
      qw[i] = (t.dtype() == DType::kUInt8 ? int32_t{t.data<uint8_t>()[at]}
                                          : int32_t{t.data<int8_t>()[at]}) -
              w_zp;
    }
    std::vector<float> multipliers(static_cast<size_t>(p.count));
    for (int64_t j = 0; j < p.count; ++j)
      multipliers[j] = a_scale * p.scales[static_cast<size_t>(direction * p.count + j)];
    std::vector<int32_t> acc(static_cast<size_t>(n));
    for (int64_t row = 0; row < rows; ++row) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t i = 0; i < k; ++i) {
        const int32_t av = qa[row * k + i];
        const int32_t* wr = qw.data() + i * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * wr[j];
      }
      for (int64_t j = 0; j < n; ++j)
        y[row * n + j] = static_cast<float>(acc[j]) * multipliers[p.count == 1 ? 0 : j];
    }
  }

 private:
  const Tensor& w_;
  const Tensor& r_;
  LstmWeightParams w_params_, r_params_;
};

template <CellKind kKind>
class RecurrentKernel final : public OpKernel {
  static constexpr int64_t kGates = gate_count(kKind);
  static constexpr size_t kActs = activation_count(kKind);

 public:
  // `quantized`: DynamicQuantizeLSTM, on `products` when given (else the reference ones).
  // Otherwise `products` serve float inputs.
  explicit RecurrentKernel(const KernelCreateContext& context, bool quantized = false,
                           std::shared_ptr<const RecurrentProducts> products = nullptr)
      : quantized_(quantized), products_(std::move(products)) {
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
    const int64_t hidden = quantized_ ? r.shape()[1] : r.shape()[2];
    if (hidden_size_ >= 0 && hidden != hidden_size_)
      context.fail("R has shape {} but hidden_size is {}", shape_to_string(r.shape()),
                   hidden_size_);
    const int64_t gh = kGates * hidden;
    if (quantized_) {
      check_shape(context, w, "W", {directions_, input, gh});
      check_shape(context, r, "R", {directions_, hidden, gh});
    } else {
      check_shape(context, w, "W", {directions_, gh, input});
      check_shape(context, r, "R", {directions_, gh, hidden});
    }
    for (size_t i = 1; i < std::min<size_t>(context.num_inputs(), 8); ++i) {
      if (quantized_ && (i == 1 || i == 2)) continue;
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

    if constexpr (kKind == CellKind::kLstm) {
      if (quantized_) {
        if (x.dtype() != DType::kFloat)
          context.fail("X has type {}, DynamicQuantizeLSTM needs float", dtype_name(x.dtype()));
        if (products_)
          return run<float, float>(context, seq, batch, input, hidden, lengths, products_.get());
        for (size_t i : {kLstmWScale, kLstmWZeroPoint, kLstmRScale, kLstmRZeroPoint}) {
          if (!context.has_input(i))
            context.fail("input {} ({}) is missing", i, kQuantizedInputNames[i - kLstmWScale]);
        }
        const ReferenceLstmProducts products(
            w,
            read_lstm_weight_params(context.node(), w, context.input(kLstmWScale),
                                    context.input(kLstmWZeroPoint), directions_, input, hidden,
                                    "W"),
            r,
            read_lstm_weight_params(context.node(), r, context.input(kLstmRScale),
                                    context.input(kLstmRZeroPoint), directions_, hidden, hidden,
                                    "R"));
        return run<float, float>(context, seq, batch, input, hidden, lengths, &products);
      }
    }
    switch (x.dtype()) {
      case DType::kFloat:
        return run<float, float>(context, seq, batch, input, hidden, std::move(lengths),
                                 products_.get());
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
    // ONNX's RNN schema defaults activations to {Tanh, Tanh}, and ONNX Runtime writes that
    // default out when it saves an optimized model: a one-direction node takes the first.
    if (directions_ == 1 && names.size() == 2 * kActs) names.resize(kActs);
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
           std::vector<int64_t> lengths, const RecurrentProducts* products = nullptr) const {
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
    if (!products) {
      data.w = elements_as<T>(context.input(1), w_buf);
      data.r = elements_as<T>(context.input(2), r_buf);
    }
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

    for (int64_t d = 0; d < directions_; ++d) run_direction(data, d, reverse_ || d == 1, products);

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
  void run_direction(const RunData<C>& data, int64_t d, bool reverse,
                     const RecurrentProducts* products) const {
    const int64_t seq = data.seq, batch = data.batch, hidden = data.hidden;
    const int64_t gh = kGates * hidden;
    const C* w = products ? nullptr : data.w + d * gh * data.input;
    const C* r = products ? nullptr : data.r + d * gh * hidden;
    using Weights = RecurrentProducts::Weights;
    // The weight products: op(a) [rows, k] x W or R^T of this direction into y (ldc gh).
    auto product = [&](Weights which, const C* a, int64_t rows, int64_t cols, C* y) {
      if constexpr (std::is_same_v<C, float>) {
        if (products) return products->multiply(which, d, a, rows, y);
      }
      const int64_t k = which == Weights::kInput ? data.input : hidden;
      gemm<C>(false, true, rows, cols, k, C(1), a, k, which == Weights::kInput ? w : r, k, C(0), y,
              gh);
    };
    // y (ldc gh) = a [rows, hidden] x R's output columns [first, first + count) of this
    // direction.
    auto columns = [&](const C* a, int64_t rows, int64_t first, int64_t count, C* y) {
      if constexpr (std::is_same_v<C, float>) {
        if (products &&
            products->multiply_columns(Weights::kRecurrent, d, a, rows, first, count, y, gh)) {
          return;
        }
      }
      gemm<C>(false, true, rows, count, hidden, C(1), a, hidden, r + first * hidden, hidden, C(0),
              y, gh);
    };
    auto activate = [&](const ActivationFunction& f, C* x, int64_t n) {
      if constexpr (std::is_same_v<C, float>) {
        if (products) return products->activate(f, x, n);
      }
      f.apply(x, n);
    };
    const ActivationFunction* act = &activations_[static_cast<size_t>(d) * kActs];
    const bool lbr = linear_before_reset_;
    const C limit = clip_ ? static_cast<C>(*clip_) : C(0);

    // Input projection of every time step at once, with the biases folded in (GRU with
    // linear_before_reset keeps Rbh apart: it sits inside the reset gate's product).
    // The quantized products add the biases after the recurrent product, as ORT does: its
    // float sums round in that order.
    // Only the steps some entry reaches: ORT quantizes X over those rows.
    const int64_t steps =
        batch == 0 ? 0 : *std::max_element(data.lengths.begin(), data.lengths.end());
    std::vector<C> projected(static_cast<size_t>(seq * batch * gh));
    if (steps > 0) product(Weights::kInput, data.x, steps * batch, gh, projected.data());
    std::vector<C> rb_h;        // GRU linear_before_reset: Rbh
    std::vector<C> bias_after;  // quantized: Wb + Rb, added after the recurrent product
    if (data.b && products && kKind == CellKind::kLstm) {
      const C* wb = data.b + d * 2 * gh;
      bias_after.resize(static_cast<size_t>(gh));
      for (int64_t j = 0; j < gh; ++j) bias_after[j] = wb[j] + wb[gh + j];
    } else if (data.b) {
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

    // Every entry starts at step 0: a reverse direction walks entry b from its own last valid
    // time (lengths[b] - 1) down, as ORT aligns reversed sequences. An entry past its length
    // is idle: its state stays, and it enters the recurrent product as zeros (ORT feeds its
    // zeroed output rows; the zeros keep a quantized product's range as the active rows set).
    std::vector<int64_t> time(static_cast<size_t>(batch));
    std::vector<const C*> x_rows(static_cast<size_t>(batch));
    std::vector<C> h_active;
    for (int64_t step = 0; step < steps; ++step) {
      bool idle = false;
      for (int64_t b = 0; b < batch; ++b) {
        const bool active = step < data.lengths[b];
        idle = idle || !active;
        time[b] = !active ? -1 : reverse ? data.lengths[b] - 1 - step : step;
        x_rows[b] = projected.data() + ((active ? time[b] : 0) * batch + b) * gh;
      }
      const C* h_in = h.data();
      if (idle) {
        h_active = h;
        for (int64_t b = 0; b < batch; ++b) {
          if (step > data.lengths[b]) std::fill_n(h_active.data() + b * hidden, hidden, C(0));
        }
        h_in = h_active.data();
      }
      // gates = H_{t-1} * R^T (GRU without linear_before_reset: the z and r blocks only).
      if (kKind == CellKind::kGru && !lbr) {
        columns(h_in, batch, 0, 2 * hidden, gates.data());
      } else {
        product(Weights::kRecurrent, h_in, batch, gh, gates.data());
      }

      if constexpr (kKind == CellKind::kRnn) {
        for (int64_t b = 0; b < batch; ++b) {
          for (int64_t j = 0; j < hidden; ++j)
            h_next[b * hidden + j] = x_rows[b][j] + gates[b * hidden + j];
        }
        if (clip_) clip_values(h_next.data(), state_size, limit);
        activate(act[0], h_next.data(), state_size);
      } else if constexpr (kKind == CellKind::kGru) {
        for (int64_t b = 0; b < batch; ++b) {
          C* g = gates.data() + b * gh;
          const C* xg = x_rows[b];
          for (int64_t j = 0; j < 2 * hidden; ++j) g[j] += xg[j];
          if (clip_) clip_values(g, 2 * hidden, limit);
          activate(act[0], g, 2 * hidden);  // z, r
        }
        if (!lbr) {
          // (r . H_{t-1}) * Rh^T
          for (int64_t b = 0; b < batch; ++b) {
            const C* rg = gates.data() + b * gh + hidden;
            for (int64_t j = 0; j < hidden; ++j)
              scratch[b * hidden + j] = rg[j] * h[b * hidden + j];
          }
          columns(scratch.data(), batch, 2 * hidden, hidden, gates.data() + 2 * hidden);
        }
        for (int64_t b = 0; b < batch; ++b) {
          C* g = gates.data() + b * gh;
          const C* xg = x_rows[b] + 2 * hidden;
          C* hg = g + 2 * hidden;
          if (lbr) {
            for (int64_t j = 0; j < hidden; ++j)
              hg[j] = xg[j] + g[hidden + j] * (hg[j] + (rb_h.empty() ? C(0) : rb_h[j]));
          } else {
            for (int64_t j = 0; j < hidden; ++j) hg[j] += xg[j];
          }
          if (clip_) clip_values(hg, hidden, limit);
          activate(act[1], hg, hidden);
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
          const C* xg = x_rows[b];
          for (int64_t j = 0; j < gh; ++j) gi[j] += xg[j];
          if (!bias_after.empty()) {
            for (int64_t j = 0; j < gh; ++j) gi[j] += bias_after[j];
          }
          const C* cp = c.data() + b * hidden;
          C* cn = c_next.data() + b * hidden;
          C* hn = h_next.data() + b * hidden;
          if (p_i) {
            for (int64_t j = 0; j < hidden; ++j) gi[j] += p_i[j] * cp[j];
          }
          if (clip_) clip_values(gi, hidden, limit);
          activate(act[0], gi, hidden);
          if (input_forget_) {
            for (int64_t j = 0; j < hidden; ++j) gf[j] = C(1) - gi[j];
          } else {
            if (p_f) {
              for (int64_t j = 0; j < hidden; ++j) gf[j] += p_f[j] * cp[j];
            }
            if (clip_) clip_values(gf, hidden, limit);
            activate(act[0], gf, hidden);
          }
          if (clip_) clip_values(gc, hidden, limit);
          activate(act[1], gc, hidden);
          for (int64_t j = 0; j < hidden; ++j) cn[j] = gf[j] * cp[j] + gi[j] * gc[j];
          if (p_o) {
            for (int64_t j = 0; j < hidden; ++j) go[j] += p_o[j] * cn[j];
          }
          if (clip_) clip_values(go, hidden, limit);
          activate(act[0], go, hidden);
          // h(Ct) is not clipped (as ONNX Runtime): clip bounds the gate inputs.
          std::copy_n(cn, hidden, hn);
          activate(act[2], hn, hidden);
          for (int64_t j = 0; j < hidden; ++j) hn[j] *= go[j];
        }
      }

      // Commit the new state of the entries still inside their sequence.
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t t = time[b];
        if (t < 0) continue;
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

  int64_t directions_ = 1;
  bool reverse_ = false;
  int64_t hidden_size_ = -1;
  std::optional<float> clip_;
  int64_t layout_ = 0;
  bool linear_before_reset_ = false;
  bool input_forget_ = false;
  std::vector<ActivationFunction> activations_;  // kActs per direction, forward first
  bool quantized_ = false;                       // DynamicQuantizeLSTM
  std::shared_ptr<const RecurrentProducts> products_;
};

}  // namespace

LstmWeightParams read_lstm_weight_params(const Node& node, const Tensor& weights,
                                         const Tensor& scale, const Tensor& zero_point,
                                         int64_t directions, int64_t k, int64_t hidden,
                                         std::string_view name) {
  const Shape expected{directions, k, 4 * hidden};
  if (weights.shape() != expected) {
    fail_at(node, "{} has shape {}, expected {} ([directions, {}, 4 * hidden])", name,
            shape_to_string(weights.shape()), shape_to_string(expected),
            name == "W" ? "input" : "hidden");
  }
  if (weights.dtype() != DType::kUInt8 && weights.dtype() != DType::kInt8)
    fail_at(node, "{} has type {}, expected uint8 or int8", name, dtype_name(weights.dtype()));
  // [directions] per tensor, or [directions, 4 * hidden] per column.
  auto check_param_shape = [&](const Tensor& t, std::string_view what) {
    const Shape& s = t.shape();
    const bool ok = (s.size() == 1 && s[0] == directions) ||
                    (s.size() == 2 && s[0] == directions && s[1] == 4 * hidden);
    if (!ok) {
      fail_at(node, "{}_{} has shape {}, expected [{}] (per tensor) or [{}, {}] (per column)", name,
              what, shape_to_string(s), directions, directions, 4 * hidden);
    }
  };
  check_param_shape(scale, "scale");
  check_param_shape(zero_point, "zero_point");
  if (scale.dtype() != DType::kFloat)
    fail_at(node, "{}_scale has type {}, expected float", name, dtype_name(scale.dtype()));
  if (zero_point.dtype() != weights.dtype()) {
    fail_at(node, "{}_zero_point has type {} but {} has type {}", name,
            dtype_name(zero_point.dtype()), name, dtype_name(weights.dtype()));
  }
  LstmWeightParams params;
  params.count = scale.rank() == 2 ? 4 * hidden : 1;
  params.scales.assign(scale.data<float>(), scale.data<float>() + scale.numel());
  for (float v : params.scales) {
    if (!(v > 0.0f) || !std::isfinite(v))
      fail_at(node, "{}_scale holds {}: scales must be positive and finite", name, v);
  }
  // One zero point per direction, the first of its values. Per column, the others must equal
  // it and s8 ones be 0, as ORT requires (its product takes one); per tensor any value goes.
  const int64_t per_direction = zero_point.numel() / directions;
  for (int64_t d = 0; d < directions; ++d) {
    auto value = [&](int64_t i) {
      return zero_point.dtype() == DType::kUInt8 ? int32_t{zero_point.data<uint8_t>()[i]}
                                                 : int32_t{zero_point.data<int8_t>()[i]};
    };
    const int32_t first = value(d * per_direction);
    for (int64_t i = 0; i < per_direction; ++i) {
      const int32_t v = value(d * per_direction + i);
      if (v != first || (weights.dtype() == DType::kInt8 && per_direction > 1 && v != 0)) {
        fail_at(node,
                "{}_zero_point holds {} at index {}: {} zero points must be {} within a "
                "direction",
                name, v, d * per_direction + i, dtype_name(weights.dtype()),
                weights.dtype() == DType::kInt8 ? "0" : "equal");
      }
    }
    params.zero_points.push_back(first);
  }
  return params;
}

std::unique_ptr<OpKernel> make_recurrent_kernel(const KernelCreateContext& context,
                                                std::shared_ptr<const RecurrentProducts> products) {
  const std::string& op = context.node().op_type();
  if (op == "RNN")
    return std::make_unique<RecurrentKernel<CellKind::kRnn>>(context, false, std::move(products));
  if (op == "GRU") {
    return std::make_unique<RecurrentKernel<CellKind::kGru>>(context, false, std::move(products));
  }
  return std::make_unique<RecurrentKernel<CellKind::kLstm>>(context, false, std::move(products));
}

std::unique_ptr<OpKernel> make_dynamic_quantize_lstm_kernel(
    const KernelCreateContext& context, std::shared_ptr<const RecurrentProducts> products) {
  if (!context.has_attribute("hidden_size"))
    context.fail("hidden_size is required (DynamicQuantizeLSTM)");
  return std::make_unique<RecurrentKernel<CellKind::kLstm>>(context, true, std::move(products));
}

namespace {

// Type inference (ops/type_inference.h).

// RNN, GRU, LSTM: Y [seq, directions, batch, hidden] and Y_h (and LSTM's Y_c) [directions,
// batch, hidden]; with layout 1 (opset 14) batch comes first: [batch, seq, directions,
// hidden] and [batch, directions, hidden]. hidden from hidden_size or R's last dim.
// `quantized`: DynamicQuantizeLSTM, whose R is [directions, hidden, 4 * hidden].
void infer_recurrent(TypeInferenceContext& context, bool quantized) {
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
    hidden = (*r)[quantized ? 1 : 2];
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

void register_recurrent_ops(OpRegistry& registry) {
  // Version 22 of each added bfloat16.
  registry.add("RNN", {1, 7, 14, 22}, kernel_factory<RecurrentKernel<CellKind::kRnn>>());
  registry.add("GRU", {1, 3, 7, 14, 22}, kernel_factory<RecurrentKernel<CellKind::kGru>>());
  registry.add("LSTM", {1, 7, 14, 22}, kernel_factory<RecurrentKernel<CellKind::kLstm>>());

  // Type inference, every version.
  const auto infer_onnx = [](TypeInferenceContext& context) { infer_recurrent(context, false); };
  registry.set_type_rule("", "RNN", infer_onnx);
  registry.set_type_rule("", "GRU", infer_onnx);
  registry.set_type_rule("", "LSTM", infer_onnx);

  registry.add(
      std::string(kMicrosoftDomain), "DynamicQuantizeLSTM", 1,
      OpDefinition([](const KernelCreateContext& context) {
        return make_dynamic_quantize_lstm_kernel(context, nullptr);
      }).with_types([](TypeInferenceContext& context) { infer_recurrent(context, true); }));
}

}  // namespace onnxkit
