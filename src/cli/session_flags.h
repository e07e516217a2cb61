// The session flags `run`, `bench` and `conformance` share: --level, --threads,
// --kernels, --skip-pass, --no-memory-plan, --spin; --custom-op-lib (run, bench, simplify);
// and the resource bounds --max-tensor-bytes, --max-run-bytes, --max-loop-iterations.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "onnxkit/session.h"

namespace onnxkit::cli {

struct SessionFlags {
  std::string level;
  int threads = 0;
  std::string kernels = "optimized";
  std::vector<std::string> skip_passes;
  bool no_memory_plan = false;
  std::string spin = "default";                  // applied in main(), before libgomp matters
  std::vector<std::string> custom_op_libraries;  // --custom-op-lib (run, bench)
  uint64_t max_tensor_bytes = 0;                 // 0: the memory available to the process
  uint64_t max_run_bytes = 0;
  int64_t max_loop_iterations = SessionOptions{}.max_loop_iterations;
};

// Adds only the resource bounds (commands whose other session flags do not apply).
void add_resource_flags(CLI::App* command, SessionFlags& flags);

// Adds the flags to `command`; `default_level` is what --level means when not given.
void add_session_flags(CLI::App* command, SessionFlags& flags, const std::string& default_level,
                       const std::string& default_kernels = "optimized");

// --custom-op-lib PATH (repeatable): a custom op library to load (run, bench, simplify).
void add_custom_op_lib_flag(CLI::App* command, std::vector<std::string>& paths);

// The options the flags ask for; fails with a usage message on an unknown level or pass.
SessionOptions to_session_options(const SessionFlags& flags);
// Copies the resource bounds alone into `options`.
void apply_resource_flags(const SessionFlags& flags, SessionOptions& options);

}  // namespace onnxkit::cli
