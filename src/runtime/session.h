// Session: a loaded model compiled for execution. run() takes named inputs and returns
// the named outputs; it is const and may be called from several threads at once.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/arena_plan.h"
#include "core/memory_pool.h"
#include "core/status.h"
#include "ir/model.h"
#include "ir/runtime_value.h"
#include "ops/registry.h"
#include "passes/pipeline.h"

namespace onnxkit {

class CompiledGraph;
class Profiler;

struct SessionOptions {
  // Check inputs against the model's declared dtypes and shapes before running.
  bool validate_inputs = true;
  // Graph rewrites applied at creation (passes/pipeline.h); `skip_passes` names passes of
  // any level not to run.
  OptimizationLevel level = OptimizationLevel::kAll;
  std::set<std::string> skip_passes;
  KernelTier kernels = KernelTier::kOptimized;
  // Threads one run may use (onnxkit's kernels and oneDNN's share them); 0: every core
  // available to the process (affinity and cgroup quota honoured).
  int intra_op_threads = 0;
  // Parallel execution of independent branches: up to `inter_op_threads` nodes at once,
  // each with intra_op_threads / inter_op_threads threads (one budget, never more threads
  // than intra_op_threads in total). Off: nodes run one after another.
  bool parallel_execution = false;
  int inter_op_threads = 0;  // 0: 2 when parallel_execution is on
  // Static memory planning (core/arena_plan.h): after one run with a set of input shapes,
  // later sequential runs with those shapes place every intermediate tensor at a planned
  // offset in one arena. Off, or in parallel execution: the reuse pool alone.
  bool memory_planning = true;
  // For sessions that run once (simplify's check): the resident pages of each file-mapped
  // initializer are dropped after its last reader in a run, so a big model's peak memory is
  // its working set rather than all of its weights. Later runs read them back from the file.
  bool release_weights_after_use = false;

  // The unoptimized graph on the reference kernels, one thread: what tests compare with.
  static SessionOptions reference() {
    SessionOptions options;
    options.level = OptimizationLevel::kNone;
    options.kernels = KernelTier::kReference;
    options.intra_op_threads = 1;
    return options;
  }
};

using NamedValues = std::vector<std::pair<std::string, RuntimeValue>>;

struct RunOptions {
  Profiler* profiler = nullptr;  // when set, every kernel call is timed into it
  // IO binding: outputs to write into the caller's memory (Tensor::external), by output
  // name. The run's result holds these same tensors. A bound output whose dtype or shape
  // differs from what the model produces fails the run.
  NamedValues bound_outputs;
};

// What static memory planning has done so far.
struct MemoryPlanStats {
  size_t plans = 0;  // input-shape sets with a plan
  size_t largest_arena_bytes = 0;
  size_t planned_tensors = 0;  // in the largest plan
  size_t planned_runs = 0;     // runs that followed a plan to the end
  size_t diverged_runs = 0;    // runs that left their plan (the rest came from the pool)
};

// What creating a session did.
struct SessionStats {
  size_t nodes_loaded = 0;     // after inlining functions
  size_t nodes_optimized = 0;  // after the optimization passes
  double optimize_seconds = 0;
  double compile_seconds = 0;  // kernels created, weights prepacked
};

class Session {
 public:
  // Compiles `model` (taking ownership). Fails naming the node when an op has no kernel
  // or its attributes are invalid.
  static Result<std::unique_ptr<Session>> create(Model model, const SessionOptions& options = {});
  static Result<std::unique_ptr<Session>> load(const std::filesystem::path& path,
                                               const SessionOptions& options = {});
  ~Session();

  const Model& model() const { return model_; }
  // Graph inputs the caller must feed (initializer-backed inputs are optional overrides).
  std::vector<const Value*> required_inputs() const;
  const std::vector<Value*>& outputs() const { return model_.graph().outputs(); }

  const SessionOptions& options() const { return options_; }
  const SessionStats& stats() const { return stats_; }
  // Tensor memory of runs: reused across runs (a steady state allocates nothing).
  MemoryPoolStats memory_stats() const;
  MemoryPlanStats memory_plan_stats() const;
  void reset_peak_memory() const;

  // Runs the model. Unknown, missing or mistyped inputs fail naming the input.
  Result<NamedValues> run(const NamedValues& inputs, const RunOptions& run_options = {}) const;

 private:
  Session(Model model, const SessionOptions& options);
  NamedValues run_checked(const NamedValues& inputs, const RunOptions& run_options) const;

  Model model_;
  SessionOptions options_;
  SessionStats stats_;
  std::shared_ptr<const CompiledGraph> plan_;
  std::shared_ptr<MemoryPool> pool_;
  // Memory plans by input-shape key.
  struct PlanEntry {
    std::shared_ptr<const ArenaPlan> plan;
    int failures = 0;  // replays that diverged; after a few the key stays on the pool
  };
  mutable std::mutex plans_mutex_;
  mutable std::map<std::string, PlanEntry> plans_;
  mutable MemoryPlanStats plan_stats_;
};

}  // namespace onnxkit
