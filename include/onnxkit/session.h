// Session: a loaded model compiled for execution. run() takes named inputs and returns
// the named outputs; it is const and may be called from several threads at once.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnxkit/memory_stats.h"
#include "onnxkit/model.h"
#include "onnxkit/optimization.h"
#include "onnxkit/runtime_value.h"
#include "onnxkit/status.h"
#include "onnxkit/value_info.h"

namespace onnxkit {

// Internal types a few members refer to (ops/registry.h, runtime/profiler.h, ir/graph.h).
class OpRegistry;
class Profiler;
class Value;

// How Session::create prepares a model, and how its runs execute.
struct SessionOptions {
  // Check inputs against the model's declared dtypes and shapes before running.
  bool validate_inputs = true;
  // Graph rewrites applied at creation; `skip_passes` names passes of any level not to run.
  OptimizationLevel level = OptimizationLevel::kAll;
  std::set<std::string> skip_passes;
  KernelTier kernels = KernelTier::kOptimized;
  // The kernels to build the graph from; nullptr: the built-in registry. Must outlive the
  // session.
  const OpRegistry* registry = nullptr;
  // Custom op libraries (include/onnxkit/custom_op.h) to load: their ops are added to a copy
  // of `registry` (or of the built-in one) that the session owns. Fails naming the library
  // when one cannot be loaded, exports no registration function or registers an op twice.
  std::vector<std::string> custom_op_libraries;
  // Threads one run may use (onnxkit's kernels and oneDNN's share them); 0: every core
  // available to the process (affinity and cgroup quota honoured).
  int intra_op_threads = 0;
  // Parallel execution of independent branches: up to `inter_op_threads` nodes at once,
  // each with intra_op_threads / inter_op_threads threads (one budget, never more threads
  // than intra_op_threads in total). Off: nodes run one after another.
  bool parallel_execution = false;
  int inter_op_threads = 0;  // 0: 2 when parallel_execution is on
  // Static memory planning: after one run with a set of input shapes, later sequential
  // runs with those shapes place every intermediate tensor at a planned offset in one
  // arena. Off, or in parallel execution: the reuse pool alone.
  bool memory_planning = true;
  // For sessions that run once (simplify's check): the resident pages of each file-mapped
  // initializer are dropped after its last reader in a run, so a big model's peak memory is
  // its working set rather than all of its weights. Later runs read them back from the file.
  bool release_weights_after_use = false;
  // For sessions that run once or a few times (simplify's check, `onnxkit run`): kernels
  // choose implementations for their creation cost plus one run, not for the steady state.
  // oneDNN's convolution then skips Winograd (its weight transform costs ~15 ms for a
  // 256x256 3x3 conv) and the pointwise GEMM over NCHW, whose first use initialises oneDNN's
  // sgemm for the whole process (30-100 ms, for a small model several times its run).
  bool one_shot = false;

  // Bounds on what a model may make a run do, checked before the work is done; a run over
  // one fails naming the node. Tensor memory: the largest single tensor and the bytes one
  // run holds at once (0: the memory available to the process, physical memory capped by
  // the cgroup's limit). Loop: the iterations of one Loop node (a huge trip count, or a
  // condition that never turns false; the default is core's kDefaultMaxLoopIterations).
  size_t max_tensor_bytes = 0;
  size_t max_run_bytes = 0;
  int64_t max_loop_iterations = int64_t{1} << 14;

  // The unoptimized graph on the reference kernels, one thread: what tests compare with.
  static SessionOptions reference() {
    SessionOptions options;
    options.level = OptimizationLevel::kNone;
    options.kernels = KernelTier::kReference;
    options.intra_op_threads = 1;
    return options;
  }
};

// Values by name: a run's inputs and outputs.
using NamedValues = std::vector<std::pair<std::string, RuntimeValue>>;

// Per-run options.
struct RunOptions {
  // When set, every kernel call is timed into it (onnxkit's own tools: `bench --profile`).
  Profiler* profiler = nullptr;
  // IO binding: outputs to write into the caller's memory (Tensor::external), by output
  // name. The run's result holds these same tensors. A bound output whose dtype or shape
  // differs from what the model produces fails the run.
  NamedValues bound_outputs;
};

// What creating a session did.
struct SessionStats {
  size_t nodes_loaded = 0;     // after inlining functions
  size_t nodes_optimized = 0;  // after the optimization passes
  double optimize_seconds = 0;
  double compile_seconds = 0;  // kernels created, weights prepacked
};

// A model compiled for execution.
class Session {
 public:
  // Compiles `model` (taking ownership). Fails naming the node when an op has no kernel
  // or its attributes are invalid.
  static Result<std::unique_ptr<Session>> create(Model model, const SessionOptions& options = {});
  // Loads the file at `path` and compiles it; errors start with the path.
  static Result<std::unique_ptr<Session>> load(const std::filesystem::path& path,
                                               const SessionOptions& options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The inputs a run must feed, in graph order (inputs with an initializer are optional
  // overrides and are not listed), and the outputs a run returns, in order.
  std::vector<ValueInfo> inputs() const;
  std::vector<ValueInfo> outputs() const;

  // Runs the model on `inputs` (by name, any order). Unknown, missing or mistyped inputs
  // fail naming the input; kernel errors name the node. Outputs come back in graph order.
  Result<NamedValues> run(const NamedValues& inputs, const RunOptions& run_options = {}) const;

  // The options it was created with, and what creation did.
  const SessionOptions& options() const;
  const SessionStats& stats() const;
  // Tensor memory of runs: reused across runs (a steady state allocates nothing).
  MemoryPoolStats memory_stats() const;
  MemoryPlanStats memory_plan_stats() const;

  // The model as compiled (after inlining and the level's passes).
  const Model& model() const;
  // The graph inputs inputs() describes, as IR values (onnxkit's own code).
  std::vector<const Value*> required_inputs() const;

 private:
  struct State;
  explicit Session(std::unique_ptr<State> state);
  NamedValues run_checked(const NamedValues& inputs, const RunOptions& run_options) const;

  std::unique_ptr<State> state_;
};

}  // namespace onnxkit
