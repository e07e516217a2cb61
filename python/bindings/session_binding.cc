// onnxkit._onnxkit.Session: a compiled model for onnxkit.InferenceSession (onnxkit/session.py).
// run() converts the feeds (numpy views where possible), releases the GIL for the run
// itself, and hands the outputs' memory to numpy.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <onnxkit/onnxkit.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "numpy_tensor.h"

namespace onnxkit::python {
namespace {

namespace fs = std::filesystem;

struct SessionConfig {
  std::string level = "all";
  int intra_op_threads = 0;
  int inter_op_threads = 0;
  bool parallel_execution = false;
  bool memory_planning = true;
  std::string optimized_model_path;
  std::vector<std::string> custom_op_libraries;
};

// A graph input or output as Python sees it: (name, is_tensor, element type, dims, type text);
// dims are ints, symbol names or None (unknown), and None as a whole when the rank is unknown.
py::tuple describe(const ValueInfo& info) {
  py::object dims = py::none();
  if (info.shape) {
    py::list list;
    for (const Dim& dim : *info.shape) {
      if (dim.is_known()) {
        list.append(dim.value);
      } else if (dim.is_symbolic()) {
        list.append(dim.param);
      } else {
        list.append(py::none());
      }
    }
    dims = std::move(list);
  }
  return py::make_tuple(info.name, info.is_tensor, std::string(dtype_name(info.dtype)), dims,
                        info.type);
}

class PySession {
 public:
  PySession(const py::object& source, const SessionConfig& config) {
    SessionOptions options;
    auto level = parse_optimization_level(config.level);
    if (!level) throw Error("unknown optimization level '" + config.level + "'");
    options.level = *level;
    options.intra_op_threads = config.intra_op_threads;
    options.inter_op_threads = config.inter_op_threads;
    options.parallel_execution = config.parallel_execution;
    options.memory_planning = config.memory_planning;
    options.custom_op_libraries = config.custom_op_libraries;
    Result<std::unique_ptr<Session>> created = Status::error("no model");
    if (py::isinstance<py::bytes>(source)) {
      std::string bytes = source.cast<std::string>();
      py::gil_scoped_release release;
      auto model = parse_model(bytes);
      created = model ? Session::create(std::move(model).value(), options)
                      : Result<std::unique_ptr<Session>>(Status::error(model.error()));
    } else {
      path_ = source.cast<std::string>();
      py::gil_scoped_release release;
      created = Session::load(path_, options);
    }
    if (!created) throw Error(created.error());
    session_ = std::move(created).value();
    inputs_ = session_->inputs();
    outputs_ = session_->outputs();
    for (size_t i = 0; i < inputs_.size(); ++i) {
      sequence_inputs_[inputs_[i].name] = inputs_[i].type.rfind("seq(", 0) == 0;
    }
    for (size_t i = 0; i < outputs_.size(); ++i) output_index_[outputs_[i].name] = i;
    if (!config.optimized_model_path.empty()) save_optimized(config.optimized_model_path);
  }

  py::list inputs() const {
    py::list list;
    for (const ValueInfo& info : inputs_) list.append(describe(info));
    return list;
  }
  py::list outputs() const {
    py::list list;
    for (const ValueInfo& info : outputs_) list.append(describe(info));
    return list;
  }

  // `bound`: output name -> (ONNX element type, shape, address) of caller memory to write.
  py::list run(const py::object& output_names, const py::dict& feeds, const py::dict& bound) const {
    std::vector<size_t> wanted = requested_outputs(output_names);
    std::vector<py::object> keep_alive;
    NamedValues inputs = convert_feeds(feeds, keep_alive);
    RunOptions run_options;
    for (const auto& [key, spec] : bound) {
      auto [type, shape, address] = spec.cast<std::tuple<int, Shape, uintptr_t>>();
      run_options.bound_outputs.emplace_back(
          key.cast<std::string>(),
          Tensor::external(static_cast<DType>(type), shape, reinterpret_cast<void*>(address)));
    }
    Result<NamedValues> result = Status::error("not run");
    {
      py::gil_scoped_release release;
      result = session_->run(inputs, run_options);
    }
    if (!result) throw Error(result.error());
    NamedValues& values = result.value();
    py::list outputs;
    for (size_t index : wanted) outputs.append(python_from_value(std::move(values[index].second)));
    return outputs;
  }

