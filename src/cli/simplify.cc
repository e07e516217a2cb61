// `onnxkit simplify IN OUT [options]`: onnxsim's options, plus --target-opset, --explain,
// --bisect and --json. Refuses to write over its input; writes nothing when the check fails.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "cli/session_flags.h"
#include "core/spin_policy.h"
#include "core/status.h"
#include "ir/npy.h"
#include "onnx/tensor_io.h"
#include "onnxkit/model_io.h"
#include "onnxkit/simplify.h"
#include "passes/pipeline.h"
#include "report/simplify_report.h"

namespace onnxkit::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct SimplifyArgs {
  std::string input;
  std::string output;
  std::vector<std::string> input_shapes;
  std::vector<std::string> custom_op_libraries;
  std::string check_n = "auto";
  std::vector<std::string> skip_optimization;
  bool skip_optimization_given = false;
  CLI::Option* skip_option = nullptr;
  bool skip_fuse_bn = false;
  bool skip_constant_folding = false;
  bool skip_shape_inference = false;
  std::string tensor_size_threshold = "1.5GB";
  std::string no_large_tensor;
  std::vector<std::string> unused_outputs;
  bool mutable_initializer = false;
  bool save_as_external_data = false;
  bool include_subgraph = true;
  int64_t target_opset = -1;
  double check_rtol = 1e-4;
  double check_atol = 1e-5;
  std::vector<std::string> check_inputs;
  std::vector<std::string> dims;
  std::vector<std::string> test_input_shapes;
  std::string check_kernels = "optimized";
  std::string spin = "off";  // applied in main(), before libgomp matters
  uint64_t seed = 0;
  bool explain = false;
  bool bisect = false;
  bool json = false;
  bool quiet = false;
  std::string report;
  SessionFlags bounds;  // the resource bounds alone
};

// "1.5GB", "100MB", "2KiB", "1024" -> bytes.
uint64_t parse_size(const std::string& text) {
  std::smatch match;
  static const std::regex pattern(R"(^\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*$)");
  if (!std::regex_match(text, match, pattern)) fail("'{}' is not a size (e.g. 1.5GB, 100MB)", text);
  double value = std::stod(match[1]);
  const std::string unit = match[2];
  const bool binary = match[3].matched && match[3].str().size() == 2;
  const double base = binary ? 1024.0 : 1000.0;
  int power =
      unit.empty() ? 0 : std::string("kmgt").find(static_cast<char>(std::tolower(unit[0]))) + 1;
  // onnxsim's sizes are binary (1.5GB = 1.5 * 2^30); keep that for plain 'GB' too.
  (void)base;
  return static_cast<uint64_t>(value * std::pow(1024.0, power));
}

std::map<std::string, std::vector<Dim>> parse_input_shapes(const std::vector<std::string>& specs,
                                                           const char* flag) {
  std::map<std::string, std::vector<Dim>> shapes;
  for (const auto& spec : specs) {
    auto colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      fail("{} expects NAME:D0,D1,..., got '{}'", flag, spec);
    }
    std::vector<Dim> dims;
    std::string list = spec.substr(colon + 1);
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string item =
          list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty()) fail("{} '{}': empty dimension", flag, spec);
      if (std::all_of(item.begin(), item.end(), ::isdigit)) {
        dims.push_back(Dim::known(std::stoll(item)));
      } else {
        dims.push_back(Dim::symbol(item));
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    shapes[spec.substr(0, colon)] = dims;
  }
  return shapes;
}

uint64_t files_size(const fs::path& model) {
  uint64_t total = fs::file_size(model);
  fs::path data = model;
  data += ".data";
  if (fs::exists(data)) total += fs::file_size(data);
  return total;
}

