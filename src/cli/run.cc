// `onnxkit run MODEL [--input NAME=FILE ...] [--random] [--seed N] [--dim NAME=V ...]
//  [--output-dir DIR]`: runs a model once and shows (and optionally saves) its outputs.
#include <filesystem>
#include <iostream>
#include <random>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "cli/session_flags.h"
#include "core/low_precision.h"
#include "core/resource_limits.h"
#include "ir/npy.h"
#include "onnx/tensor_io.h"
#include "onnxkit/session.h"
#include "ops/op_utils.h"
#include "runtime/random_inputs.h"

namespace onnxkit::cli {
namespace {

namespace fs = std::filesystem;

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  bool random = false;
  uint64_t seed = 0;
  std::string output_dir;
  SessionFlags session;
  bool quiet = false;
};

std::string preview(const Tensor& tensor, size_t count = 8) {
  std::string text = "[";
  const int64_t n = std::min<int64_t>(tensor.numel(), static_cast<int64_t>(count));
  for (int64_t i = 0; i < n; ++i) {
    if (i) text += ", ";
    if (tensor.dtype() == DType::kString) {
      text += "\"" + tensor.strings()[i] + "\"";
    } else if (tensor.dtype() == DType::kBool) {
      text += tensor.data<bool>()[i] ? "true" : "false";
    } else if (tensor.dtype() == DType::kComplex64 || tensor.dtype() == DType::kComplex128) {
      text += "complex";
    } else if (dtype_is_small_integer(tensor.dtype())) {
      text += fmt::format("{}", small_int_value(tensor.dtype(), tensor.data<uint8_t>()[i]));
    } else if (dtype_is_small_float(tensor.dtype())) {
      text +=
          fmt::format("{:.6g}", small_float_to_float(tensor.dtype(), tensor.data<uint8_t>()[i]));
    } else {
      dispatch_numeric(tensor.dtype(), "preview", [&](auto tag) {
        using T = typename decltype(tag)::type;
        text += fmt::format("{:.6g}", convert_element<double>(tensor.data<T>()[i]));
      });
    }
  }
  if (tensor.numel() > n) text += ", ...";
  return text + "]";
}

std::string file_stem(std::string name) {
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  }
  return name;
}

int run_model(const RunArgs& args) {
  const std::map<std::string, int64_t> dims = parse_dims(args.dims);
  Progress progress("run", !args.quiet);
  progress.phase("loading " + fs::path(args.model).filename().string());
  SessionOptions options = to_session_options(args.session);
  options.one_shot = true;  // one run
  auto session = Session::load(args.model, options);
  progress.clear();
  if (!session) fail("{}", session.error());
  const Session& s = *session.value();
  std::map<std::string, RuntimeValue> files = read_input_files(s.model().graph(), args.inputs);

  std::mt19937_64 rng(args.seed);
  NamedValues feeds;
  std::vector<std::string> missing;
  for (const Value* input : s.model().graph().inputs()) {
    auto file = files.find(input->name());
    if (file != files.end()) {
      feeds.emplace_back(input->name(), std::move(file->second));
    } else if (!input->has_initializer()) {
      if (!args.random) {
        missing.push_back(input->name());
        continue;
      }
      if (input->type().kind != ValueType::Kind::kTensor) {
        fail("input '{}' is a {}: give it as a file", input->name(),
             value_type_to_string(input->type()));
      }
      // Generated data is held to the run's bounds too: a declared [2^40, 2^40] input
      // fails here instead of filling the machine's memory.
      auto limits =
          std::make_shared<RunLimits>(s.options().max_tensor_bytes, s.options().max_run_bytes);
      RunLimitsScope limits_scope(limits.get());
      try {
        feeds.emplace_back(input->name(), random_tensor(input->type().elem_type,
                                                        concrete_shape(*input, dims), rng));
      } catch (const Error& e) {
        fail("input '{}': {}", input->name(), e.what());
      }
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& name : missing) list += (list.empty() ? "" : ", ") + name;
    fail("inputs without data: {} (give --input NAME=FILE, or --random)", list);
  }
  const SessionStats& stats = s.stats();
  std::cout << fmt::format("session: level {}, {} -> {} nodes, created in {:.1f} ms\n",
                           optimization_level_name(s.options().level), stats.nodes_loaded,
                           stats.nodes_optimized,
                           (stats.optimize_seconds + stats.compile_seconds) * 1e3);
  for (const auto& [name, value] : feeds) {
    std::cout << fmt::format("input  {}: {}\n", name, value.describe());
  }
  auto outputs = s.run(feeds);
  if (!outputs) fail("{}", outputs.error());
  if (!args.output_dir.empty()) fs::create_directories(args.output_dir);
  for (const auto& [name, value] : outputs.value()) {
    std::string line = fmt::format("output {}: {}", name, value.describe());
    if (value.is_tensor()) line += "  " + preview(value.tensor());
    std::cout << line << "\n";
    if (args.output_dir.empty()) continue;
    // NumPy has no bfloat16 or low-precision types: those are written as TensorProtos.
    const DType dtype = value.is_tensor() ? value.tensor().dtype() : DType::kUndefined;
    bool as_npy = value.is_tensor() && dtype != DType::kString && dtype != DType::kBFloat16 &&
                  !dtype_is_small_float(dtype) && !dtype_is_small_integer(dtype);
    fs::path path = fs::path(args.output_dir) / (file_stem(name) + (as_npy ? ".npy" : ".pb"));
    Status written = as_npy ? write_npy(value.tensor(), path) : write_value_pb(value, name, path);
    if (!written.ok()) fail("{}", written.message());
    std::cout << "       written to " << path.string() << "\n";
  }
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& root) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* command = root.add_subcommand("run", "Run a model once and show its outputs");
  command->add_option("model", args->model, "The .onnx file")->required();
  command->add_option("--input", args->inputs, "NAME=FILE (.pb TensorProto or .npy); repeatable");
  command->add_flag("--random", args->random, "Random data for inputs not given as files");
  command->add_option("--seed", args->seed, "Seed for --random")->capture_default_str();
  command->add_option("--dim", args->dims, "NAME=VALUE for a symbolic dimension; repeatable");
  command->add_option("--output-dir", args->output_dir, "Write each output as NAME.npy (or .pb)");
  command->add_flag("--quiet", args->quiet, "No progress line on the terminal");
  add_session_flags(command, args->session, "all");
  add_custom_op_lib_flag(command, args->session.custom_op_libraries);
  return {command, [args] { return run_model(*args); }};
}

}  // namespace onnxkit::cli