  // Seconds per Session::run call over `iterations` calls on feeds converted once: the C++
  // API's own cost, which bench/python_overhead.py sets beside InferenceSession.run.
  double time_cpp_runs(const py::dict& feeds, int iterations) const {
    std::vector<py::object> keep_alive;
    NamedValues inputs = convert_feeds(feeds, keep_alive);
    py::gil_scoped_release release;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      auto result = session_->run(inputs);
      if (!result) throw Error(result.error());
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
           std::max(iterations, 1);
  }

 private:
  std::vector<size_t> requested_outputs(const py::object& output_names) const {
    std::vector<size_t> wanted;
    if (!output_names.is_none()) {
      for (const py::handle name : output_names) {
        const std::string text = py::str(name);
        auto it = output_index_.find(text);
        if (it == output_index_.end()) {
          std::string known;
          for (const ValueInfo& info : outputs_)
            known += (known.empty() ? "'" : ", '") + info.name + "'";
          throw Error("output '" + text + "' is not an output of the model (outputs: " + known +
                      ")");
        }
        wanted.push_back(it->second);
      }
    }
    if (wanted.empty()) {
      for (size_t i = 0; i < outputs_.size(); ++i) wanted.push_back(i);
    }
    return wanted;
  }

  NamedValues convert_feeds(const py::dict& feeds, std::vector<py::object>& keep_alive) const {
    NamedValues inputs;
    inputs.reserve(feeds.size());
    for (const auto& [key, object] : feeds) {
      if (!py::isinstance<py::str>(key)) {
        throw py::type_error("input names must be str, got " +
                             std::string(py::str(py::type::handle_of(key).attr("__name__"))));
      }
      std::string name = key.cast<std::string>();
      auto it = sequence_inputs_.find(name);
      FedInput fed = tensor_from_python(name, object, it != sequence_inputs_.end() && it->second);
      for (auto& owner : fed.keep_alive) keep_alive.push_back(std::move(owner));
      inputs.emplace_back(std::move(name), std::move(fed.value));
    }
    return inputs;
  }

  void save_optimized(const std::string& path) const {
    std::error_code error;
    if (!path_.empty() && fs::exists(path, error) && fs::equivalent(path, path_, error)) {
      throw Error("optimized_model_filepath " + path +
                  " is the input model: refusing to write over it");
    }
    Status saved = save_model(session_->model(), path);
    if (!saved.ok()) throw Error(saved.message());
  }

  std::string path_;
  std::unique_ptr<Session> session_;
  std::vector<ValueInfo> inputs_;
  std::vector<ValueInfo> outputs_;
  std::unordered_map<std::string, bool> sequence_inputs_;
  std::unordered_map<std::string, size_t> output_index_;
};

}  // namespace

void bind_session(py::module_& module) {
  py::class_<SessionConfig>(module, "SessionConfig")
      .def(py::init<>())
      .def_readwrite("level", &SessionConfig::level)
      .def_readwrite("intra_op_threads", &SessionConfig::intra_op_threads)
      .def_readwrite("inter_op_threads", &SessionConfig::inter_op_threads)
      .def_readwrite("parallel_execution", &SessionConfig::parallel_execution)
      .def_readwrite("memory_planning", &SessionConfig::memory_planning)
      .def_readwrite("optimized_model_path", &SessionConfig::optimized_model_path)
      .def_readwrite("custom_op_libraries", &SessionConfig::custom_op_libraries);
  py::class_<PySession>(module, "Session")
      .def(py::init<const py::object&, const SessionConfig&>(), py::arg("source"),
           py::arg("config"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("run", &PySession::run, py::arg("output_names"), py::arg("feeds"),
           py::arg("bound") = py::dict())
      .def("time_cpp_runs", &PySession::time_cpp_runs, py::arg("feeds"), py::arg("iterations"));
}

}  // namespace onnxkit::python
