// onnxkit ops: the registered ops (domain, op, since-versions, type rule, optimized kernels),
// and a check of the registry against a table of the op versions a standard defines.
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "ir/domain.h"
#include "registry/builtin_registry.h"

namespace onnxkit::cli {
namespace {

struct OpsArgs {
  std::string filter;
  std::string schemas;
  std::string allow;
  std::string write_allow;
};

using OpVersion = std::tuple<std::string, std::string, int64_t>;  // (domain label, op, since)

std::string join(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text.empty() ? "-" : text;
}

// Reads '<domain> <op> <since_version> [reason...]' lines ('#' comments, blank lines skipped).
std::map<OpVersion, std::string> read_versions(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot read {}", path));
  std::map<OpVersion, std::string> result;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string domain, op;
    int64_t version = 0;
    if (!(fields >> domain >> op >> version)) {
      throw Error(fmt::format("{}:{}: expected '<domain> <op> <since_version>'", path, number));
    }
    std::string reason;
    std::getline(fields >> std::ws, reason);
    result[{domain_label(domain), op, version}] = reason;
  }
  return result;
}

// Why a version is not registered, as far as the registry can tell.
std::string default_reason(const OpRegistry& registry, const OpVersion& version,
                           const std::string& schema_note) {
  const auto& [domain, op, since] = version;
  if (schema_note == "deprecated") return "deprecated in onnx; not implemented";
  const OpRegistration* older = registry.find(domain, op, since);
  if (older) {
    return fmt::format("not registered yet: a model at opset {} gets version {}'s kernel", since,
                       older->since_version);
  }
  if (registry.knows(domain, op)) return "not registered yet (only newer versions are)";
  return "op not implemented yet";
}

void list_ops(const OpRegistry& registry, const OpsArgs& args) {
  const std::regex filter(args.filter.empty() ? ".*" : args.filter);
  // (domain, op) -> versions, and which of them have a type rule.
  std::map<std::pair<std::string, std::string>, std::pair<std::vector<int64_t>, size_t>> ops;
  for (const OpRegistration* registration : registry.registrations()) {
    auto& [versions, typed] = ops[{registration->domain, registration->op_type}];
    versions.push_back(registration->since_version);
    if (registration->definition.infer_types) ++typed;
  }
  std::cout << fmt::format("{:<26} {:<34} {:<30} {:<6} {}\n", "domain", "op", "since versions",
                           "types", "optimized");
  size_t shown = 0;
  for (const auto& [key, entry] : ops) {
    const auto& [domain, op] = key;
    if (!std::regex_search(op, filter)) continue;
    const auto& [versions, typed] = entry;
    const char* types = typed == versions.size() ? "rule" : typed == 0 ? "-" : "some";
    std::cout << fmt::format("{:<26} {:<34} {:<30} {:<6} {}\n", domain_label(domain), op,
                             join(versions), types, join(registry.optimized_versions(domain, op)));
    ++shown;
  }
  std::cout << shown << " ops\n";
}

// Compares the registry with the op versions of `args.schemas`: each must be registered
// (at exactly that since_version) or listed in `args.allow` with a reason, and a listed one
// must not be registered. Returns the exit code.
int check_ops(const OpRegistry& registry, const OpsArgs& args) {
  const std::map<OpVersion, std::string> schemas = read_versions(args.schemas);
  const std::map<OpVersion, std::string> allowed =
      args.allow.empty() ? std::map<OpVersion, std::string>{} : read_versions(args.allow);
  std::set<OpVersion> registered;
  for (const OpRegistration* registration : registry.registrations()) {
    registered.insert(
        {domain_label(registration->domain), registration->op_type, registration->since_version});
  }
  std::vector<std::string> problems;
  std::map<OpVersion, std::string> gaps;
  for (const auto& [version, unused] : schemas) {
    const auto& [domain, op, since] = version;
    const bool is_registered = registered.count(version) > 0;
    auto listed = allowed.find(version);
    if (!is_registered) {
      std::string reason = listed != allowed.end() && !listed->second.empty()
                               ? listed->second
                               : default_reason(registry, version, schemas.at(version));
      gaps[version] = reason;
      if (listed == allowed.end()) {
        problems.push_back(
            fmt::format("{} {} {}: not registered, and not in the allow list", domain, op, since));
      } else if (listed->second.empty()) {
        problems.push_back(fmt::format("{} {} {}: listed without a reason", domain, op, since));
      }
    } else if (listed != allowed.end()) {
      problems.push_back(fmt::format("{} {} {}: registered now; remove it from {}", domain, op,
                                     since, args.allow));
    }
  }
  // A registered version of an op the table lists, which the table does not have: a typo,
  // unless the allow list gives its reason (a version ONNX Runtime defines in ONNX's domain).
  std::set<std::pair<std::string, std::string>> ops;
  for (const auto& [version, unused] : schemas)
    ops.emplace(std::get<0>(version), std::get<1>(version));
  std::map<OpVersion, std::string> extensions;
  for (const OpVersion& version : registered) {
    auto listed = allowed.find(version);
    if (!schemas.count(version) && listed != allowed.end() && !listed->second.empty()) {
      extensions.emplace(version, listed->second);
      continue;
    }
    if (ops.count({std::get<0>(version), std::get<1>(version)}) && !schemas.count(version)) {
      const auto& [domain, op, since] = version;
      problems.push_back(fmt::format("{} {} {}: registered at a version {} does not define", domain,
                                     op, since, args.schemas));
    }
  }
  for (const auto& [version, reason] : allowed) {
    if (!schemas.count(version) && !extensions.count(version)) {
      const auto& [domain, op, since] = version;
      problems.push_back(fmt::format("{} {} {}: listed in {} but not in {}", domain, op, since,
                                     args.allow, args.schemas));
    }
  }
  if (!args.write_allow.empty()) {
    std::ofstream out(args.write_allow);
    out << "# Op versions onnx 1.23 defines that onnxkit does not register, and why.\n"
           "# Format: '<domain> <op> <since_version>  <reason>' per line. The `ops_registry`\n"
           "# CTest test fails when a version is neither registered nor listed here, or when a\n"
           "# listed one is registered. A registered version onnx does not define (ONNX\n"
           "# Runtime's own versions in ONNX's domain) is listed here with its reason too.\n"
           "# Regenerate (keeping reasons) with:\n"
           "#   onnxkit ops --schemas FILE --allow FILE --write-allow FILE\n";
    gaps.insert(extensions.begin(), extensions.end());
    for (const auto& [version, reason] : gaps) {
      const auto& [domain, op, since] = version;
      out << fmt::format("{} {} {}  {}\n", domain, op, since, reason);
    }
    std::cout << "wrote " << gaps.size() << " unregistered versions to " << args.write_allow
              << "\n";
    return 0;
  }
  for (const auto& problem : problems) std::cout << problem << "\n";
  std::cout << schemas.size() << " op versions in " << args.schemas << ": "
            << schemas.size() - gaps.size() << " registered, " << gaps.size() << " not registered, "
            << problems.size() << " problem(s)\n";
  return problems.empty() ? 0 : kExitFailure;
}

}  // namespace

Command add_ops_command(CLI::App& root) {
  auto args = std::make_shared<OpsArgs>();
  CLI::App* command = root.add_subcommand(
      "ops", "List the registered ops (domain, op, since-versions, type rule, optimized kernels)");
  command->add_option("--filter", args->filter, "Only ops whose name matches this regex");
  command
      ->add_option("--schemas", args->schemas,
                   "Check the registry against this table ('<domain> <op> <since_version>' "
                   "per line) instead of listing")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--allow", args->allow,
                   "Versions of --schemas allowed to be unregistered ('<domain> <op> "
                   "<since_version>  <reason>' per line)")
      ->check(CLI::ExistingFile);
  command->add_option("--write-allow", args->write_allow,
                      "Write the versions of --schemas not registered now to this file "
                      "(keeping listed reasons)");
  return {command, [args] {
            const OpRegistry& registry = builtin_registry();
            if (!args->schemas.empty()) return check_ops(registry, *args);
            list_ops(registry, *args);
            return 0;
          }};
}

}  // namespace onnxkit::cli
