// `onnxkit quantize IN OUT [options]` (ONNX Runtime's quantize_dynamic / quantize_static
// options under their names) and `onnxkit compare FLOAT QUANTIZED`: the fp32 and int8 twins
// on the same inputs. quantize refuses to write over its input and writes nothing on error.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/inputs.h"
#include "core/status.h"
#include "ir/model.h"
#include "ir/npy.h"
#include "onnx/tensor_io.h"
#include "onnxkit/model_io.h"
#include "onnxkit/quantize.h"
#include "quantize/compare_models.h"
#include "report/quantize_report.h"

namespace onnxkit::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A model input a calibration file feeds.
struct InputSlot {
  std::string name;
  ValueType type;
};

std::vector<InputSlot> model_inputs(const Model& model) {
  std::vector<InputSlot> inputs;
  for (const Value* value : model.graph().inputs()) {
    if (!value->has_initializer()) inputs.push_back({value->name(), value->type()});
  }
  return inputs;
}

// Calibration (or comparison) samples in a folder, read one at a time when asked for:
//   DIR/test_data_set_N/input_K.pb  ONNX's test layout, input K of the model;
//   DIR/SAMPLE/NAME.npy             a folder per sample, a file per input;
//   DIR/NAME.npy                    one sample, or, with one dim more than the input,
//                                   samples stacked along the first axis.
class SampleFolder {
 public:
  SampleFolder(const fs::path& dir, std::vector<InputSlot> inputs) : inputs_(std::move(inputs)) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) fail("--calibration-data: {} is not a folder", dir.string());
    std::vector<fs::path> folders, files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_directory()) folders.push_back(entry.path());
      if (entry.is_regular_file() && entry.path().extension() == ".npy") {
        files.push_back(entry.path());
      }
    }
    std::sort(folders.begin(), folders.end(), [](const fs::path& a, const fs::path& b) {
      // test_data_set_10 after test_data_set_9
      return std::make_pair(a.filename().string().size(), a) <
             std::make_pair(b.filename().string().size(), b);
    });
    for (const fs::path& folder : folders) {
      std::vector<std::pair<std::string, fs::path>> sample;
      for (const auto& entry : fs::directory_iterator(folder)) {
        const fs::path& file = entry.path();
        const std::string stem = file.stem().string();
        if (file.extension() == ".pb" && stem.rfind("input_", 0) == 0) {
          size_t index = std::stoul(stem.substr(6));
          if (index >= inputs_.size()) {
            fail("{}: the model has {} input(s), no input {}", file.string(), inputs_.size(),
                 index);
          }
          sample.emplace_back(inputs_[index].name, file);
        } else if (file.extension() == ".npy") {
          sample.emplace_back(stem, file);
        }
      }
      if (!sample.empty()) samples_.push_back({folder.string(), sample});
    }
    if (samples_.empty() && !files.empty()) {
      stacked_ = files;
      for (const fs::path& file : files) {
        auto tensor = read_npy(file);
        if (!tensor) fail("{}", tensor.error());
        const std::string name = file.stem().string();
        const InputSlot* slot = find(name);
        const bool stacked =
            slot && slot->type.shape && tensor.value().rank() == slot->type.shape->size() + 1;
        const int64_t count = stacked ? tensor.value().shape()[0] : 1;
        if (stacked_count_ >= 0 && count != stacked_count_) {
          fail("--calibration-data: {} holds {} sample(s), other files {}", file.string(), count,
               stacked_count_);
        }
        stacked_count_ = count;
        stacked_tensors_[name] = {std::move(tensor).value(), stacked};
      }
    }
    if (samples_.empty() && stacked_count_ < 0) {
      fail(
          "--calibration-data: {} holds no test_data_set_N folders, sample folders or .npy "
          "files",
          dir.string());
    }
  }

  size_t size() const {
    return stacked_count_ >= 0 ? static_cast<size_t>(stacked_count_) : samples_.size();
  }

  std::optional<CalibrationSample> operator()(size_t index) const {
    if (index >= size()) return std::nullopt;
    CalibrationSample sample;
    if (stacked_count_ >= 0) {
      sample.label = fmt::format("{} #{}", stacked_.front().parent_path().string(), index);
      for (const auto& [name, entry] : stacked_tensors_) {
        const auto& [tensor, stacked] = entry;
        if (!stacked) {
          sample.inputs.emplace_back(name, RuntimeValue(tensor));
          continue;
        }
        Shape shape(tensor.shape().begin() + 1, tensor.shape().end());
        Tensor slice(tensor.dtype(), shape);
        const size_t bytes = slice.nbytes();
        std::memcpy(slice.mutable_raw_data(),
                    static_cast<const char*>(tensor.raw_data()) + bytes * index, bytes);
        sample.inputs.emplace_back(name, RuntimeValue(std::move(slice)));
      }
      return sample;
    }
    const auto& [label, files] = samples_[index];
    sample.label = label;
    for (const auto& [name, path] : files) {
      const InputSlot* slot = find(name);
      if (path.extension() == ".npy" || !slot) {
        auto tensor = read_npy(path);
        if (!tensor) fail("{}", tensor.error());
        sample.inputs.emplace_back(name, RuntimeValue(std::move(tensor).value()));
      } else {
        auto value = read_value_pb(path, slot->type);
        if (!value) fail("{}", value.error());
        sample.inputs.emplace_back(name, std::move(value).value());
      }
    }
    return sample;
  }

 private:
  const InputSlot* find(const std::string& name) const {
    for (const InputSlot& slot : inputs_) {
      if (slot.name == name) return &slot;
    }
    return nullptr;
  }

  std::vector<InputSlot> inputs_;
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, fs::path>>>> samples_;
  std::vector<fs::path> stacked_;
  std::map<std::string, std::pair<Tensor, bool>> stacked_tensors_;
  int64_t stacked_count_ = -1;
};

