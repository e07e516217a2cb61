// Unit tests of the recurrent op family (RNN, GRU, LSTM).
//
// The kernels are checked against a straightforward reference written here: per direction,
// per batch entry, per time step of that entry's own length, in double, with the ONNX
// equations spelled out gate by gate (no GEMM, no masking).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/half.h"
#include "op_test_util.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

struct Act {
  std::string name;
  double alpha = 0;
  double beta = 0;
};

double activate(const Act& a, double x) {
  if (a.name == "Relu") return std::max(x, 0.0);
  if (a.name == "Tanh") return std::tanh(x);
  if (a.name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (a.name == "Affine") return a.alpha * x + a.beta;
  if (a.name == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (a.name == "ThresholdedRelu") return x > a.alpha ? x : 0.0;
  if (a.name == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (a.name == "HardSigmoid") return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
  if (a.name == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1.0);
  if (a.name == "Softsign") return x / (1.0 + std::abs(x));
  if (a.name == "Softplus") return std::log(1.0 + std::exp(x));
  ADD_FAILURE() << "unknown activation " << a.name;
  return 0;
}

struct Case {
  std::string op = "RNN";
  int64_t seq = 3, batch = 2, input = 3, hidden = 4;
  std::string direction = "forward";
  bool bias = false, peephole = false, init_h = false, init_c = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens input
  // Passed as attributes when set (alpha/beta in the order the kernel consumes them); the
  // reference uses `ref_acts` (per direction, already resolved) or the defaults.
  std::vector<std::string> act_names;
  std::vector<float> act_alphas, act_betas;
  std::vector<Act> ref_acts;
  float clip = 0;  // 0: none
  bool linear_before_reset = false, input_forget = false;
  int64_t layout = 0, opset = 14;
  DType dtype = DType::kFloat;
  // Data, always in layout 0.
  std::vector<float> x, w, r, b, p, h0, c0;

  int64_t gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
};

std::vector<float> sequence_values(int64_t n, uint32_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t state = seed * 2654435761u + 12345u;
  for (float& e : v) {
    state = state * 1664525u + 1013904223u;
    e = scale * (static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f);
  }
  return v;
}

// Fills the data of `c` deterministically (rounded to float16 when the case runs in it).
void fill(Case& c) {
  const int64_t g = c.gates(), d = c.dirs(), h = c.hidden;
  c.x = sequence_values(c.seq * c.batch * c.input, 1, 1.0f);
  c.w = sequence_values(d * g * h * c.input, 2, 0.7f);
  c.r = sequence_values(d * g * h * h, 3, 0.7f);
  if (c.bias) c.b = sequence_values(d * 2 * g * h, 4, 0.5f);
  if (c.peephole) c.p = sequence_values(d * 3 * h, 5, 0.5f);
  if (c.init_h) c.h0 = sequence_values(d * c.batch * h, 6, 0.8f);
  if (c.init_c) c.c0 = sequence_values(d * c.batch * h, 7, 0.8f);
  if (c.dtype == DType::kFloat16) {
    for (auto* v : {&c.x, &c.w, &c.r, &c.b, &c.p, &c.h0, &c.c0})
      for (float& e : *v) e = static_cast<float>(Float16(e));
  }
}

struct Result {
  std::vector<double> y, y_h, y_c;  // layout 0
};

Result reference(const Case& c) {
  const int64_t S = c.seq, N = c.batch, I = c.input, H = c.hidden, G = c.gates(), D = c.dirs();
  const size_t per = c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3;
  std::vector<Act> acts = c.ref_acts;
  if (acts.empty()) {
    if (c.op == "RNN") acts = {{"Tanh"}};
    if (c.op == "GRU") acts = {{"Sigmoid"}, {"Tanh"}};
    if (c.op == "LSTM") acts = {{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
  }
  if (acts.size() == per && D == 2) {
    const std::vector<Act> forward = acts;
    acts.insert(acts.end(), forward.begin(), forward.end());
  }
  Result out;
  out.y.assign(S * D * N * H, 0.0);
  out.y_h.assign(D * N * H, 0.0);
  out.y_c.assign(D * N * H, 0.0);
  auto clip = [&](double v) { return c.clip > 0 ? std::clamp(v, -1.0 * c.clip, 1.0 * c.clip) : v; };
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    const Act* f = &acts[d * per];
    for (int64_t b = 0; b < N; ++b) {
      const int64_t len = c.lens.empty() ? S : c.lens[b];
      std::vector<double> h(H, 0.0), cell(H, 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (!c.h0.empty()) h[j] = c.h0[(d * N + b) * H + j];
        if (!c.c0.empty()) cell[j] = c.c0[(d * N + b) * H + j];
      }
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = reverse ? len - 1 - k : k;
        // Xt * W^T + Wb for gate block g, unit j.
        auto xpart = [&](int64_t g, int64_t j) {
          double s = c.b.empty() ? 0.0 : c.b[d * 2 * G * H + g * H + j];
          for (int64_t i = 0; i < I; ++i)
            s += double{c.x[(t * N + b) * I + i]} * c.w[(d * G * H + g * H + j) * I + i];
          return s;
        };
        // v * R^T + Rb for gate block g, unit j.
        auto hpart = [&](int64_t g, int64_t j, const std::vector<double>& v) {
          double s = c.b.empty() ? 0.0 : c.b[d * 2 * G * H + G * H + g * H + j];
          for (int64_t i = 0; i < H; ++i) s += v[i] * c.r[(d * G * H + g * H + j) * H + i];
          return s;
        };
        std::vector<double> hn(H), cn(H);
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j)
            hn[j] = activate(f[0], clip(xpart(0, j) + hpart(0, j, h)));
        } else if (c.op == "GRU") {
          std::vector<double> z(H), r(H), rh(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = activate(f[0], clip(xpart(0, j) + hpart(0, j, h)));
            r[j] = activate(f[0], clip(xpart(1, j) + hpart(1, j, h)));
            rh[j] = r[j] * h[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            const double pre = c.linear_before_reset ? xpart(2, j) + r[j] * hpart(2, j, h)
                                                     : xpart(2, j) + hpart(2, j, rh);
            const double ht = activate(f[1], clip(pre));
            hn[j] = (1 - z[j]) * ht + z[j] * h[j];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double pi = c.p.empty() ? 0.0 : c.p[d * 3 * H + j];
            const double po = c.p.empty() ? 0.0 : c.p[d * 3 * H + H + j];
            const double pf = c.p.empty() ? 0.0 : c.p[d * 3 * H + 2 * H + j];
            const double ig = activate(f[0], clip(xpart(0, j) + hpart(0, j, h) + pi * cell[j]));
            const double fg =
                c.input_forget ? 1.0 - ig
                               : activate(f[0], clip(xpart(2, j) + hpart(2, j, h) + pf * cell[j]));
            const double cg = activate(f[1], clip(xpart(3, j) + hpart(3, j, h)));
            cn[j] = fg * cell[j] + ig * cg;
            const double og = activate(f[0], clip(xpart(1, j) + hpart(1, j, h) + po * cn[j]));
            hn[j] = og * activate(f[2], cn[j]);
          }
        }
        h = hn;
        cell = cn;
        for (int64_t j = 0; j < H; ++j) out.y[((t * D + d) * N + b) * H + j] = h[j];
      }
      if (len == 0) continue;
      for (int64_t j = 0; j < H; ++j) {
        out.y_h[(d * N + b) * H + j] = h[j];
        out.y_c[(d * N + b) * H + j] = cell[j];
      }
    }
  }
  return out;
}

// dst [b, a, k] from src [a, b, k].
template <typename V>
V swap_leading(const V& src, int64_t a, int64_t b, int64_t k) {
  V dst(src.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t e = 0; e < k; ++e) dst[(j * a + i) * k + e] = src[(i * b + j) * k + e];
  return dst;
}

Tensor make(DType dtype, Shape shape, const std::vector<float>& v) {
  if (dtype == DType::kDouble)
    return Tensor::from_vector<double>(dtype, std::move(shape),
                                       std::vector<double>(v.begin(), v.end()));
  if (dtype == DType::kFloat16) {
    std::vector<Float16> h;
    for (float e : v) h.emplace_back(e);
    return Tensor::from_vector<Float16>(dtype, std::move(shape), h);
  }
  return Tensor::from_vector<float>(dtype, std::move(shape), v);
}

std::vector<double> double_values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kDouble) v[i] = t.data<double>()[i];
    if (t.dtype() == DType::kFloat) v[i] = t.data<float>()[i];
    if (t.dtype() == DType::kFloat16) v[i] = static_cast<float>(t.data<Float16>()[i]);
  }
  return v;
}

