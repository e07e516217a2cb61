// The scalar activations, one definition each: their formulas, parameters and defaults.
// Shared by ONNX's activation ops (ops/activation.cc), the gate activations of RNN / GRU /
// LSTM (ops/recurrent.cc) and the activation that FusedConv / FusedMatMul apply
// (ops/fused_ops.h: kActivations, `activation` / `activation_params`), whose reference
// kernels (ops/fused_linear.cc) and optimized kernels (the oneDNN post-ops, the SIMD maps
// of kernels/vector_math.h) implement the same kinds.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "ops/kernel.h"

namespace onnxkit {

enum class ActivationKind {
  kNone,             // x
  kRelu,             // x > 0 ? x : 0
  kLeakyRelu,        // x < 0 ? alpha * x : x
  kElu,              // x < 0 ? alpha * (e^x - 1) : x
  kSelu,             // beta * (x > 0 ? x : alpha * (e^x - 1)); beta is Selu's gamma
  kCelu,             // max(0, x) + min(0, alpha * (e^(x / alpha) - 1))
  kThresholdedRelu,  // x > alpha ? x : 0
  kHardSigmoid,      // max(0, min(1, alpha * x + beta))
  kHardSwish,        // x * max(0, min(1, x / 6 + 0.5))
  kSigmoid,          // 1 / (1 + e^-x)
  kTanh,
  kSoftplus,    // log(1 + e^x)
  kSoftsign,    // x / (1 + |x|)
  kClip,        // min(beta, max(alpha, x)); NaN stays NaN
  kAffine,      // alpha * x + beta (an RNN activation)
  kScaledTanh,  // alpha * tanh(beta * x) (an RNN activation)
  kSilu,        // x * sigmoid(x)
  kGelu,        // 0.5 x (1 + erf(x / sqrt(2)))
  kGeluTanh,    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};

// What an activation takes: up to two parameters, alpha and beta, in that order.
struct ActivationSpec {
  std::string_view name;  // ONNX's name: the op's, or the RNN activation's
  ActivationKind kind;
  int params = 0;  // how many of alpha, beta it takes
  // Their defaults (those of the ONNX op of the same name) and attribute names on that op.
  float alpha = 0.0f, beta = 0.0f;
  std::string_view alpha_name = "alpha", beta_name = "beta";
};

inline constexpr std::array<ActivationSpec, 18> kActivationSpecs{{
    {"Relu", ActivationKind::kRelu},
    {"LeakyRelu", ActivationKind::kLeakyRelu, 1, 0.01f},
    {"Elu", ActivationKind::kElu, 1, 1.0f},
    {"Selu", ActivationKind::kSelu, 2, 1.67326319217681884765625f, 1.05070102214813232421875f,
     "alpha", "gamma"},
    {"Celu", ActivationKind::kCelu, 1, 1.0f},
    {"ThresholdedRelu", ActivationKind::kThresholdedRelu, 1, 1.0f},
    {"HardSigmoid", ActivationKind::kHardSigmoid, 2, 0.2f, 0.5f},
    {"HardSwish", ActivationKind::kHardSwish},
    {"Sigmoid", ActivationKind::kSigmoid},
    {"Tanh", ActivationKind::kTanh},
    {"Softplus", ActivationKind::kSoftplus},
    {"Softsign", ActivationKind::kSoftsign},
    // The fused ops' Clip [min, max], unbounded by default (the Clip op has its own kernel).
    {"Clip", ActivationKind::kClip, 2, -std::numeric_limits<float>::infinity(),
     std::numeric_limits<float>::infinity()},
    {"Affine", ActivationKind::kAffine, 2, 1.0f, 0.0f},
    {"ScaledTanh", ActivationKind::kScaledTanh, 2, 1.0f, 1.0f},
    {"Silu", ActivationKind::kSilu},
    {"Gelu", ActivationKind::kGelu},
    {"GeluTanh", ActivationKind::kGeluTanh},
}};

// The spec of `kind` (kNone has none: it must not be asked).
constexpr const ActivationSpec& activation_spec(ActivationKind kind) {
  for (const ActivationSpec& spec : kActivationSpecs) {
    if (spec.kind == kind) return spec;
  }
  throw Error("internal: an activation kind without a spec");
}

// The spec named `name`, or nullptr; `ignore_case` for RNN's activations ("tanh", "Tanh").
inline const ActivationSpec* find_activation(std::string_view name, bool ignore_case = false) {
  auto lower = [](char ch) {
    return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
  };
  for (const ActivationSpec& spec : kActivationSpecs) {
    if (ignore_case ? std::ranges::equal(spec.name, name, {}, lower, lower) : spec.name == name) {
      return &spec;
    }
  }
  return nullptr;
}

// Sigmoid written so that either branch exponentiates a non-positive number: no overflow.
template <typename C>
C sigmoid(C v) {
  if (v >= C(0)) return C(1) / (C(1) + std::exp(-v));
  const C e = std::exp(v);
  return e / (C(1) + e);
}

// f(v) of activation kKind with parameters alpha and beta, computed in C (float, double;
// Relu also an integer type).
template <ActivationKind kKind, typename C>
C activate(C v, C alpha, C beta) {
  using K = ActivationKind;
  if constexpr (kKind == K::kNone) return v;
  if constexpr (kKind == K::kRelu) return v > C(0) ? v : C(0);
  if constexpr (kKind == K::kLeakyRelu) return v < C(0) ? alpha * v : v;
  if constexpr (kKind == K::kElu) return v < C(0) ? alpha * std::expm1(v) : v;
  if constexpr (kKind == K::kSelu) return beta * (v > C(0) ? v : alpha * std::expm1(v));
  if constexpr (kKind == K::kCelu) {
    return std::max(C(0), v) + std::min(C(0), alpha * std::expm1(v / alpha));
  }
  if constexpr (kKind == K::kThresholdedRelu) return v > alpha ? v : C(0);
  if constexpr (kKind == K::kHardSigmoid) return std::max(C(0), std::min(C(1), alpha * v + beta));
  if constexpr (kKind == K::kHardSwish)
    return v * std::max(C(0), std::min(C(1), v / C(6) + C(0.5)));
  if constexpr (kKind == K::kSigmoid) return sigmoid(v);
  if constexpr (kKind == K::kTanh) return std::tanh(v);
  if constexpr (kKind == K::kSoftplus) {
    // log(1 + exp(v)) without overflow for large v.
    return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  }
  if constexpr (kKind == K::kSoftsign) return v / (C(1) + std::abs(v));
  if constexpr (kKind == K::kClip) {
    // As Clip: max(v, min) then min(., max); NaN stays NaN.
    const C t = v < alpha ? alpha : v;
    return t > beta ? beta : t;
  }
  if constexpr (kKind == K::kAffine) return alpha * v + beta;
  if constexpr (kKind == K::kScaledTanh) return alpha * std::tanh(beta * v);
  if constexpr (kKind == K::kSilu) return v * sigmoid(v);
  if constexpr (kKind == K::kGelu) {
    return C(0.5) * v * (C(1) + std::erf(v * C(0.70710678118654752440)));
  }
  if constexpr (kKind == K::kGeluTanh) {
    const C inner = C(0.79788456080286535588) * (v + C(0.044715) * v * v * v);
    return C(0.5) * v * (C(1) + std::tanh(inner));
  }
}

// Calls f.template operator()<kKind>() with `kind` as a compile-time constant.
template <typename F>
decltype(auto) visit_activation(ActivationKind kind, F&& f) {
  using K = ActivationKind;
  switch (kind) {
    case K::kNone:
      return f.template operator()<K::kNone>();
    case K::kRelu:
      return f.template operator()<K::kRelu>();
    case K::kLeakyRelu:
      return f.template operator()<K::kLeakyRelu>();
    case K::kElu:
      return f.template operator()<K::kElu>();
    case K::kSelu:
      return f.template operator()<K::kSelu>();
    case K::kCelu:
      return f.template operator()<K::kCelu>();
    case K::kThresholdedRelu:
      return f.template operator()<K::kThresholdedRelu>();
    case K::kHardSigmoid:
      return f.template operator()<K::kHardSigmoid>();
    case K::kHardSwish:
      return f.template operator()<K::kHardSwish>();
    case K::kSigmoid:
      return f.template operator()<K::kSigmoid>();
    case K::kTanh:
      return f.template operator()<K::kTanh>();
    case K::kSoftplus:
      return f.template operator()<K::kSoftplus>();
    case K::kSoftsign:
      return f.template operator()<K::kSoftsign>();
    case K::kClip:
      return f.template operator()<K::kClip>();
    case K::kAffine:
      return f.template operator()<K::kAffine>();
    case K::kScaledTanh:
      return f.template operator()<K::kScaledTanh>();
    case K::kSilu:
      return f.template operator()<K::kSilu>();
    case K::kGelu:
      return f.template operator()<K::kGelu>();
    case K::kGeluTanh:
      return f.template operator()<K::kGeluTanh>();
  }
  return f.template operator()<K::kNone>();
}

// One activation with its parameters.
struct ActivationFunction {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;

