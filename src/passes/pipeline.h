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
#include "onnxkit/optimization.h"
#include "passes/pass.h"

namespace onnxkit {

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

Result<PipelineResult> run_pipeline(Model& model, std::vector<std::unique_ptr<GraphPass>>& passes,
                                    PassContext& context, const PipelineOptions& options);

}  // namespace onnxkit
