// The one ordered list of passes, and the driver that runs them to a fixed point.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "passes/pass.h"

namespace onnxkit {

// Level `basic`: what `simplify` runs; the output is portable standard ONNX.
std::vector<std::unique_ptr<GraphPass>> basic_passes();
// Names of the basic passes, in order (for --help and --skip-optimization checks).
std::vector<std::string> basic_pass_names();

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
