// The one ordered list of passes, and the driver that runs them to a fixed point.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "passes/pass.h"

namespace onnxkit {

// Graph optimization levels of a Session; each includes the ones before it.
enum class OptimizationLevel {
  kNone,      // the graph as loaded
  kBasic,     // basic_passes(): portable standard ONNX (what `simplify` runs)
  kExtended,  // + extended_passes(): fusions into onnxkit's own ops (ops/fused_ops.h)
  kLayout,    // + layout_passes(): blocked / channels-last layouts for conv chains
  kAll,       // + runtime_passes(): rewrites that only make sense inside a session
};
std::string_view optimization_level_name(OptimizationLevel level);
// "none" | "basic" | "extended" | "layout" | "all"; nullopt for anything else.
std::optional<OptimizationLevel> parse_optimization_level(std::string_view name);

// Level `basic`: what `simplify` runs; the output is portable standard ONNX.
std::vector<std::unique_ptr<GraphPass>> basic_passes();
// Level `extended`: runtime fusions; their output holds com.onnxkit ops.
std::vector<std::unique_ptr<GraphPass>> extended_passes();
// Level `layout`: data layout rewrites for the optimized kernels.
std::vector<std::unique_ptr<GraphPass>> layout_passes();
// Level `all`: the rest of the session-only rewrites.
std::vector<std::unique_ptr<GraphPass>> runtime_passes();
// The pass lists a level adds, in order: one list per level from basic up to `level`.
std::vector<std::vector<std::unique_ptr<GraphPass>>> pass_lists_for_level(OptimizationLevel level);
// Names of the basic passes, in order (for --help and --skip-optimization checks).
std::vector<std::string> basic_pass_names();
// Names of every pass of every level, in order.
std::vector<std::string> all_pass_names();

struct PipelineOptions {
  std::set<std::string> skip;     // pass names not to run
  bool include_subgraphs = true;  // also rewrite If/Loop/Scan bodies
  bool shape_inference = true;    // ONNX shape inference before each round
  // Fixed-point iteration cap. Deep models need about a round per layer: a Reshape target
  // often becomes known only after shape inference has seen the previous layer folded.
  int max_rounds = 64;
  // Stop after this many pass applications that changed something (for --bisect).
  size_t max_applications = SIZE_MAX;
  // Called after each application that changed something: pass name, changes.
  std::function<void(std::string_view, size_t)> on_change;
};

struct PassStats {
  std::string name;
  size_t applications = 0;  // runs that changed something
  size_t changes = 0;
  double seconds = 0;
};

struct PipelineResult {
  std::vector<PassStats> passes;
  int rounds = 0;
  size_t applications = 0;
  bool converged = false;  // a round changed nothing
  double shape_inference_seconds = 0;
  std::string shape_inference_warning;  // set when ONNX shape inference gave up
};

Result<PipelineResult> run_pipeline(Model& model, std::vector<std::unique_ptr<GraphPass>>& passes,
                                    PassContext& context, const PipelineOptions& options);

}  // namespace onnxkit
