// Operator domains as the IR spells them.
//
// ONNX files name the standard domain "" or "ai.onnx"; the IR always says "" (loading turns
// "ai.onnx" into ""), so code that reads the IR compares with "" alone. Functions that take a
// domain from a caller (opset lookups, the op registry) accept both spellings through
// canonical_domain.
#pragma once

#include <string>
#include <string_view>

namespace onnxkit {

// onnxkit's own ops (ops/fused_ops.h, ops/blocked_ops.h) and the version they are at.
inline constexpr std::string_view kOnnxkitDomain = "com.onnxkit";
inline constexpr int kOnnxkitDomainVersion = 1;

// ONNX Runtime's contrib ops (the QOperator ops its quantization tool writes).
inline constexpr std::string_view kMicrosoftDomain = "com.microsoft";

// `domain` as the IR spells it: "" for "ai.onnx", anything else unchanged.
constexpr std::string_view canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string_view() : domain;
}

// How messages and reports name a domain: "ai.onnx" for the standard one.
inline std::string domain_label(std::string_view domain) {
  return std::string(canonical_domain(domain).empty() ? std::string_view("ai.onnx") : domain);
}

}  // namespace onnxkit
