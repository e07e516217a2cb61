#include "cli/session_flags.h"

#include <algorithm>

#include "passes/pipeline.h"

namespace onnxkit::cli {

void add_session_flags(CLI::App* command, SessionFlags& flags, const std::string& default_level,
                       const std::string& default_kernels) {
  flags.level = default_level;
  flags.kernels = default_kernels;
  command
      ->add_option("--level", flags.level,
                   "Graph optimization level: none, basic, extended, layout or all")
      ->check(CLI::IsMember({"none", "basic", "extended", "layout", "all"}))
      ->capture_default_str();
  command
      ->add_option("--threads", flags.threads,
                   "Intra-op threads (0: every core available to the process)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--kernels", flags.kernels,
                   "optimized (fast kernels where there are some) or reference")
      ->check(CLI::IsMember({"optimized", "reference"}))
      ->capture_default_str();
  command->add_option("--skip-pass", flags.skip_passes,
                      "A graph optimization pass not to run (any level); repeatable");
  command->add_flag("--no-memory-plan", flags.no_memory_plan,
                    "Take tensors from the reuse pool instead of a planned arena");
  command
      ->add_option("--spin", flags.spin,
                   "Idle intra-op threads: on (spin: lowest latency, burns CPU between "
                   "runs), off (sleep at once) or default (spin briefly, then sleep)")
      ->check(CLI::IsMember({"default", "on", "off"}))
      ->capture_default_str();
  add_resource_flags(command, flags);
}

void add_resource_flags(CLI::App* command, SessionFlags& flags) {
  command
      ->add_option("--max-tensor-bytes", flags.max_tensor_bytes,
                   "Largest tensor a run may allocate, e.g. 2GiB (0: the memory available "
                   "to the process, cgroup limit included)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  command
      ->add_option("--max-run-bytes", flags.max_run_bytes,
                   "Tensor bytes one run may hold at once, e.g. 8GiB (0: the memory "
                   "available to the process)")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  command
      ->add_option("--max-loop-iterations", flags.max_loop_iterations,
                   "Iterations one Loop node may run before the run fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

void apply_resource_flags(const SessionFlags& flags, SessionOptions& options) {
  options.max_tensor_bytes = static_cast<size_t>(flags.max_tensor_bytes);
  options.max_run_bytes = static_cast<size_t>(flags.max_run_bytes);
  options.max_loop_iterations = flags.max_loop_iterations;
}

void add_custom_op_lib_flag(CLI::App* command, std::vector<std::string>& paths) {
  command->add_option("--custom-op-lib", paths,
                      "A custom op library (include/onnxkit/custom_op.h) to load; repeatable");
}

SessionOptions to_session_options(const SessionFlags& flags) {
  SessionOptions options;
  options.custom_op_libraries = flags.custom_op_libraries;
  auto level = parse_optimization_level(flags.level);
  if (!level) throw CLI::ValidationError("--level", "unknown level '" + flags.level + "'");
  options.level = *level;
  options.intra_op_threads = flags.threads;
  options.memory_planning = !flags.no_memory_plan;
  options.kernels = flags.kernels == "reference" ? KernelTier::kReference : KernelTier::kOptimized;
  apply_resource_flags(flags, options);
  const std::vector<std::string> known = all_pass_names();
  for (const std::string& name : flags.skip_passes) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw CLI::ValidationError("--skip-pass",
                                 "unknown pass '" + name + "' (passes: " + list + ")");
    }
    options.skip_passes.insert(name);
  }
  return options;
}

}  // namespace onnxkit::cli
