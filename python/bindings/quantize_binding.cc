// onnxkit._onnxkit.quantize: onnxkit::quantize for onnxkit.quantization (quantize_dynamic /
// quantize_static), which maps onnxruntime.quantization's arguments onto the option dict read
// here. The quantizer runs without the GIL; a Python calibration reader is called back with it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <onnxkit/onnxkit.h>
#include <onnxkit/quantize.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "numpy_tensor.h"

namespace onnxkit::python {
namespace {

namespace fs = std::filesystem;

template <typename T>
T option(const py::dict& options, const char* key, T fallback) {
  return options.contains(key) && !options[key].is_none() ? options[key].cast<T>() : fallback;
}

DType quant_type(const std::string& name, const char* argument) {
  if (name == "int8") return DType::kInt8;
  if (name == "uint8") return DType::kUInt8;
  throw Error(std::string(argument) + ": onnxkit quantizes to int8 or uint8, not " + name);
}

QuantizeOptions quantize_options(const py::dict& options) {
  QuantizeOptions result;
  const std::string mode = option<std::string>(options, "mode", "dynamic");
  result.mode = mode == "static" ? QuantizeMode::kStatic : QuantizeMode::kDynamic;
  const std::string format = option<std::string>(options, "format", "qdq");
  result.format = format == "qoperator" ? QuantFormat::kQOperator : QuantFormat::kQdq;
  if (options.contains("per_channel")) result.per_channel = options["per_channel"].cast<bool>();
  result.reduce_range = option(options, "reduce_range", false);
  result.weight_type =
      quant_type(option<std::string>(options, "weight_type", "int8"), "weight_type");
  result.activation_type =
      quant_type(option<std::string>(options, "activation_type", "uint8"), "activation_type");
  result.op_types = option(options, "op_types", std::vector<std::string>{});
  for (const auto& name : option(options, "nodes_to_quantize", std::vector<std::string>{})) {
    result.nodes_to_quantize.insert(name);
  }
  for (const auto& name : option(options, "nodes_to_exclude", std::vector<std::string>{})) {
    result.nodes_to_exclude.insert(name);
  }
  const std::string method = option<std::string>(options, "calibration_method", "minmax");
  result.calibration_method = method == "entropy"      ? CalibrationMethod::kEntropy
                              : method == "percentile" ? CalibrationMethod::kPercentile
                                                       : CalibrationMethod::kMinMax;
  result.calibration_samples = option(options, "calibration_samples", result.calibration_samples);
  result.symmetric_activations = option(options, "symmetric_activations", false);
  if (options.contains("symmetric_weights") && !options["symmetric_weights"].is_none()) {
    result.symmetric_weights = options["symmetric_weights"].cast<bool>();
  }
  result.histogram_bins = option(options, "histogram_bins", result.histogram_bins);
  result.entropy_quantized_bins =
      option(options, "entropy_quantized_bins", result.entropy_quantized_bins);
  result.percentile = option(options, "percentile", result.percentile);
  result.simplify_first = option(options, "simplify_first", result.simplify_first);
  result.seed = option(options, "seed", result.seed);
  result.calibration_threads = option(options, "calibration_threads", 0);
  return result;
}

// A Python calibration reader behind a CalibrationSource. get_next() is called with the GIL
// held; the arrays of the sample being calibrated on stay referenced until the next call (the
// quantizer holds one sample at a time), and a Python exception raised by the reader is kept
// to be raised again, as it was, once the quantizer has stopped.
struct ReaderState {
  py::object reader;
  std::vector<py::object> keep_alive;  // the current sample's arrays
  std::optional<py::error_already_set> raised;

