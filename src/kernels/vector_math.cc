// Runtime choice of vector_math's instruction set: the CPU's best level, or a forced one.
#include "kernels/vector_math.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <utility>

#include "ops/fused_activation.h"

#include "core/enum_names.h"

namespace onnxkit {

// One table per instruction-set file.
const VectorKernels& scalar_vector_kernels();
const VectorKernels& avx2_vector_kernels();
const VectorKernels& avx512_vector_kernels();

namespace {

constexpr EnumName<SimdLevel> kSimdLevelNames[] = {
    {SimdLevel::kScalar, "scalar"}, {SimdLevel::kAvx2, "avx2"}, {SimdLevel::kAvx512, "avx512"}};

constexpr int kNoOverride = -1;
std::atomic<int> forced_level{kNoOverride};

SimdLevel detect() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return SimdLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::kAvx2;
  return SimdLevel::kScalar;
}

}  // namespace

std::string_view simd_level_name(SimdLevel level) {
  return enum_name<SimdLevel>(kSimdLevelNames, level);
}

SimdLevel detected_simd_level() {
  static const SimdLevel level = [] {
    SimdLevel best = detect();
    // ONNXKIT_SIMD_LEVEL=scalar|avx2 caps the level for a whole process (benchmarks, the
    // conformance suite on the fallbacks); anything else is ignored.
    if (const char* cap = std::getenv("ONNXKIT_SIMD_LEVEL")) {
      if (auto capped = enum_from_name<SimdLevel>(kSimdLevelNames, cap)) {
        best = std::min(best, *capped);
      }
    }
    return best;
  }();
  return level;
}

SimdLevel active_simd_level() {
  const int forced = forced_level.load(std::memory_order_relaxed);
  return forced == kNoOverride ? detected_simd_level() : static_cast<SimdLevel>(forced);
}

SimdLevelOverride::SimdLevelOverride(SimdLevel level)
    : previous_(forced_level.load(std::memory_order_relaxed)) {
  forced_level.store(static_cast<int>(std::min(level, detected_simd_level())));
}

SimdLevelOverride::~SimdLevelOverride() {
  forced_level.store(previous_);
}

const VectorKernels& vector_kernels(SimdLevel level) {
  switch (std::min(level, detected_simd_level())) {
    case SimdLevel::kAvx512:
      return avx512_vector_kernels();
    case SimdLevel::kAvx2:
      return avx2_vector_kernels();
    case SimdLevel::kScalar:
      break;
  }
  return scalar_vector_kernels();
}

const VectorKernels& vector_kernels() {
  return vector_kernels(active_simd_level());
}

std::optional<Activation> vector_activation(const ActivationFunction& activation) {
  constexpr std::pair<ActivationKind, UnaryOp> kMaps[] = {
      {ActivationKind::kRelu, UnaryOp::kRelu},
      {ActivationKind::kLeakyRelu, UnaryOp::kLeakyRelu},
      {ActivationKind::kClip, UnaryOp::kClip},
      {ActivationKind::kSigmoid, UnaryOp::kSigmoid},
      {ActivationKind::kTanh, UnaryOp::kTanh},
      {ActivationKind::kHardSigmoid, UnaryOp::kHardSigmoid},
      {ActivationKind::kHardSwish, UnaryOp::kHardSwish},
      {ActivationKind::kSilu, UnaryOp::kSilu},
      {ActivationKind::kGelu, UnaryOp::kGelu},
      {ActivationKind::kGeluTanh, UnaryOp::kGeluTanh}};
  for (const auto& [kind, op] : kMaps) {
    if (kind == activation.kind) return Activation{op, activation.alpha, activation.beta};
  }
  return std::nullopt;
}

void apply_activation_in_place(const ActivationFunction& f, float* x, int64_t n) {
  if (const std::optional<Activation> simd = vector_activation(f)) {
    apply_activation(*simd, x, x, n);
  } else {
    f.apply(x, n);
  }
}

void apply_activation(const Activation& activation, const float* x, float* y, int64_t n) {
  vector_kernels().unary[static_cast<int>(activation.op)](x, y, n, activation.p0, activation.p1);
}

}  // namespace onnxkit