uint64_t files_size(const fs::path& model) {
  std::error_code ec;
  uint64_t total = fs::file_size(model, ec);
  fs::path data = model;
  data += ".data";
  if (fs::exists(data, ec)) total += fs::file_size(data, ec);
  return total;
}

DType parse_quant_type(const std::string& text) {
  return text == "int8" ? DType::kInt8 : DType::kUInt8;
}

struct CompareArgs {
  size_t samples = 4;
  int runs = 10;
  int threads = 1;
  std::vector<std::string> dims;
  std::string data;
  uint64_t seed = 1000;
};

void add_compare_flags(CLI::App* c, CompareArgs& args, const char* prefix) {
  c->add_option(std::string("--") + prefix + "samples", args.samples,
                "Input samples the comparison runs (generated unless data is given)")
      ->capture_default_str();
  c->add_option(std::string("--") + prefix + "runs", args.runs,
                "Timed runs per model, alternating (0: no timing)")
      ->capture_default_str();
  c->add_option(std::string("--") + prefix + "threads", args.threads,
                "Threads of both sessions in the comparison")
      ->capture_default_str();
}

nlohmann::json comparison_json(const quant::ModelComparison& result, const fs::path& reference,
                               const fs::path& candidate) {
  nlohmann::json out;
  out["reference"] = {{"path", reference.string()},
                      {"file_bytes", files_size(reference)},
                      {"latency_ms", result.reference_ms}};
  out["candidate"] = {{"path", candidate.string()},
                      {"file_bytes", files_size(candidate)},
                      {"latency_ms", result.candidate_ms}};
  out["samples"] = result.samples;
  for (const auto& o : result.outputs) {
    nlohmann::json entry{{"name", o.name},
                         {"max_abs_error", o.max_abs_error},
                         {"mean_abs_error", o.mean_abs_error},
                         {"cosine", o.cosine}};
    entry["top1_agreement"] =
        o.top1_agreement >= 0 ? nlohmann::json(o.top1_agreement) : nlohmann::json(nullptr);
    out["outputs"].push_back(entry);
  }
  return out;
}

