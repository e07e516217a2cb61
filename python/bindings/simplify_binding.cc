// onnxkit._onnxkit.simplify: onnxkit::simplify for onnxkit.simplify (onnxkit/simplify.py),
// which maps onnxsim's arguments onto the option dict read here.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <onnxkit/onnxkit.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "numpy_tensor.h"

namespace onnxkit::python {
namespace {

template <typename T>
T option(const py::dict& options, const char* key, T fallback) {
  return options.contains(key) ? options[key].cast<T>() : fallback;
}

SimplifyOptions simplify_options(const py::dict& options, std::vector<py::object>& keep_alive) {
  SimplifyOptions result;
  result.check_n = option(options, "check_n", result.check_n);
  result.skip_all_optimization = option(options, "skip_all_optimization", false);
  for (const auto& name : option(options, "skip_passes", std::vector<std::string>{})) {
    result.skip_passes.insert(name);
  }
  result.skip_fuse_bn = option(options, "skip_fuse_bn", false);
  result.skip_constant_folding = option(options, "skip_constant_folding", false);
  result.skip_shape_inference = option(options, "skip_shape_inference", false);
  result.tensor_size_threshold =
      option(options, "tensor_size_threshold", result.tensor_size_threshold);
  result.unused_outputs = option(options, "unused_outputs", std::vector<std::string>{});
  result.mutable_initializers = option(options, "mutable_initializers", false);
  result.include_subgraphs = option(options, "include_subgraphs", true);
  result.target_opset = option(options, "target_opset", result.target_opset);
  result.check_rtol = option(options, "check_rtol", result.check_rtol);
  result.check_atol = option(options, "check_atol", result.check_atol);
  result.seed = option(options, "seed", result.seed);
  result.custom_op_libraries = option(options, "custom_op_libraries", std::vector<std::string>{});
  if (options.contains("input_shapes")) {
    // name -> dims: ints, symbol names, or None for a dim left unknown.
    for (const auto& [name, dims] : options["input_shapes"].cast<py::dict>()) {
      std::vector<Dim>& shape = result.input_shapes[name.cast<std::string>()];
      for (const py::handle dim : dims) {
        if (dim.is_none()) {
          shape.push_back(Dim{});
        } else if (py::isinstance<py::str>(dim)) {
          shape.push_back(Dim::symbol(dim.cast<std::string>()));
        } else {
          shape.push_back(Dim::known(dim.cast<int64_t>()));
        }
      }
    }
  }
  if (options.contains("test_input_shapes")) {
    result.test_input_shapes =
        options["test_input_shapes"].cast<std::map<std::string, std::vector<int64_t>>>();
  }
  if (options.contains("check_inputs")) {
    for (const auto& [key, value] : options["check_inputs"].cast<py::dict>()) {
      const std::string name = key.cast<std::string>();
      FedInput fed = tensor_from_python(name, value, false);
      if (!fed.value.is_tensor()) throw Error("input_data '" + name + "' is not an array");
      result.check_inputs[name] = fed.value.tensor();
      for (auto& owner : fed.keep_alive) keep_alive.push_back(std::move(owner));
    }
  }
  return result;
}

// Simplifies the model at `source` (a path) or in it (serialized bytes). Returns
// (serialized result or None when written to output_path, check_ok, check message, warnings).
py::tuple simplify_model(const py::object& source, const std::string& output_path,
                         const py::dict& options) {
  std::vector<py::object> keep_alive;
  SimplifyOptions simplify_opts = simplify_options(options, keep_alive);
  const bool from_path = !py::isinstance<py::bytes>(source);
  std::string bytes = from_path ? std::string() : source.cast<std::string>();
  std::string path = from_path ? source.cast<std::string>() : std::string();

  std::string serialized;
  SimplifyReport report;
  {
    py::gil_scoped_release release;
    auto loaded = from_path ? load_model(path) : parse_model(bytes);
    if (!loaded) throw Error(loaded.error());
    Model model = std::move(loaded).value();
    bytes.clear();
    if (from_path) simplify_opts.reload = [path] { return load_model(path); };
    auto simplified = simplify(model, simplify_opts);
    if (!simplified) throw Error(simplified.error());
    report = std::move(simplified).value();
    if (!output_path.empty()) {
      Status saved = save_model(model, output_path);
      if (!saved.ok()) throw Error(saved.message());
    } else {
      auto written = serialize_model(model);
      if (!written) throw Error(written.error());
      serialized = std::move(written).value();
    }
  }
  py::list notes;
  for (const auto& warning : report.warnings) notes.append(warning);
  if (!report.check_skipped.empty()) notes.append(report.check_skipped);
  py::object model_bytes = output_path.empty() ? py::object(py::bytes(serialized)) : py::none();
  return py::make_tuple(model_bytes, report.check_ok, report.check_message, notes);
}

}  // namespace

void bind_simplify(py::module_& module) {
  module.def("simplify", &simplify_model, py::arg("source"), py::arg("output_path"),
             py::arg("options"));
}

}  // namespace onnxkit::python