// Runs the case through the kernel (the reference one unless `options` say otherwise); ""
// in `outputs` omits that output. `constant_weights`: W and R as initializers, which the
// optimized kernel (kernels/fast_recurrent) needs.
std::vector<Tensor> run_case(const Case& c, const std::vector<std::string>& outputs,
                             const SessionOptions& options = SessionOptions::reference(),
                             bool constant_weights = false) {
  const int64_t S = c.seq, N = c.batch, I = c.input, H = c.hidden, G = c.gates(), D = c.dirs();
  const bool bm = c.layout == 1;
  std::vector<Tensor> in;
  in.push_back(bm ? make(c.dtype, {N, S, I}, swap_leading(c.x, S, N, I))
                  : make(c.dtype, {S, N, I}, c.x));
  in.push_back(make(c.dtype, {D, G * H, I}, c.w));
  in.push_back(make(c.dtype, {D, G * H, H}, c.r));
  auto state = [&](const std::vector<float>& v) {
    return bm ? make(c.dtype, {N, D, H}, swap_leading(v, D, N, H)) : make(c.dtype, {D, N, H}, v);
  };
  in.push_back(c.b.empty() ? Tensor() : make(c.dtype, {D, 2 * G * H}, c.b));
  in.push_back(c.lens.empty() ? Tensor()
                              : Tensor::from_vector<int32_t>(DType::kInt32, {N}, c.lens));
  in.push_back(c.h0.empty() ? Tensor() : state(c.h0));
  if (c.op == "LSTM") {
    in.push_back(c.c0.empty() ? Tensor() : state(c.c0));
    in.push_back(c.p.empty() ? Tensor() : make(c.dtype, {D, 3 * H}, c.p));
  }
  while (!in.back().defined()) in.pop_back();

  NodeCase node(c.op, in, c.opset, [&c, H](Node* n) {
    set_int(n, "hidden_size", H);
    set_string(n, "direction", c.direction);
    if (!c.act_names.empty()) set_strings(n, "activations", c.act_names);
    if (!c.act_alphas.empty()) set_floats(n, "activation_alpha", c.act_alphas);
    if (!c.act_betas.empty()) set_floats(n, "activation_beta", c.act_betas);
    if (c.clip > 0) set_float(n, "clip", c.clip);
    if (c.linear_before_reset) set_int(n, "linear_before_reset", 1);
    if (c.input_forget) set_int(n, "input_forget", 1);
    if (c.layout != 0) set_int(n, "layout", c.layout);
  });
  node.outputs = outputs;
  if (constant_weights) node.constants = {1, 2};
  return run_node(node, options);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

double tolerance(DType dtype) {
  return dtype == DType::kDouble ? 1e-12 : dtype == DType::kFloat16 ? 4e-3 : 2e-5;
}

// Runs filled `c` with every output and compares each with the reference.
void check_case_with(const Case& c, const SessionOptions& options, bool constant_weights) {
  const Result want = reference(c);
  const bool lstm = c.op == "LSTM";
  std::vector<std::string> names = {"Y", "Y_h"};
  if (lstm) names.push_back("Y_c");
  const std::vector<Tensor> got = run_case(c, names, options, constant_weights);
  const int64_t S = c.seq, N = c.batch, H = c.hidden, D = c.dirs();
  const double tol = tolerance(c.dtype);
  ASSERT_EQ(got.size(), names.size());
  for (const Tensor& t : got) EXPECT_EQ(t.dtype(), c.dtype);
  if (c.layout == 0) {
    EXPECT_EQ(got[0].shape(), (Shape{S, D, N, H}));
    EXPECT_EQ(got[1].shape(), (Shape{D, N, H}));
    expect_close(double_values(got[0]), want.y, tol, "Y");
    expect_close(double_values(got[1]), want.y_h, tol, "Y_h");
    if (lstm) expect_close(double_values(got[2]), want.y_c, tol, "Y_c");
  } else {
    EXPECT_EQ(got[0].shape(), (Shape{N, S, D, H}));
    EXPECT_EQ(got[1].shape(), (Shape{N, D, H}));
    expect_close(swap_leading(double_values(got[0]), N, S * D, H), want.y, tol, "Y");
    expect_close(swap_leading(double_values(got[1]), N, D, H), want.y_h, tol, "Y_h");
    if (lstm) expect_close(swap_leading(double_values(got[2]), N, D, H), want.y_c, tol, "Y_c");
  }
}

// Runs `c` with every output on the reference kernel and on the optimized tier, W and R
// given at run time (the reference cell) and constant (kernels/fast_recurrent), and compares
// each with the reference (shapes included).
void check_case(Case c) {
  fill(c);
  check_case_with(c, SessionOptions::reference(), false);
  for (bool constant_weights : {false, true}) {
    SCOPED_TRACE(constant_weights ? "optimized, constant W and R" : "optimized");
    check_case_with(c, optimized(), constant_weights);
  }
}

std::string error_of(const Case& c) {
  try {
    run_case(c, {"Y"});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- hand-computed ----

TEST(RnnTest, HandComputedTwoSteps) {
  // hidden 1, input 1: h1 = tanh(0.5 * 1 + 0.3), h2 = tanh(0.5 * -1 + 2 * h1 + 0.3).
  const Tensor x = Tensor::from_vector<float>(DType::kFloat, {2, 1, 1}, {1.0f, -1.0f});
  const Tensor w = Tensor::from_vector<float>(DType::kFloat, {1, 1, 1}, {0.5f});
  const Tensor r = Tensor::from_vector<float>(DType::kFloat, {1, 1, 1}, {2.0f});
  const Tensor b = Tensor::from_vector<float>(DType::kFloat, {1, 2}, {0.1f, 0.2f});
  const auto out = run_op("RNN", {x, w, r, b}, 14, with_int("hidden_size", 1), 2);
  const double h1 = std::tanh(0.8);
  const double h2 = std::tanh(-0.5 + 2 * h1 + 0.3);
  EXPECT_EQ(out[0].shape(), (Shape{2, 1, 1, 1}));
  EXPECT_NEAR(out[0].data<float>()[0], h1, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[1], h2, 1e-6);
  EXPECT_NEAR(out[1].data<float>()[0], h2, 1e-6);
}

TEST(LstmTest, HandComputedOneStepWithPeepholes) {
  // hidden 1, input 1, W = [i o f c] = 1, R = 0, P = [0.5 0.25 2], C0 = 1, x = 0.5.
  const Tensor x = Tensor::from_vector<float>(DType::kFloat, {1, 1, 1}, {0.5f});
  const Tensor w = Tensor::from_vector<float>(DType::kFloat, {1, 4, 1}, {1, 1, 1, 1});
  const Tensor r = Tensor::from_vector<float>(DType::kFloat, {1, 4, 1}, {0, 0, 0, 0});
  const Tensor c0 = Tensor::from_vector<float>(DType::kFloat, {1, 1, 1}, {1.0f});
  const Tensor p = Tensor::from_vector<float>(DType::kFloat, {1, 3}, {0.5f, 0.25f, 2.0f});
  NodeCase lstm("LSTM", {x, w, r, Tensor(), Tensor(), Tensor(), c0, p}, 14,
                with_int("hidden_size", 1));
  lstm.outputs = {"", "Y_h", "Y_c"};
  const auto out = run_node(lstm);
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  const double i = sig(0.5 + 0.5), f = sig(0.5 + 2.0), g = std::tanh(0.5);
  const double c = f * 1.0 + i * g;
  const double o = sig(0.5 + 0.25 * c);
  EXPECT_NEAR(out[1].data<float>()[0], c, 1e-6);
  EXPECT_NEAR(out[0].data<float>()[0], o * std::tanh(c), 1e-6);
}

// ---- against the reference ----

TEST(RnnTest, ForwardDefaults) {
  check_case(Case{});
}

TEST(RnnTest, BidirectionalWithSequenceLensBiasInitialH) {
  Case c;
  c.seq = 4;
  c.batch = 3;
  c.direction = "bidirectional";
  c.bias = c.init_h = true;
  c.lens = {4, 2, 1};
  check_case(c);
}

TEST(RnnTest, ReverseWithSequenceLens) {
  Case c;
  c.direction = "reverse";
  c.bias = true;
  c.lens = {1, 3};
  check_case(c);
}

TEST(RnnTest, ZeroSequenceLengthGivesZeroState) {
  Case c;
  c.direction = "bidirectional";
  c.init_h = true;
  c.lens = {0, 3};
  check_case(c);
}

TEST(RnnTest, ClipBoundsTheActivationInput) {
  Case c;
  c.act_names = {"Relu"};
  c.ref_acts = {{"Relu"}};
  c.clip = 0.3f;
  c.bias = true;
  check_case(c);
}

TEST(RnnTest, EveryActivationFunction) {
  // Each activation in the forward direction, Tanh in the reverse one.
  const std::vector<Act> acts = {{"Relu"},
                                 {"Tanh"},
                                 {"Sigmoid"},
                                 {"Affine", 0.5, 0.25},
                                 {"LeakyRelu", 0.2},
                                 {"ThresholdedRelu", 0.1},
                                 {"ScaledTanh", 1.5, 0.5},
                                 {"HardSigmoid", 0.3, 0.4},
                                 {"Elu", 0.7},
                                 {"Softsign"},
                                 {"Softplus"}};
  for (const Act& a : acts) {
    SCOPED_TRACE(a.name);
    Case c;
    c.direction = "bidirectional";
    c.bias = true;
    c.act_names = {a.name, "Tanh"};
    c.ref_acts = {a, {"Tanh"}};
    const bool has_alpha = a.name == "Affine" || a.name == "LeakyRelu" ||
                           a.name == "ThresholdedRelu" || a.name == "ScaledTanh" ||
                           a.name == "HardSigmoid" || a.name == "Elu";
    const bool has_beta = a.name == "Affine" || a.name == "ScaledTanh" || a.name == "HardSigmoid";
    if (has_alpha) c.act_alphas = {static_cast<float>(a.alpha)};
    if (has_beta) c.act_betas = {static_cast<float>(a.beta)};
    check_case(c);
  }
}

TEST(RnnTest, ActivationDefaultsAndConsumptionOrder) {
  // alpha/beta lists are consumed in order by the functions that take them; missing ones
  // fall back to the defaults of the ONNX operator (LeakyRelu 0.01, HardSigmoid 0.2/0.5).
  Case c;
  c.direction = "bidirectional";
  c.act_names = {"Affine", "Elu"};
  c.act_alphas = {0.5f, 0.7f};
  c.act_betas = {0.3f};
  c.ref_acts = {{"Affine", 0.5, 0.3}, {"Elu", 0.7}};
  check_case(c);
  Case d;
  d.direction = "bidirectional";
  d.act_names = {"LeakyRelu", "HardSigmoid"};
  d.ref_acts = {{"LeakyRelu", 0.01}, {"HardSigmoid", 0.2, 0.5}};
  check_case(d);
}

TEST(RnnTest, OneDirectionListServesBothDirections) {
  Case c;
  c.direction = "bidirectional";
  c.act_names = {"Softsign"};
  c.ref_acts = {{"Softsign"}};
  check_case(c);
}

TEST(RnnTest, BatchMajorLayout) {
  Case c;
  c.layout = 1;
  c.direction = "bidirectional";
  c.bias = c.init_h = true;
  c.lens = {3, 1};
  check_case(c);
}

TEST(RnnTest, DoubleAndFloat16) {
  for (DType dtype : {DType::kDouble, DType::kFloat16}) {
    Case c;
    c.dtype = dtype;
    c.direction = "bidirectional";
    c.bias = c.init_h = true;
    c.lens = {2, 3};
    check_case(c);
  }
}

TEST(RnnTest, OlderOpsets) {
  for (int64_t opset : {1, 7}) {
    Case c;
    c.opset = opset;
    c.bias = true;
    check_case(c);
  }
}

TEST(GruTest, ForwardDefaults) {
  Case c;
  c.op = "GRU";
  check_case(c);
}

TEST(GruTest, BidirectionalSequenceLensLinearBeforeReset) {
  Case c;
  c.op = "GRU";
  c.seq = 4;
  c.batch = 3;
  c.direction = "bidirectional";
  c.bias = c.init_h = true;
  c.lens = {2, 4, 3};
  c.linear_before_reset = true;
  check_case(c);
  c.linear_before_reset = false;
  check_case(c);
}

TEST(GruTest, LinearBeforeResetWithoutBias) {
  Case c;
  c.op = "GRU";
  c.linear_before_reset = true;
  c.init_h = true;
  check_case(c);
}

TEST(GruTest, ClipAndActivations) {
  Case c;
  c.op = "GRU";
  c.direction = "reverse";
  c.bias = c.init_h = true;
  c.clip = 0.4f;
  c.act_names = {"HardSigmoid", "Softsign"};
  c.act_alphas = {0.25f};
  c.act_betas = {0.45f};
  c.ref_acts = {{"HardSigmoid", 0.25, 0.45}, {"Softsign"}};
  check_case(c);
}

TEST(GruTest, BatchMajorLayoutAndOtherTypes) {
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16}) {
    Case c;
    c.op = "GRU";
    c.dtype = dtype;
    c.layout = 1;
    c.direction = "bidirectional";
    c.bias = c.init_h = true;
    c.lens = {3, 2};
    c.linear_before_reset = true;
    check_case(c);
  }
}

TEST(GruTest, OlderOpsets) {
  for (int64_t opset : {1, 3, 7}) {
    Case c;
    c.op = "GRU";
    c.opset = opset;
    c.bias = true;
    c.linear_before_reset = opset >= 3;
    check_case(c);
  }
}

TEST(LstmTest, ForwardDefaults) {
  Case c;
  c.op = "LSTM";
  check_case(c);
}

TEST(LstmTest, BidirectionalPeepholesSequenceLensClip) {
  Case c;
  c.op = "LSTM";
  c.seq = 4;
  c.batch = 3;
  c.direction = "bidirectional";
  c.bias = c.peephole = c.init_h = c.init_c = true;
  c.lens = {3, 4, 1};
  check_case(c);
  c.clip = 0.35f;
  check_case(c);
}

TEST(LstmTest, BidirectionalBatchOfOneWideHidden) {
  // ddddocr's CRNN shape, scaled down: one image, a wide bidirectional LSTM, so every time step
  // is a one-row product with R.
  Case c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  c.seq = 6, c.batch = 1, c.input = 48, c.hidden = 96;
  c.bias = c.init_h = c.init_c = true;
  check_case(c);
}

TEST(LstmTest, InputForget) {
  Case c;
  c.op = "LSTM";
  c.direction = "reverse";
  c.bias = c.peephole = c.init_c = true;
  c.input_forget = true;
  check_case(c);
}

TEST(LstmTest, CustomActivations) {
  Case c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  c.bias = true;
  c.act_names = {"HardSigmoid", "Softsign", "Relu", "Sigmoid", "ScaledTanh", "LeakyRelu"};
  c.act_alphas = {0.3f, 1.2f, 0.05f};
  c.act_betas = {0.45f, 0.8f};
  c.ref_acts = {{"HardSigmoid", 0.3, 0.45}, {"Softsign"},       {"Relu"}, {"Sigmoid"},
                {"ScaledTanh", 1.2, 0.8},   {"LeakyRelu", 0.05}};
  check_case(c);
}

TEST(LstmTest, BatchMajorLayoutAndOtherTypes) {
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16}) {
    Case c;
    c.op = "LSTM";
    c.dtype = dtype;
    c.layout = 1;
    c.direction = "bidirectional";
    c.bias = c.peephole = c.init_h = c.init_c = true;
    c.lens = {1, 3};
    check_case(c);
  }
}