void print_table(const SimplifyReport& report, uint64_t size_before, uint64_t size_after) {
  std::set<std::string> ops;
  for (const auto& [op, n] : report.before.ops) ops.insert(op);
  for (const auto& [op, n] : report.after.ops) ops.insert(op);
  size_t width = 12;
  for (const auto& op : ops) width = std::max(width, op.size() + 2);
  auto row = [&](const std::string& label, const std::string& a, const std::string& b) {
    std::cout << fmt::format("{:<{}}{:>16}{:>16}\n", label, width, a, b);
  };
  auto count = [](const std::map<std::string, size_t>& m, const std::string& op) {
    auto it = m.find(op);
    return it == m.end() ? size_t{0} : it->second;
  };
  row("", "original", "simplified");
  for (const auto& op : ops) {
    size_t a = count(report.before.ops, op), b = count(report.after.ops, op);
    row(op, std::to_string(a),
        b == a ? std::to_string(b)
               : fmt::format("{} ({:+})", b, static_cast<int64_t>(b) - static_cast<int64_t>(a)));
  }
  std::cout << std::string(width + 32, '-') << "\n";
  row("nodes", format_count(report.before.nodes), format_count(report.after.nodes));
  row("initializers", format_count(report.before.initializers),
      format_count(report.after.initializers));
  row("parameters", format_count(report.before.parameters), format_count(report.after.parameters));
  row("file size", format_bytes(size_before), format_bytes(size_after));
}

struct RunFacts {
  uint64_t size_before = 0;
  uint64_t size_after = 0;
  bool written = false;
  double load_seconds = 0;
  double save_seconds = 0;
  double total_seconds = 0;
};

// The HTML page: the input is loaded again (its weights stay in the file: only the graph is
// drawn) beside the simplified model.
void write_report(const SimplifyArgs& args, const SimplifyReport& report, const Model& after,
                  const RunFacts& facts) {
  auto before = load_model(args.input);
  if (!before) fail("{}", before.error());
  report::SimplifyPageInput page;
  page.input_path = args.input;
  page.output_path = facts.written ? args.output : "";
  page.before = &before.value();
  page.after = &after;
  page.report = &report;
  page.size_before = facts.size_before;
  page.size_after = facts.size_after;
  page.load_seconds = facts.load_seconds;
  page.save_seconds = facts.save_seconds;
  page.total_seconds = facts.total_seconds;
  auto html = report::render_simplify_page(page);
  if (!html) fail("report: {}", html.error());
  std::ofstream out(args.report, std::ios::binary);
  out << html.value();
  out.close();
  if (!out.good()) fail("cannot write the report to '{}'", args.report);
}

// --check-n: "auto" or a count.
int parse_check_n(const std::string& text) {
  if (text == "auto") return SimplifyOptions::kCheckAuto;
  int n = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (error != std::errc() || end != text.data() + text.size() || n < 0) {
    fail("--check-n: expected auto or a count (0: no check), got '{}'", text);
  }
  return n;
}