void print_comparison(const quant::ModelComparison& result, const fs::path& reference,
                      const fs::path& candidate, int threads) {
  std::cout << fmt::format("{:<24}{:>14}{:>14}{:>12}{:>12}\n", "output", "max abs err",
                           "mean abs err", "cosine", "top-1");
  for (const auto& o : result.outputs) {
    std::cout << fmt::format(
        "{:<24}{:>14.4g}{:>14.4g}{:>12.6f}{:>12}\n", o.name, o.max_abs_error, o.mean_abs_error,
        o.cosine, o.top1_agreement >= 0 ? fmt::format("{:.2f}%", 100 * o.top1_agreement) : "-");
  }
  const uint64_t a = files_size(reference), b = files_size(candidate);
  std::cout << fmt::format("size: {} -> {} ({:.2f}x smaller)\n", format_bytes(a), format_bytes(b),
                           b ? double(a) / double(b) : 0.0);
  if (result.reference_ms > 0) {
    std::cout << fmt::format(
        "latency ({} thread{}, median, runs alternating): {:.3f} ms -> {:.3f} ms ({:.2f}x)\n",
        threads, threads == 1 ? "" : "s", result.reference_ms, result.candidate_ms,
        result.candidate_ms > 0 ? result.reference_ms / result.candidate_ms : 0.0);
  }
  std::cout << fmt::format("over {} input sample(s)\n", result.samples);
  std::cout << "top-1: argmax agreement per row of [batch, classes] outputs made by Gemm, "
               "MatMul, Add or (Log)Softmax; '-' for other outputs\n";
}

quant::CompareOptions compare_options(const CompareArgs& args, const fs::path& reference,
                                      std::shared_ptr<SampleFolder>& folder) {
  quant::CompareOptions options;
  options.samples = args.samples;
  options.timed_runs = args.runs;
  options.threads = args.threads;
  options.seed = args.seed;
  options.dims = parse_dims(args.dims);
  if (!args.data.empty()) {
    auto model = load_model(reference);
    if (!model) fail("{}", model.error());
    folder = std::make_shared<SampleFolder>(args.data, model_inputs(model.value()));
    options.source = [folder](size_t i) { return (*folder)(i); };
  }
  return options;
}

// Refuses a report path that names one of the models.
void check_report_path(const std::string& report, const std::vector<fs::path>& models) {
  if (report.empty()) return;
  for (const fs::path& model : models) {
    if (same_file(report, model)) {
      fail("refusing to write the report over the model {}", model.string());
    }
  }
}

void write_quantize_report(const std::string& path, const report::QuantizePageInput& page) {
  std::ofstream out(path, std::ios::binary);
  out << report::render_quantize_page(page);
  out.close();
  if (!out.good()) fail("cannot write the report to '{}'", path);
}

struct QuantizeArgs {
  std::string input;
  std::string output;
  std::string mode = "dynamic";
  std::string format = "qdq";
  bool per_channel = false;
  bool no_per_channel = false;
  bool reduce_range = false;
  std::string weight_type = "int8";
  std::string activation_type = "uint8";
  std::vector<std::string> op_types;
  std::vector<std::string> nodes_to_exclude;
  std::vector<std::string> nodes_to_quantize;
  std::string calibration_data;
  std::string calibration_method = "minmax";
  size_t calibration_samples = 8;
  std::vector<std::string> dims;
  uint64_t seed = 0;
  std::string calibration_kernels = "optimized";
  bool symmetric_activations = false;
  bool symmetric_weights = false;
  bool asymmetric_weights = false;
  bool save_as_external_data = false;
  bool skip_simplify = false;
  bool json = false;
  bool compare = false;
  CompareArgs compare_args;
  std::string report;
};