TEST(LstmTest, OlderOpsets) {
  for (int64_t opset : {1, 7}) {
    Case c;
    c.op = "LSTM";
    c.opset = opset;
    c.bias = c.peephole = true;
    check_case(c);
  }
}

TEST(LstmTest, OnlySomeOutputsWanted) {
  Case c;
  c.op = "LSTM";
  c.bias = c.init_c = true;
  c.lens = {2, 3};
  fill(c);
  const Result want = reference(c);
  const auto only_c = run_case(c, {"", "", "Y_c"});
  ASSERT_EQ(only_c.size(), 1u);
  expect_close(double_values(only_c[0]), want.y_c, 2e-5, "Y_c");
  const auto only_y = run_case(c, {"Y"});
  ASSERT_EQ(only_y.size(), 1u);
  expect_close(double_values(only_y[0]), want.y, 2e-5, "Y");
}

// ---- empty tensors ----

TEST(RecurrentTest, EmptyBatchAndSequence) {
  Case c;
  c.op = "GRU";
  c.batch = 0;
  c.direction = "bidirectional";
  check_case(c);
  Case s;
  s.op = "LSTM";
  s.seq = 0;
  s.init_h = true;
  check_case(s);  // no steps: Y is empty and Y_h / Y_c are zero
}

// ---- errors ----