int run_simplify(const SimplifyArgs& args) {
  auto total_start = Clock::now();
  const fs::path input(args.input), output(args.output);
  std::error_code ec;
  if (same_file(input, output)) {
    fail("refusing to write over the input model {}: choose another output path", args.input);
  }
  if (!args.report.empty() && (same_file(args.report, input) || same_file(args.report, output))) {
    fail("--report {}: the report must not be written over the input or output model", args.report);
  }
  // Say so now rather than after minutes of work on a big model.
  const fs::path output_dir = output.parent_path().empty() ? fs::path(".") : output.parent_path();
  if (!fs::is_directory(output_dir, ec)) {
    fail("cannot write {}: directory {} does not exist", args.output, output_dir.string());
  }
  SimplifyOptions options;
  options.custom_op_libraries = args.custom_op_libraries;
  options.input_shapes = parse_input_shapes(args.input_shapes, "--overwrite-input-shape");
  for (const auto& [name, dims] :
       parse_input_shapes(args.test_input_shapes, "--test-input-shape")) {
    std::vector<int64_t>& sizes = options.test_input_shapes[name];
    for (const Dim& dim : dims) {
      if (!dim.is_known()) {
        fail("--test-input-shape {}: '{}' is not a size (the check needs numbers)", name,
             dim.param);
      }
      sizes.push_back(dim.value);
    }
  }
  options.check_kernels =
      args.check_kernels == "reference" ? KernelTier::kReference : KernelTier::kOptimized;
  options.max_tensor_bytes = static_cast<size_t>(args.bounds.max_tensor_bytes);
  options.max_run_bytes = static_cast<size_t>(args.bounds.max_run_bytes);
  options.max_loop_iterations = args.bounds.max_loop_iterations;
  std::vector<std::string> skipped;
  for (const auto& name : args.skip_optimization) {
    if (!name.empty()) skipped.push_back(name);
  }
  const bool skip_given = args.skip_optimization_given || args.skip_option->count() > 0;
  options.skip_all_optimization = skip_given && skipped.empty();
  options.skip_passes.insert(skipped.begin(), skipped.end());
  for (const auto& name : options.skip_passes) {
    auto names = basic_pass_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      fail("--skip-optimization: unknown pass '{}' (passes: {})", name, known);
    }
  }
  options.skip_fuse_bn = args.skip_fuse_bn;
  options.skip_constant_folding = args.skip_constant_folding;
  options.skip_shape_inference = args.skip_shape_inference;
  options.tensor_size_threshold =
      parse_size(args.no_large_tensor.empty() ? args.tensor_size_threshold : args.no_large_tensor);
  options.unused_outputs = args.unused_outputs;
  options.mutable_initializers = args.mutable_initializer;
  options.include_subgraphs = args.include_subgraph;
  options.target_opset = args.target_opset;
  options.check_n = parse_check_n(args.check_n);
  options.check_rtol = args.check_rtol;
  options.check_atol = args.check_atol;
  options.seed = args.seed;
  options.explain = args.explain;
  options.bisect = args.bisect;
  for (const auto& text : args.dims) {
    auto eq = text.find('=');
    if (eq == std::string::npos) fail("--dim expects NAME=VALUE, got '{}'", text);
    options.check_dims[text.substr(0, eq)] = std::stoll(text.substr(eq + 1));
  }
  for (const auto& text : args.check_inputs) {
    auto eq = text.find('=');
    if (eq == std::string::npos) fail("--input expects NAME=FILE, got '{}'", text);
    fs::path file = text.substr(eq + 1);
    auto tensor = file.extension() == ".npy" ? read_npy(file) : read_tensor_pb(file);
    if (!tensor) fail("{}", tensor.error());
    options.check_inputs[text.substr(0, eq)] = std::move(tensor).value();
  }

  Progress progress("simplify", !args.json && !args.quiet);
  auto load_start = Clock::now();
  progress.phase("loading " + input.filename().string());
  auto loaded = load_model(input);
  if (!loaded) fail("{}", loaded.error());
  Model model = std::move(loaded).value();
  SaveOptions save;
  if (args.save_as_external_data) save.external_data = ExternalDataMode::kAlways;
  if (Status spared = check_save_path(model, output, save); !spared.ok()) {
    fail("{}", spared.message());
  }
  const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  options.reload = [&] { return load_model(input); };
  options.progress = [&](std::string_view phase) { progress.phase(phase); };

  auto simplified = simplify(model, options);
  if (!simplified) fail("{}", simplified.error());
  const SimplifyReport& report = simplified.value();
  progress.clear();

  double save_seconds = 0;
  bool written = false;
  if (report.check_ok) {
    auto save_start = Clock::now();
    Status saved = save_model(model, output, save);
    if (!saved.ok()) fail("{}", saved.message());
    save_seconds = std::chrono::duration<double>(Clock::now() - save_start).count();
    written = true;
  }
  const uint64_t size_before = files_size(input);
  const uint64_t size_after = written ? files_size(output) : 0;
  const double total = std::chrono::duration<double>(Clock::now() - total_start).count();
  if (!args.report.empty()) {
    progress.phase("writing the report");
    write_report(args, report, model,
                 {size_before, size_after, written, load_seconds, save_seconds, total});
    progress.clear();
  }

  if (args.json) {
    nlohmann::json out;
    out["input"] = args.input;
    out["output"] = written ? nlohmann::json(args.output) : nlohmann::json(nullptr);
    auto counts = [](const ModelCounts& c, uint64_t size) {
      return nlohmann::json{{"nodes", c.nodes},
                            {"initializers", c.initializers},
                            {"parameters", c.parameters},
                            {"file_bytes", size},
                            {"ops", c.ops}};
    };
    out["before"] = counts(report.before, size_before);
    out["after"] = counts(report.after, size_after);
    out["seconds"] = {{"load", load_seconds},
                      {"convert", report.seconds_convert},
                      {"shape_inference", report.pipeline.shape_inference_seconds},
                      {"passes", report.seconds_passes},
                      {"check", report.seconds_check},
                      {"save", save_seconds},
                      {"total", total}};
    out["rounds"] = report.pipeline.rounds;
    out["converged"] = report.pipeline.converged;
    nlohmann::json passes = nlohmann::json::array();
    for (const auto& p : report.pipeline.passes) {
      passes.push_back({{"name", p.name},
                        {"applications", p.applications},
                        {"changes", p.changes},
                        {"seconds", p.seconds}});
    }
    out["passes"] = passes;
    nlohmann::json check{{"runs", report.checks_run},
                         {"ok", report.check_ok},
                         {"dims", report.check_dims},
                         {"requested", args.check_n},
                         {"spin", spin_policy_name(process_spin_policy())}};
    if (report.check_cost_estimate > 0) check["estimated_cost"] = report.check_cost_estimate;
    if (!report.check_skipped.empty()) check["skipped"] = report.check_skipped;
    for (const auto& c : report.checks) {
      check["outputs"].push_back({{"name", c.name},
                                  {"max_abs_error", c.max_abs_error},
                                  {"max_rel_error", c.max_rel_error},
                                  {"precision_floor", c.precision_floor},
                                  {"ok", c.ok}});
    }
    if (!report.check_ok) check["message"] = report.check_message;
    if (!report.bisect_pass.empty()) {
      check["bisect"] = {{"pass", report.bisect_pass}, {"application", report.bisect_application}};
    }
    out["check"] = check;
    for (const auto& [node, why] : report.explain)
      out["explain"].push_back({{"node", node}, {"reason", why}});
    out["warnings"] = report.warnings;
    out["notes"] = report.notes;
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(report, size_before, size_after);
    std::cout << fmt::format(
        "\ntime: load {:.2f}s, optimize {:.2f}s ({} rounds, shape inference {:.2f}s), check "
        "{:.2f}s, "
        "save {:.2f}s, total {:.2f}s\n",
        load_seconds, report.seconds_passes, report.pipeline.rounds,
        report.pipeline.shape_inference_seconds, report.seconds_check, save_seconds, total);
    if (report.checks_run > 0) {
      double max_abs = 0, max_rel = 0, precision_floor = 0;
      for (const auto& c : report.checks) {
        max_abs = std::max(max_abs, c.max_abs_error);
        max_rel = std::max(max_rel, c.max_rel_error);
        precision_floor = std::max(precision_floor, c.precision_floor);
      }
      std::cout << fmt::format(
          "check: {} run(s), {} (max abs error {:.3g}, max relative error {:.3g}{}){}\n",
          report.checks_run, report.check_ok ? "outputs match" : "MISMATCH", max_abs, max_rel,
          precision_floor > 0
              ? fmt::format("; 16-bit outputs, whose own float32 computation is {:.3g} away",
                            precision_floor)
              : "",
          report.check_dims.empty() ? "" : "; dynamic dims " + report.check_dims);
    } else if (!report.check_skipped.empty()) {
      std::cout << report.check_skipped << "\n";
    } else if (args.check_n != "0") {
      std::cout << "check: not run\n";
    }
    for (const auto& warning : report.warnings) std::cout << "warning: " << warning << "\n";
    for (const auto& note : report.notes) std::cout << "note: " << note << "\n";
    if (args.explain) {
      std::cout << "\nnot folded (" << report.explain.size() << "):\n";
      for (const auto& [node, why] : report.explain)
        std::cout << "  " << node << ": " << why << "\n";
    }
    if (written) std::cout << "wrote " << args.output << "\n";
    if (!args.report.empty()) std::cout << "wrote the report to " << args.report << "\n";
  }
  if (!report.check_ok) {
    std::string message = "check failed: " + report.check_message;
    if (!report.bisect_pass.empty()) {
      message += fmt::format("; first broken by pass '{}' (application {})", report.bisect_pass,
                             report.bisect_application);
    } else if (!args.bisect) {
      message += " (run with --bisect to find the pass; --check-n 0 skips the check)";
    }
    message += "; nothing was written";
    fail("{}", message);
  }
  return 0;
}

}  // namespace