  std::optional<CalibrationSample> next(size_t index) {
    py::gil_scoped_acquire gil;
    keep_alive.clear();
    CalibrationSample sample;
    sample.label = "#" + std::to_string(index) + " of calibration_data_reader";
    try {
      py::object feeds = reader.attr("get_next")();
      if (feeds.is_none()) return std::nullopt;
      if (!py::isinstance<py::dict>(feeds)) {
        throw Error("calibration_data_reader.get_next() returned " +
                    std::string(py::str(py::type::handle_of(feeds).attr("__name__"))) +
                    " for sample " + std::to_string(index) +
                    ": expected a dict {input name: numpy array} or None");
      }
      for (const auto& [key, value] : feeds.cast<py::dict>()) {
        const std::string name = py::str(key);
        FedInput fed = tensor_from_python(name, value, false);
        for (auto& owner : fed.keep_alive) keep_alive.push_back(std::move(owner));
        sample.inputs.emplace_back(name, std::move(fed.value));
      }
    } catch (py::error_already_set& error) {
      raised = std::move(error);
      throw Error("calibration_data_reader.get_next() raised an exception");
    }
    return sample;
  }
};

void check_output_path(const std::string& input, const std::string& output) {
  std::error_code error;
  if (!input.empty() &&
      (fs::weakly_canonical(input, error) == fs::weakly_canonical(output, error) ||
       (fs::exists(output, error) && fs::equivalent(input, output, error)))) {
    throw Error("model_output " + output + " is the input model: refusing to write over it");
  }
  const fs::path folder = fs::path(output).parent_path();
  if (!folder.empty() && !fs::is_directory(folder, error)) {
    throw Error("model_output " + output + ": folder " + folder.string() + " does not exist");
  }
}

// Quantizes the model at `source` (a path) or in it (serialized bytes), writes it to
// `output_path`, and returns what was done: {"quantized": {op: count}, "nodes": [(node, op,
// how)], "calibration_samples": n, "warnings": [...]}.
py::dict quantize_model(const py::object& source, const std::string& output_path,
                        const py::dict& options, const py::object& reader, bool external_data) {
  QuantizeOptions quantize_opts = quantize_options(options);
  auto state = std::make_shared<ReaderState>();
  if (!reader.is_none()) {
    state->reader = reader;
    // The reader decides how many samples there are (get_next() returning None).
    quantize_opts.calibration_samples = std::numeric_limits<size_t>::max();
    quantize_opts.calibration_source = [state](size_t index) { return state->next(index); };
  }
  const bool from_path = !py::isinstance<py::bytes>(source);
  std::string bytes = from_path ? std::string() : source.cast<std::string>();
  const std::string path = from_path ? source.cast<std::string>() : std::string();
  check_output_path(path, output_path);

  QuantizeReport report;
  Status failed;
  {
    py::gil_scoped_release release;
    auto loaded = from_path ? load_model(path) : parse_model(bytes);
    bytes.clear();
    if (!loaded) {
      failed = Status::error(loaded.error());
    } else {
      Model model = std::move(loaded).value();
      auto quantized = quantize(model, quantize_opts);
      if (!quantized) {
        failed = Status::error(quantized.error());
      } else {
        report = std::move(quantized).value();
        SaveOptions save;
        if (external_data) save.external_data = ExternalDataMode::kAlways;
        failed = save_model(model, output_path, save);
      }
    }
  }
  state->keep_alive.clear();
  quantize_opts.calibration_source = nullptr;
  if (state->raised) throw std::move(*state->raised);
  if (!failed.ok()) throw Error(failed.message());

  py::dict result;
  py::dict counts;
  for (const auto& [op, count] : report.quantized) counts[py::str(op)] = count;
  py::list nodes;
  for (const QuantizedNode& node : report.nodes) {
    nodes.append(py::make_tuple(node.node, node.op_type, node.how));
  }
  result["quantized"] = counts;
  result["nodes"] = nodes;
  result["calibration_samples"] = report.calibration_samples;
  result["warnings"] = py::cast(report.warnings);
  return result;
}

}  // namespace

void bind_quantize(py::module_& module) {
  module.def("quantize", &quantize_model, py::arg("source"), py::arg("output_path"),
             py::arg("options"), py::arg("reader"), py::arg("external_data"));
}

}  // namespace onnxkit::python