int run_quantize(const QuantizeArgs& args) {
  const auto start = Clock::now();
  const fs::path input(args.input), output(args.output);
  std::error_code ec;
  if (same_file(input, output)) {
    fail("refusing to write over the input model {}: choose another output path", args.input);
  }
  check_report_path(args.report, {input, output});
  const fs::path output_dir = output.parent_path().empty() ? fs::path(".") : output.parent_path();
  if (!fs::is_directory(output_dir, ec)) {
    fail("cannot write {}: directory {} does not exist", args.output, output_dir.string());
  }
  QuantizeOptions options;
  options.mode = args.mode == "static" ? QuantizeMode::kStatic : QuantizeMode::kDynamic;
  options.format = args.format == "qoperator" ? QuantFormat::kQOperator : QuantFormat::kQdq;
  if (args.per_channel && args.no_per_channel) fail("--per-channel and --no-per-channel conflict");
  if (args.per_channel) options.per_channel = true;
  if (args.no_per_channel) options.per_channel = false;
  options.reduce_range = args.reduce_range;
  options.weight_type = parse_quant_type(args.weight_type);
  options.activation_type = parse_quant_type(args.activation_type);
  options.op_types = args.op_types;
  options.nodes_to_exclude = {args.nodes_to_exclude.begin(), args.nodes_to_exclude.end()};
  options.nodes_to_quantize = {args.nodes_to_quantize.begin(), args.nodes_to_quantize.end()};
  options.calibration_method = args.calibration_method == "entropy" ? CalibrationMethod::kEntropy
                               : args.calibration_method == "percentile"
                                   ? CalibrationMethod::kPercentile
                                   : CalibrationMethod::kMinMax;
  options.calibration_samples = args.calibration_samples;
  options.calibration_dims = parse_dims(args.dims);
  options.seed = args.seed;
  options.calibration_kernels =
      args.calibration_kernels == "reference" ? KernelTier::kReference : KernelTier::kOptimized;
  options.symmetric_activations = args.symmetric_activations;
  if (args.symmetric_weights && args.asymmetric_weights) {
    fail("--symmetric-weights and --asymmetric-weights conflict");
  }
  if (args.symmetric_weights) options.symmetric_weights = true;
  if (args.asymmetric_weights) options.symmetric_weights = false;
  options.simplify_first = !args.skip_simplify;
  if (options.mode == QuantizeMode::kDynamic) {
    if (!args.calibration_data.empty()) fail("--calibration-data is for --mode static");
    if (args.format != "qdq") fail("--format is for --mode static (dynamic mode has one form)");
  }

  auto loaded = load_model(input);
  if (!loaded) fail("{}", loaded.error());
  Model model = std::move(loaded).value();
  SaveOptions save;
  if (args.save_as_external_data) save.external_data = ExternalDataMode::kAlways;
  if (Status spared = check_save_path(model, output, save); !spared.ok()) {
    fail("{}", spared.message());
  }
  std::shared_ptr<SampleFolder> folder;
  if (!args.calibration_data.empty()) {
    folder = std::make_shared<SampleFolder>(args.calibration_data, model_inputs(model));
    options.calibration_source = [folder](size_t i) { return (*folder)(i); };
  }
  auto quantized = quantize(model, options);
  if (!quantized) fail("{}", quantized.error());
  const QuantizeReport& report = quantized.value();

  const auto save_start = Clock::now();
  Status saved = save_model(model, output, save);
  if (!saved.ok()) fail("{}", saved.message());
  const double save_seconds = std::chrono::duration<double>(Clock::now() - save_start).count();
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t size_before = files_size(input), size_after = files_size(output);

  std::optional<quant::ModelComparison> comparison;
  if (args.compare) {
    std::shared_ptr<SampleFolder> compare_folder;
    CompareArgs compare_args = args.compare_args;
    compare_args.dims = args.dims;
    compare_args.data = args.calibration_data;
    comparison =
        quant::compare_models(input, output, compare_options(compare_args, input, compare_folder));
  }
  if (!args.report.empty()) {
    report::QuantizePageInput page;
    page.reference_path = args.input;
    page.candidate_path = args.output;
    page.reference_bytes = size_before;
    page.candidate_bytes = size_after;
    page.threads = args.compare_args.threads;
    page.comparison = comparison ? &*comparison : nullptr;
    page.quantize_report = &report;
    write_quantize_report(args.report, page);
  }

  if (args.json) {
    nlohmann::json out;
    out["input"] = args.input;
    out["output"] = args.output;
    out["mode"] = args.mode;
    out["format"] = options.mode == QuantizeMode::kStatic ? args.format : "integer_ops";
    out["quantized"] = report.quantized;
    for (const auto& n : report.nodes) {
      out["nodes"].push_back({{"node", n.node}, {"op_type", n.op_type}, {"how", n.how}});
    }
    out["file_bytes"] = {{"before", size_before}, {"after", size_after}};
    out["weight_bytes"] = {{"float", report.float_weight_bytes},
                           {"quantized", report.quantized_weight_bytes}};
    out["calibration"] = {{"samples", report.calibration_samples},
                          {"tensors", report.calibrated_tensors},
                          {"method", args.calibration_method}};
    out["seconds"] = {{"simplify", report.seconds_simplify},
                      {"calibrate", report.seconds_calibrate},
                      {"quantize", report.seconds_quantize},
                      {"save", save_seconds},
                      {"total", total}};
    out["warnings"] = report.warnings;
    if (comparison) out["compare"] = comparison_json(*comparison, input, output);
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  size_t left = 0;
  for (const auto& [op, n] : report.quantized)
    std::cout << fmt::format("{:<20}{:>8} quantized\n", op, n);
  // Joins the default op types leave float between float ops (a transformer's residual
  // stream, LayerNorm) are many; they are counted per op type, the --json report lists them.
  std::map<std::string, size_t> kept_float_joins;
  for (const auto& n : report.nodes) {
    if (n.how.find("only between int8 ops") != std::string::npos) {
      ++kept_float_joins[n.op_type];
    } else if (n.how.rfind("left float", 0) == 0 || n.how.rfind("folded", 0) == 0) {
      if (left++ < 20) std::cout << fmt::format("  {} ({}): {}\n", n.node, n.op_type, n.how);
    }
  }
  if (left > 20) std::cout << fmt::format("  ... and {} more left float\n", left - 20);
  for (const auto& [op, n] : kept_float_joins) {
    std::cout << fmt::format(
        "  {} {} left float: not between int8 ops (the residual stream, LayerNorm, GELU), "
        "where one per-tensor scale would cost accuracy; --op-types {} quantizes them\n",
        n, op, op);
  }
  if (options.mode == QuantizeMode::kStatic) {
    std::cout << fmt::format("calibration: {} sample(s), {} tensors, {} ({:.2f}s)\n",
                             report.calibration_samples, report.calibrated_tensors,
                             args.calibration_method, report.seconds_calibrate);
  }
  std::cout << fmt::format("file size: {} -> {}\n", format_bytes(size_before),
                           format_bytes(size_after));
  std::cout << fmt::format(
      "time: simplify {:.2f}s, quantize {:.2f}s, save {:.2f}s, total {:.2f}s\n",
      report.seconds_simplify, report.seconds_quantize, save_seconds, total);
  for (const auto& warning : report.warnings) std::cout << "warning: " << warning << "\n";
  std::cout << "wrote " << args.output << "\n";
  if (comparison) {
    std::cout << "\n";
    print_comparison(*comparison, input, output, args.compare_args.threads);
  }
  return 0;
}

}  // namespace

