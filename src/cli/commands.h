// One function per subcommand: each adds its CLI11 subcommand and returns how to run it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace onnxkit::cli {

// Exit codes: 0 success, 1 the work failed (bad model, I/O), 2 bad usage.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// A registered subcommand and what to run when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_inspect_command(CLI::App& root);
Command add_run_command(CLI::App& root);
Command add_conformance_command(CLI::App& root);
Command add_simplify_command(CLI::App& root);
Command add_bench_command(CLI::App& root);
Command add_ops_command(CLI::App& root);
Command add_quantize_command(CLI::App& root);
Command add_compare_command(CLI::App& root);
Command add_serve_command(CLI::App& root);

}  // namespace onnxkit::cli