TEST(RecurrentTest, Errors) {
  Case c;
  fill(c);
  Case bad_direction = c;
  bad_direction.direction = "sideways";
  EXPECT_NE(error_of(bad_direction).find("direction 'sideways'"), std::string::npos)
      << error_of(bad_direction);

  {
    // W built for 2 input features while X has 3.
    std::vector<float> w_values = c.w;
    w_values.resize(4 * 2);
    const Tensor x = make(DType::kFloat, {3, 2, 3}, c.x);
    const Tensor w = make(DType::kFloat, {1, 4, 2}, w_values);
    const Tensor r = make(DType::kFloat, {1, 4, 4}, c.r);
    std::string message;
    try {
      run_op("RNN", {x, w, r}, 14);
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("W has shape [1,4,2], expected [1,4,3]"), std::string::npos) << message;
  }

  Case bad_lens = c;
  bad_lens.lens = {2, 5};
  EXPECT_NE(error_of(bad_lens).find("sequence_lens value 5 at index 1 is outside [0, 3]"),
            std::string::npos)
      << error_of(bad_lens);

  Case bad_act = c;
  bad_act.act_names = {"Swish"};
  EXPECT_NE(error_of(bad_act).find("activation 'Swish' is not supported"), std::string::npos)
      << error_of(bad_act);

  Case bad_count = c;
  bad_count.op = "LSTM";
  fill(bad_count);
  bad_count.act_names = {"Sigmoid", "Tanh"};
  EXPECT_NE(error_of(bad_count).find("activations has 2 entries, expected 3"), std::string::npos)
      << error_of(bad_count);

  {
    const Tensor x = make(DType::kFloat, {3, 2, 3}, c.x);
    const Tensor w = make(DType::kFloat, {1, 4, 3}, c.w);
    const Tensor r = make(DType::kFloat, {1, 4, 4}, c.r);
    std::string message;
    try {
      run_op("RNN", {x, w, r}, 14, with_int("hidden_size", 5));
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("hidden_size is 5"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace onnxkit
