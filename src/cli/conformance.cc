// `onnxkit conformance DIR... [--filter REGEX] [--expect FILE]`: runs ONNX backend test
// cases and compares with their expected outputs.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/session_flags.h"
#include "onnxkit/simplify.h"
#include "runtime/conformance.h"

namespace onnxkit::cli {
namespace {

struct ConformanceArgs {
  std::vector<std::string> dirs;
  std::string filter;
  std::string expect;
  double rtol = 1e-3;
  double atol = 1e-7;
  bool quiet = false;
  std::string write_expect;
  bool simplify = false;
  SessionFlags session;
};

int run_conformance(const ConformanceArgs& args) {
  std::vector<std::filesystem::path> roots(args.dirs.begin(), args.dirs.end());
  auto cases = find_conformance_cases(roots);
  std::map<std::string, std::string> expected_failures;
  if (!args.expect.empty()) {
    auto read = read_expectations(args.expect);
    if (!read) {
      std::cerr << "onnxkit conformance: " << read.error() << "\n";
      return kExitFailure;
    }
    expected_failures = std::move(read).value();
  }
  std::regex filter(args.filter.empty() ? ".*" : args.filter);
  const SessionOptions session_options = to_session_options(args.session);
  Tolerance tolerance{args.rtol, args.atol};
  size_t passed = 0, failed = 0, unexpected = 0;
  std::vector<std::string> surprises;
  std::vector<std::pair<std::string, std::string>> failures;  // for --write-expect
  Progress progress("conformance", !args.quiet);
  size_t done = 0;
  for (const auto& test_case : cases) {
    progress.count(done++, cases.size());
    if (!std::regex_search(test_case.name, filter)) continue;
    progress.phase(test_case.name);
    ModelTransform transform;
    if (args.simplify) {
      transform = [](Model& model) -> Status {
        SimplifyOptions options;
        options.check_n = 0;  // the test data is the check
        auto report = simplify(model, options);
        return report.ok() ? Status() : Status::error("simplify: " + report.error());
      };
    }
    CaseResult result = run_conformance_case(test_case, session_options, tolerance, transform);
    auto listed = expected_failures.find(test_case.name);
    bool expected_to_fail = listed != expected_failures.end();
    std::string line;
    if (result.passed) {
      ++passed;
      line = result.shape_only
                 ? fmt::format("PASS  {}  (random op: dtype and shape only)", test_case.name)
                 : fmt::format("PASS  {}  (max abs error {:.3g})", test_case.name,
                               result.max_abs_error);
      if (expected_to_fail) {
        line = fmt::format("XPASS {}  passes but is listed as failing: {}", test_case.name,
                           listed->second);
        surprises.push_back(line);
      }
    } else {
      ++failed;
      // Keep a listed reason (written by a person); otherwise record the error itself.
      failures.emplace_back(test_case.name, expected_to_fail ? listed->second : result.message);
      if (expected_to_fail) {
        line = fmt::format("XFAIL {}  {}", test_case.name, result.message);
      } else {
        line = fmt::format("FAIL  {}  {}", test_case.name, result.message);
        if (!args.expect.empty()) surprises.push_back(line);
      }
    }
    if (!args.quiet || (!result.passed && !expected_to_fail) ||
        (result.passed && expected_to_fail)) {
      progress.clear();
      std::cout << line << "\n";
    }
  }
  progress.clear();
  unexpected = surprises.size();
  if (!args.write_expect.empty()) {
    std::ofstream out(args.write_expect);
    out << "# Conformance cases that do not pass yet: '<suite>/<case> <reason>' per line.\n"
           "# Regenerate with: onnxkit conformance DIRS --expect FILE --write-expect FILE\n";
    for (auto& [name, reason] : failures) {
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      out << name << "  " << reason << "\n";
    }
    std::cout << "wrote " << failures.size() << " expected failures to " << args.write_expect
              << "\n";
  }
  if (!args.expect.empty()) {
    std::cout << "\n" << unexpected << " unexpected result(s) against " << args.expect << "\n";
    for (const auto& line : surprises) std::cout << "  " << line << "\n";
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  if (!args.expect.empty()) return unexpected == 0 ? 0 : kExitFailure;
  return failed == 0 ? 0 : kExitFailure;
}

}  // namespace

Command add_conformance_command(CLI::App& root) {
  auto args = std::make_shared<ConformanceArgs>();
  CLI::App* command = root.add_subcommand(
      "conformance", "Run ONNX backend test cases (model.onnx + test_data_set_N) and compare");
  command->add_option("dirs", args->dirs, "Case folders, or folders of case folders")
      ->required()
      ->check(CLI::ExistingDirectory);
  command->add_option("--filter", args->filter, "Only cases whose name matches this regex");
  command
      ->add_option("--expect", args->expect,
                   "Expected failures ('<case> <reason>' per line): exit non-zero only when "
                   "an unlisted case fails or a listed case passes")
      ->check(CLI::ExistingFile);
  command->add_option("--rtol", args->rtol, "Relative tolerance")->capture_default_str();
  command->add_option("--atol", args->atol, "Absolute tolerance")->capture_default_str();
  command->add_option("--write-expect", args->write_expect,
                      "Write the cases that fail now to this file (keeping listed reasons)");
  command->add_flag("--simplify", args->simplify,
                    "Simplify each model (default options, no check) before running it");
  // The defaults test the reference kernels on the graph as given; --level all
  // --kernels optimized tests what `run` does.
  add_session_flags(command, args->session, "none", "reference");
  command->add_flag("--quiet", args->quiet, "Print only unexpected results and the summary");
  return {command, [args] { return run_conformance(*args); }};
}

}  // namespace onnxkit::cli
