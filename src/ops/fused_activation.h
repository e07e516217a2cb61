// The activation of FusedConv / FusedMatMul (ops/fused_ops.h): parsed once from the node's
// `activation` / `activation_params` attributes, applied per element. Shared by the
// reference kernels (ops/fused_linear.cc) and any optimized kernel that needs a fallback.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/fused_ops.h"
#include "ops/kernel.h"

namespace onnxkit {

struct FusedActivation {
  enum class Kind {
    kNone,
    kRelu,
    kLeakyRelu,  // alpha
    kClip,       // alpha = min, beta = max
    kSigmoid,
    kTanh,
    kHardSigmoid,  // alpha, beta
    kHardSwish,
    kSilu,
    kGelu,
    kGeluTanh,
  };

  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;

  // From the node's attributes. Absent params take the ONNX defaults of the standalone op
  // (LeakyRelu 0.01; HardSigmoid 0.2, 0.5; Clip unbounded); a wrong count fails.
  static FusedActivation parse(const KernelCreateContext& context) {
    FusedActivation act;
    const std::string name = context.attr_string("activation", "");
    const std::vector<float> params = context.attr_floats("activation_params");
    size_t want = 0;
    if (name.empty()) {
      act.kind = Kind::kNone;
    } else if (name == "Relu") {
      act.kind = Kind::kRelu;
    } else if (name == "LeakyRelu") {
      act.kind = Kind::kLeakyRelu;
      act.alpha = 0.01f;
      want = 1;
    } else if (name == "Clip") {
      act.kind = Kind::kClip;
      act.alpha = -std::numeric_limits<float>::infinity();
      act.beta = std::numeric_limits<float>::infinity();
      want = 2;
    } else if (name == "Sigmoid") {
      act.kind = Kind::kSigmoid;
    } else if (name == "Tanh") {
      act.kind = Kind::kTanh;
    } else if (name == "HardSigmoid") {
      act.kind = Kind::kHardSigmoid;
      act.alpha = 0.2f;
      act.beta = 0.5f;
      want = 2;
    } else if (name == "HardSwish") {
      act.kind = Kind::kHardSwish;
    } else if (name == "Silu") {
      act.kind = Kind::kSilu;
    } else if (name == "Gelu") {
      act.kind = Kind::kGelu;
    } else if (name == "GeluTanh") {
      act.kind = Kind::kGeluTanh;
    } else {
      std::string known;
      for (std::string_view k : kActivations) known += (known.empty() ? "" : ", ") + std::string(k);
      context.fail("activation '{}' is not one of {}", name, known);
    }
    if (!params.empty() && params.size() != want) {
      context.fail("activation {} takes {} activation_params, got {}", name, want, params.size());
    }
    if (params.size() >= 1) act.alpha = params[0];
    if (params.size() >= 2) act.beta = params[1];
    return act;
  }

  bool none() const { return kind == Kind::kNone; }

  // One element, computed in C (float or double).
  template <typename C>
  C apply(C v) const {
    const C a = static_cast<C>(alpha);
    const C b = static_cast<C>(beta);
    switch (kind) {
      case Kind::kNone:
        return v;
      case Kind::kRelu:
        return v > C(0) ? v : C(0);
      case Kind::kLeakyRelu:
        return v < C(0) ? a * v : v;
      case Kind::kClip: {
        // As Clip: max(v, min) then min(., max); NaN stays NaN.
        const C t = v < a ? a : v;
        return t > b ? b : t;
      }
      case Kind::kSigmoid:
        return sigmoid(v);
      case Kind::kTanh:
        return std::tanh(v);
      case Kind::kHardSigmoid:
        return std::max(C(0), std::min(C(1), a * v + b));
      case Kind::kHardSwish:
        return v * std::max(C(0), std::min(C(1), v / C(6) + C(0.5)));
      case Kind::kSilu:
        return v * sigmoid(v);
      case Kind::kGelu:
        return C(0.5) * v * (C(1) + std::erf(v * C(0.70710678118654752440)));
      case Kind::kGeluTanh: {
        const C inner = C(0.79788456080286535588) * (v + C(0.044715) * v * v * v);
        return C(0.5) * v * (C(1) + std::tanh(inner));
      }
    }
    return v;
  }

  // In place over n elements.
  template <typename C>
  void apply(C* data, int64_t n) const {
    if (kind == Kind::kNone) return;
    for (int64_t i = 0; i < n; ++i) data[i] = apply(data[i]);
  }

 private:
  template <typename C>
  static C sigmoid(C v) {
    // Either branch exponentiates a non-positive number: no overflow.
    if (v >= C(0)) return C(1) / (C(1) + std::exp(-v));
    const C e = std::exp(v);
    return e / (C(1) + e);
  }
};

}  // namespace onnxkit