Command add_quantize_command(CLI::App& root) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* c = root.add_subcommand(
      "quantize", "Quantize a model to int8 (ONNX Runtime's quantize_dynamic / quantize_static)");
  c->add_option("input", args->input, "Input .onnx (float)")->required();
  c->add_option("output", args->output, "Output .onnx (never the input)")->required();
  c->add_option("--mode", args->mode,
                "dynamic (weights ahead, activations at run time) or "
                "static (calibrated activations)")
      ->check(CLI::IsMember({"dynamic", "static"}))
      ->capture_default_str();
  c->add_option("--format", args->format, "Static mode's form: qdq or qoperator")
      ->check(CLI::IsMember({"qdq", "qoperator"}))
      ->capture_default_str();
  c->add_flag("--per-channel", args->per_channel,
              "A scale per output channel of each weight (default in dynamic mode)");
  c->add_flag("--no-per-channel", args->no_per_channel, "One scale per weight");
  c->add_flag("--reduce-range", args->reduce_range,
              "7-bit weights (for CPUs without VNNI, whose u8s8 products saturate)");
  c->add_option("--weight-type", args->weight_type, "int8 or uint8")
      ->check(CLI::IsMember({"int8", "uint8"}))
      ->capture_default_str();
  c->add_option("--activation-type", args->activation_type, "uint8 or int8 (static mode)")
      ->check(CLI::IsMember({"uint8", "int8"}))
      ->capture_default_str();
  c->add_option("--op-types", args->op_types,
                "Op types to quantize (default: MatMul Gemm Gather "
                "dynamic, Conv on request; Conv, MatMul, Gemm and "
                "int8-friendly ops static)")
      ->expected(1, -1);
  c->add_option("--nodes-to-exclude", args->nodes_to_exclude, "Node names left float")
      ->expected(1, -1);
  c->add_option("--nodes-to-quantize", args->nodes_to_quantize,
                "Only these nodes (by name) are quantized")
      ->expected(1, -1);
  c->add_option("--calibration-data", args->calibration_data,
                "Folder of test_data_set_N folders, sample folders of NAME.npy, or NAME.npy "
                "files (stacked samples along a leading axis); default: generated inputs");
  c->add_option("--calibration-method", args->calibration_method, "minmax, entropy or percentile")
      ->check(CLI::IsMember({"minmax", "entropy", "percentile"}))
      ->capture_default_str();
  c->add_option("--calibration-samples", args->calibration_samples,
                "Samples calibration runs at most")
      ->capture_default_str();
  c->add_option("--calibration-kernels", args->calibration_kernels,
                "Kernels of the calibration runs: optimized (fastest) or reference (no repacked "
                "weights: less memory)")
      ->check(CLI::IsMember({"optimized", "reference"}))
      ->capture_default_str();
  c->add_option("--dim", args->dims, "NAME=VALUE for a symbolic dim of generated inputs");
  c->add_option("--seed", args->seed, "Seed of generated calibration inputs")
      ->capture_default_str();
  c->add_flag("--symmetric-activations", args->symmetric_activations,
              "Activation ranges symmetric around 0");
  c->add_flag("--symmetric-weights", args->symmetric_weights,
              "Symmetric weights (default for int8 weights)");
  c->add_flag("--asymmetric-weights", args->asymmetric_weights,
              "Asymmetric weights (default for uint8 weights)");
  c->add_flag("--save-as-external-data", args->save_as_external_data, "Write weights to OUT.data");
  c->add_flag("--skip-simplify", args->skip_simplify,
              "Do not simplify first (shape inference, folding, BatchNorm fusion)");
  c->add_flag("--json", args->json, "Print a JSON report");
  c->add_flag("--compare", args->compare,
              "Then run IN and OUT on the same inputs: errors, cosine, top-1, size, latency");
  c->add_option("--report", args->report,
                "Write an HTML page: what was quantized and, with --compare, error histograms "
                "per output, sizes and latencies");
  add_compare_flags(c, args->compare_args, "compare-");
  return {c, [args] { return run_quantize(*args); }};
}