  // `kind` with its default parameters.
  static ActivationFunction with_defaults(ActivationKind kind) {
    if (kind == ActivationKind::kNone) return {};
    const ActivationSpec& spec = activation_spec(kind);
    return {kind, spec.alpha, spec.beta};
  }

  bool none() const { return kind == ActivationKind::kNone; }

  // One element, computed in C.
  template <typename C>
  C apply(C v) const {
    return visit_activation(kind, [&]<ActivationKind kKind>() {
      return activate<kKind>(v, static_cast<C>(alpha), static_cast<C>(beta));
    });
  }

  // In place over n elements, the dispatch outside the loop.
  template <typename C>
  void apply(C* data, int64_t n) const {
    const C a = static_cast<C>(alpha);
    const C b = static_cast<C>(beta);
    visit_activation(kind, [&]<ActivationKind kKind>() {
      if constexpr (kKind != ActivationKind::kNone) {
        for (int64_t i = 0; i < n; ++i) data[i] = activate<kKind>(data[i], a, b);
      }
    });
  }
};

// The parameters of an activation op's node (LeakyRelu's alpha, ...) from its attributes,
// the defaults where absent.
ActivationFunction activation_op(const KernelCreateContext& context, ActivationKind kind);

// FusedConv / FusedMatMul's activation from the node's `activation` / `activation_params`:
// one of kActivations, absent params taking their defaults; a wrong count fails.
ActivationFunction parse_fused_activation(const KernelCreateContext& context);

}  // namespace onnxkit
