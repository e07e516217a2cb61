// onnxkit: one binary, one subcommand per job (inspect, ...).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "core/spin_policy.h"

namespace {

// --spin must hold before OpenMP starts its threads, and libgomp reads its wait policy
// before main: when it differs, re-run onnxkit with the policy in its environment.
// `simplify` sleeps by default (its check is two one-off runs; spinning between their
// parallel loops only takes CPU from other processes, and on a busy machine from the
// check's own threads), unless OMP_WAIT_POLICY says otherwise.
void apply_spin_flag(int argc, char** argv) {
  const bool simplify = argc > 1 && std::string_view(argv[1]) == "simplify";
  if (simplify && !std::getenv("OMP_WAIT_POLICY")) {
    bool flag = false;
    for (int i = 2; i < argc; ++i) flag |= std::string_view(argv[i]).rfind("--spin", 0) == 0;
    if (!flag) onnxkit::apply_spin_policy_and_reexec(onnxkit::SpinPolicy::kSleep, argv);
  }
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    if (arg == "--spin" && i + 1 < argc) {
      value = argv[i + 1];
    } else if (arg.rfind("--spin=", 0) == 0) {
      value = arg.substr(std::strlen("--spin="));
    } else {
      continue;
    }
    // An unknown value is left for the parser to report.
    if (auto policy = onnxkit::parse_spin_policy(value)) {
      onnxkit::apply_spin_policy_and_reexec(*policy, argv);
    }
    return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace onnxkit::cli;
  CLI::App app{"onnxkit: simplify, run, verify and serve ONNX models", "onnxkit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "onnxkit 0.1.0");

  std::vector<Command> commands{
      add_inspect_command(app),     add_simplify_command(app), add_run_command(app),
      add_conformance_command(app), add_bench_command(app),    add_ops_command(app),
      add_quantize_command(app),    add_compare_command(app),  add_serve_command(app),
  };

  apply_spin_flag(argc, argv);
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const Command& command : commands) known = known || command.app->get_name() == argv[1];
    if (!known) {
      std::cerr << "onnxkit: unknown subcommand '" << argv[1] << "'\n\n" << app.help();
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "onnxkit: " << e.what() << "\n\n" << app.help() << std::flush;
    return kExitUsage;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) {
      try {
        return command.run();
      } catch (const CLI::ParseError& e) {  // a flag value only checkable once parsed
        std::cerr << "onnxkit " << command.app->get_name() << ": " << e.what() << "\n";
        return kExitUsage;
      } catch (const std::exception& e) {
        std::cerr << "onnxkit " << command.app->get_name() << ": " << e.what() << "\n";
        return kExitFailure;
      }
    }
  }
  std::cerr << app.help();
  return kExitUsage;
}
