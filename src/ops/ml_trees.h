// What the two forms of tree ensembles in the ai.onnx.ml domain share: TreeEnsemble (opset 5,
// ml.cc) and the classic TreeEnsembleRegressor / TreeEnsembleClassifier (ml_classic.cc).
#pragma once

#include <cstdint>

namespace onnxkit {

inline constexpr const char* kMlDomain = "ai.onnx.ml";

enum class TreeMode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };
enum class Aggregate { kAverage, kSum, kMin, kMax };
enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

// Whether `v` goes down a branch node's true side, for every mode but kMember (which
// compares with the node's member list).
inline bool split_holds(TreeMode mode, double v, double split) {
  switch (mode) {
    case TreeMode::kLeq:
      return v <= split;
    case TreeMode::kLt:
      return v < split;
    case TreeMode::kGte:
      return v >= split;
    case TreeMode::kGt:
      return v > split;
    case TreeMode::kEq:
      return v == split;
    case TreeMode::kNeq:
      return v != split;
    case TreeMode::kMember:
      break;
  }
  return false;
}

}  // namespace onnxkit