Command add_compare_command(CLI::App& root) {
  struct Args {
    std::string reference;
    std::string candidate;
    CompareArgs compare;
    bool json = false;
    std::string report;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = root.add_subcommand(
      "compare",
      "Run two models (fp32 and int8 twins) on the same inputs and compare outputs, "
      "size and latency");
  c->add_option("reference", args->reference, "The reference model (fp32)")->required();
  c->add_option("candidate", args->candidate, "The model to compare (int8)")->required();
  add_compare_flags(c, args->compare, "");
  c->add_option("--data", args->compare.data,
                "Input samples (the layouts --calibration-data takes); default: generated");
  c->add_option("--dim", args->compare.dims, "NAME=VALUE for a symbolic dim of generated inputs");
  c->add_option("--seed", args->compare.seed, "Seed of generated inputs")->capture_default_str();
  c->add_flag("--json", args->json, "Print JSON");
  c->add_option("--report", args->report,
                "Write an HTML page: error histograms per output, sizes and latencies");
  return {c, [args] {
            check_report_path(args->report, {args->reference, args->candidate});
            std::shared_ptr<SampleFolder> folder;
            auto options = compare_options(args->compare, args->reference, folder);
            auto result = quant::compare_models(args->reference, args->candidate, options);
            if (args->json) {
              std::cout << comparison_json(result, args->reference, args->candidate).dump(2)
                        << "\n";
            } else {
              print_comparison(result, args->reference, args->candidate, args->compare.threads);
            }
            if (!args->report.empty()) {
              report::QuantizePageInput page;
              page.reference_path = args->reference;
              page.candidate_path = args->candidate;
              page.reference_bytes = files_size(args->reference);
              page.candidate_bytes = files_size(args->candidate);
              page.threads = args->compare.threads;
              page.comparison = &result;
              write_quantize_report(args->report, page);
            }
            return 0;
          }};
}

}  // namespace onnxkit::cli
