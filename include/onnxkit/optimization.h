// How much a Session rewrites a graph and which kernels it runs, and what a pass pipeline
// did (SessionOptions, SimplifyReport).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxkit {

// Graph optimization levels of a Session; each includes the ones before it.
enum class OptimizationLevel {
  kNone,      // the graph as loaded
  kBasic,     // basic_passes(): portable standard ONNX (what `simplify` runs)
  kExtended,  // + extended_passes(): fusions into onnxkit's own ops (ops/fused_ops.h)
  kLayout,    // + layout_passes(): blocked / channels-last layouts for conv chains
  kAll,       // + runtime_passes(): rewrites that only make sense inside a session
};
// "none" | "basic" | "extended" | "layout" | "all".
std::string_view optimization_level_name(OptimizationLevel level);
// The level named `name` (as optimization_level_name spells it); nullopt for anything else.
std::optional<OptimizationLevel> parse_optimization_level(std::string_view name);

// Which kernels a Session runs.
enum class KernelTier {
  kReference,  // the reference kernels only (tests, bisecting a wrong result)
  kOptimized,  // optimized kernels where registered and willing, reference otherwise
};

// What one pass did over a pipeline run.
struct PassStats {
  std::string name;
  size_t applications = 0;  // runs that changed something
  size_t changes = 0;
  double seconds = 0;
};

// What a pass pipeline did: per pass, and rounds to the fixed point.
struct PipelineResult {
  std::vector<PassStats> passes;
  int rounds = 0;
  size_t applications = 0;
  bool converged = false;  // a round changed nothing
  double shape_inference_seconds = 0;
  std::string shape_inference_warning;  // set when ONNX shape inference gave up
  // How the last round's type inference went when libonnx did not type every node itself
  // (nodes of opsets newer than it knows); empty otherwise.
  std::string type_inference_note;
};

}  // namespace onnxkit