Command add_simplify_command(CLI::App& root) {
  auto args = std::make_shared<SimplifyArgs>();
  CLI::App* c = root.add_subcommand(
      "simplify", "Simplify a model (onnxsim's job) and check it still computes the same");
  c->add_option("input", args->input, "Input .onnx")->required();
  c->add_option("output", args->output, "Output .onnx (never the input)")->required();
  c->add_option("--overwrite-input-shape,--input-shape", args->input_shapes,
                "NAME:D0,D1,... (numbers or symbol names); repeatable");
  add_custom_op_lib_flag(c, args->custom_op_libraries);
  c->add_option("--check-n", args->check_n,
                "Check runs with generated inputs: auto (one run when both models' runs are "
                "estimated cheap, else none, saying so), N (N runs) or 0 (no check)")
      ->capture_default_str();
  args->skip_option = c->add_option("--skip-optimization", args->skip_optimization,
                                    "Skip all optimization, or only the named passes")
                          ->expected(0, -1);
  c->add_flag_callback(
      "--skip-all-optimization", [args] { args->skip_optimization_given = true; },
      "Skip every pass (same as --skip-optimization with no names)");
  c->add_flag("--skip-fuse-bn", args->skip_fuse_bn, "Do not fuse BatchNormalization into Conv");
  c->add_flag("--skip-constant-folding", args->skip_constant_folding,
              "Do not fold constants or shapes");
  c->add_flag("--skip-shape-inference", args->skip_shape_inference,
              "Do not run ONNX shape inference");
  c->add_option("--tensor-size-threshold", args->tensor_size_threshold,
                "Do not fold tensors larger than this (or folds growing the model by more)")
      ->capture_default_str();
  c->add_option("--no-large-tensor", args->no_large_tensor, "Same as --tensor-size-threshold")
      ->expected(0, 1)
      ->default_str("1.5GB");
  c->add_option("--unused-output", args->unused_outputs, "Graph outputs to remove")
      ->expected(1, -1);
  c->add_flag("--mutable-initializer", args->mutable_initializer,
              "Treat initializers as changeable (do not fold them)");
  c->add_flag("--save-as-external-data", args->save_as_external_data, "Write weights to OUT.data");
  c->add_flag("--include-subgraph,!--no-include-subgraph", args->include_subgraph,
              "Also simplify If/Loop/Scan bodies (default on)");
  c->add_option("--target-opset", args->target_opset,
                "Convert to this ai.onnx opset first (1 to 28: libonnx up to 17, onnxkit's "
                "adapters above)");
  c->add_option("--check-rtol", args->check_rtol, "Check relative tolerance")
      ->capture_default_str();
  c->add_option("--check-atol", args->check_atol, "Check absolute tolerance")
      ->capture_default_str();
  c->add_option("--input", args->check_inputs, "NAME=FILE (.npy or .pb) check data; repeatable");
  c->add_option("--dim", args->dims, "NAME=VALUE for a symbolic dim in checks; repeatable");
  c->add_option("--test-input-shape", args->test_input_shapes,
                "NAME:D0,D1,... an input's shape in checks (the model stays dynamic); "
                "repeatable");
  c->add_option("--check-kernels", args->check_kernels,
                "Kernels both models run on in the check: optimized (full speed) or "
                "reference")
      ->check(CLI::IsMember({"optimized", "reference"}))
      ->capture_default_str();
  c->add_option("--spin", args->spin,
                "Idle threads between the check's parallel loops: off (sleep at once: a "
                "one-shot check gains nothing from spinning, and spinning starves other "
                "processes on a busy machine), on, or default (libgomp's: spin, then sleep); "
                "OMP_WAIT_POLICY in the environment wins over the default")
      ->check(CLI::IsMember({"default", "on", "off"}))
      ->capture_default_str();
  c->add_option("--seed", args->seed, "Seed for generated check inputs")->capture_default_str();
  c->add_flag("--explain", args->explain, "List nodes left with constant/shape inputs and why");
  c->add_flag("--bisect", args->bisect, "On a failed check, name the pass that broke it");
  c->add_flag("--json", args->json, "Print a JSON report");
  c->add_option("--report", args->report,
                "Write an HTML page: the graph before and after, op counts, timings");
  c->add_flag("--quiet", args->quiet, "No progress line on the terminal");
  add_resource_flags(c, args->bounds);
  return {c, [args] { return run_simplify(*args); }};
}

}  // namespace onnxkit::cli
