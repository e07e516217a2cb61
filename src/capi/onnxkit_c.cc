// The C API (include/onnxkit/onnxkit_c.h) over the C++ one: handles own the C++ objects,
// every entry point catches what the C++ side throws and hands it back as a status.
#include "onnxkit/onnxkit_c.h"

#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "ir/graph_clone.h"
#include "onnxkit/model_io.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"

struct OnnxkitStatus {
  OnnxkitErrorCode code;
  std::string message;
};

struct OnnxkitModel {
  onnxkit::Model model;
};

struct OnnxkitSessionOptions {
  onnxkit::SessionOptions options;
};

// A declared input or output with the C views of its strings and dims.
struct DescribedValue {
  onnxkit::ValueInfo info;
  std::vector<OnnxkitDim> dims;
};

struct OnnxkitSession {
  std::unique_ptr<onnxkit::Session> session;
  std::vector<DescribedValue> inputs;
  std::vector<DescribedValue> outputs;
};

struct OnnxkitValue {
  onnxkit::Tensor tensor;
};

struct OnnxkitSimplifyOptions {
  onnxkit::SimplifyOptions options;
};

namespace onnxkit {
namespace {

// Thrown inside this file for a caller's mistake; everything else is ONNXKIT_ERROR_FAIL.
struct InvalidArgument : Error {
  using Error::Error;
};

// Runs `body`; anything it throws becomes a status (NULL: it succeeded).
template <typename Body>
OnnxkitStatus* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const InvalidArgument& e) {
    return new (std::nothrow) OnnxkitStatus{ONNXKIT_ERROR_INVALID_ARGUMENT, e.what()};
  } catch (const std::bad_alloc&) {
    return new (std::nothrow) OnnxkitStatus{ONNXKIT_ERROR_RESOURCE_LIMIT, "out of memory"};
  } catch (const Error& e) {
    return new (std::nothrow) OnnxkitStatus{
        e.kind() == ErrorKind::kResourceLimit ? ONNXKIT_ERROR_RESOURCE_LIMIT : ONNXKIT_ERROR_FAIL,
        e.what()};
  } catch (const std::exception& e) {
    return new (std::nothrow) OnnxkitStatus{ONNXKIT_ERROR_FAIL, e.what()};
  } catch (...) {
    return new (std::nothrow) OnnxkitStatus{ONNXKIT_ERROR_FAIL, "unknown error"};
  }
}

template <typename... Args>
[[noreturn]] void invalid(fmt::format_string<Args...> format, Args&&... args) {
  throw InvalidArgument(fmt::format(format, std::forward<Args>(args)...));
}

template <typename T>
T& require(T* handle, const char* what) {
  if (!handle) invalid("{} is NULL", what);
  return *handle;
}

// A C string argument that must not be NULL.
const char* require_text(const char* text, const char* what) {
  if (!text) invalid("{} is NULL", what);
  return text;
}

template <typename T>
T value_or_throw(Result<T> result) {
  if (!result) throw Error(result.error(), result.error_kind());
  return std::move(result).value();
}

DescribedValue describe(ValueInfo info) {
  DescribedValue described{std::move(info), {}};
  if (described.info.shape) {
    for (const Dim& dim : *described.info.shape) {
      described.dims.push_back(OnnxkitDim{dim.is_known() ? dim.value : -1,
                                          dim.is_symbolic() ? dim.param.c_str() : nullptr});
    }
  }
  return described;
}

void fill_info(const DescribedValue& described, OnnxkitValueInfo* info) {
  info->name = described.info.name.c_str();
  info->dtype = static_cast<int32_t>(described.info.dtype);
  info->is_tensor = described.info.is_tensor ? 1 : 0;
  info->rank = described.info.shape ? static_cast<int64_t>(described.dims.size()) : -1;
  info->dims = described.dims.data();
  info->type = described.info.type.c_str();
}

OnnxkitSession* make_session(Model model, const OnnxkitSessionOptions* options) {
  SessionOptions session_options = options ? options->options : SessionOptions{};
  auto session = std::make_unique<OnnxkitSession>();
  session->session = value_or_throw(Session::create(std::move(model), session_options));
  for (ValueInfo& info : session->session->inputs()) session->inputs.push_back(describe(info));
  for (ValueInfo& info : session->session->outputs()) session->outputs.push_back(describe(info));
  return session.release();
}

// The shape of a caller's view; `what` names it in errors ("input 'x'").
Shape view_shape(const OnnxkitTensorView& view, const std::string& what) {
  if (!dtype_is_known(view.dtype) || view.dtype == ONNXKIT_DTYPE_STRING) {
    invalid("{}: dtype {} cannot be passed as a tensor view", what, view.dtype);
  }
  if (view.rank > 0 && !view.shape) invalid("{}: rank {} but shape is NULL", what, view.rank);
  Shape shape(view.shape, view.shape + view.rank);
  for (int64_t dim : shape) {
    if (dim < 0) invalid("{}: negative dim in shape {}", what, shape_to_string(shape));
  }
  if (!view.data && shape_numel(shape) > 0) invalid("{}: data is NULL", what);
  return shape;
}

}  // namespace
}  // namespace onnxkit

using namespace onnxkit;

extern "C" {

const char* onnxkit_version(void) {
  return ONNXKIT_VERSION_STRING;
}

const char* onnxkit_status_message(const OnnxkitStatus* status) {
  return status ? status->message.c_str() : "";
}

OnnxkitErrorCode onnxkit_status_code(const OnnxkitStatus* status) {
  return status ? status->code : ONNXKIT_ERROR_FAIL;
}

void onnxkit_status_free(OnnxkitStatus* status) {
  delete status;
}

OnnxkitStatus* onnxkit_model_load(const char* path, OnnxkitModel** model) {
  return guarded([&] {
    require_text(path, "path");
    require(model, "model");
    *model = new OnnxkitModel{value_or_throw(load_model(path))};
  });
}

OnnxkitStatus* onnxkit_model_load_from_memory(const void* data, size_t size, OnnxkitModel** model) {
  return guarded([&] {
    if (!data && size > 0) invalid("data is NULL");
    require(model, "model");
    std::string bytes(static_cast<const char*>(data), size);
    *model = new OnnxkitModel{value_or_throw(parse_model(bytes))};
  });
}

void onnxkit_model_free(OnnxkitModel* model) {
  delete model;
}

OnnxkitStatus* onnxkit_session_options_create(OnnxkitSessionOptions** options) {
  return guarded([&] { require(options, "options") = new OnnxkitSessionOptions{}; });
}

void onnxkit_session_options_free(OnnxkitSessionOptions* options) {
  delete options;
}

OnnxkitStatus* onnxkit_session_options_set_level(OnnxkitSessionOptions* options,
                                                 const char* level) {
  return guarded([&] {
    auto& target = require(options, "options");
    auto parsed = parse_optimization_level(require_text(level, "level"));
    if (!parsed) invalid("unknown level '{}' (none, basic, extended, layout or all)", level);
    target.options.level = *parsed;
  });
}

OnnxkitStatus* onnxkit_session_options_set_intra_op_threads(OnnxkitSessionOptions* options,
                                                            int threads) {
  return guarded([&] {
    auto& target = require(options, "options");
    if (threads < 0) invalid("intra-op threads must be >= 0, not {}", threads);
    target.options.intra_op_threads = threads;
  });
}

OnnxkitStatus* onnxkit_session_options_set_inter_op_threads(OnnxkitSessionOptions* options,
                                                            int threads) {
  return guarded([&] {
    auto& target = require(options, "options");
    if (threads < 0) invalid("inter-op threads must be >= 0, not {}", threads);
    target.options.parallel_execution = threads > 1;
    target.options.inter_op_threads = threads > 1 ? threads : 0;
  });
}

OnnxkitStatus* onnxkit_session_options_set_kernels(OnnxkitSessionOptions* options,
                                                   const char* kernels) {
  return guarded([&] {
    auto& target = require(options, "options");
    std::string_view name = require_text(kernels, "kernels");
    if (name == "optimized") {
      target.options.kernels = KernelTier::kOptimized;
    } else if (name == "reference") {
      target.options.kernels = KernelTier::kReference;
    } else {
      invalid("unknown kernels '{}' (optimized or reference)", name);
    }
  });
}

OnnxkitStatus* onnxkit_session_options_add_custom_op_library(OnnxkitSessionOptions* options,
                                                             const char* path) {
  return guarded([&] {
    require(options, "options")
        .options.custom_op_libraries.emplace_back(require_text(path, "path"));
  });
}

OnnxkitStatus* onnxkit_session_create(const OnnxkitModel* model,
                                      const OnnxkitSessionOptions* options,
                                      OnnxkitSession** session) {
  return guarded([&] {
    const auto& source = require(model, "model");
    require(session, "session");
    *session = make_session(clone_model(source.model), options);
  });
}

OnnxkitStatus* onnxkit_session_create_from_file(const char* path,
                                                const OnnxkitSessionOptions* options,
                                                OnnxkitSession** session) {
  return guarded([&] {
    require_text(path, "path");
    require(session, "session");
    Model model = value_or_throw(load_model(path));
    try {
      *session = make_session(std::move(model), options);
    } catch (const Error& e) {
      throw Error(std::string(path) + ": " + e.what());
    }
  });
}

void onnxkit_session_free(OnnxkitSession* session) {
  delete session;
}

OnnxkitStatus* onnxkit_session_input_count(const OnnxkitSession* session, size_t* count) {
  return guarded([&] { require(count, "count") = require(session, "session").inputs.size(); });
}

OnnxkitStatus* onnxkit_session_output_count(const OnnxkitSession* session, size_t* count) {
  return guarded([&] { require(count, "count") = require(session, "session").outputs.size(); });
}

OnnxkitStatus* onnxkit_session_input_info(const OnnxkitSession* session, size_t index,
                                          OnnxkitValueInfo* info) {
  return guarded([&] {
    const auto& inputs = require(session, "session").inputs;
    require(info, "info");
    if (index >= inputs.size()) invalid("input index {} of {}", index, inputs.size());
    fill_info(inputs[index], info);
  });
}

OnnxkitStatus* onnxkit_session_output_info(const OnnxkitSession* session, size_t index,
                                           OnnxkitValueInfo* info) {
  return guarded([&] {
    const auto& outputs = require(session, "session").outputs;
    require(info, "info");
    if (index >= outputs.size()) invalid("output index {} of {}", index, outputs.size());
    fill_info(outputs[index], info);
  });
}

OnnxkitStatus* onnxkit_session_run(const OnnxkitSession* session, const char* const* input_names,
                                   const OnnxkitTensorView* inputs, size_t input_count,
                                   const char* const* output_names, size_t output_count,
                                   const OnnxkitTensorView* bound_outputs,
                                   OnnxkitValue** allocated_outputs) {
  return guarded([&] {
    const OnnxkitSession& target = require(session, "session");
    if (input_count > 0 && (!input_names || !inputs)) invalid("input_names or inputs is NULL");
    NamedValues feeds;
    for (size_t i = 0; i < input_count; ++i) {
      if (!input_names[i]) invalid("input_names[{}] is NULL", i);
      std::string what = fmt::format("input '{}'", input_names[i]);
      Shape shape = view_shape(inputs[i], what);
      feeds.emplace_back(input_names[i],
                         Tensor::external(static_cast<DType>(inputs[i].dtype), std::move(shape),
                                          static_cast<const void*>(inputs[i].data)));
    }
    // The outputs asked for, by name, each checked against the session's.
    const std::vector<DescribedValue>& declared = target.outputs;
    std::vector<std::string> wanted;
    if (!output_names) {
      if (output_count != declared.size()) {
        invalid("output_names is NULL (every output) but output_count is {}, not the model's {}",
                output_count, declared.size());
      }
      for (const auto& output : declared) wanted.push_back(output.info.name);
    } else {
      for (size_t i = 0; i < output_count; ++i) {
        if (!output_names[i]) invalid("output_names[{}] is NULL", i);
        bool known = false;
        for (const auto& output : declared) known = known || output.info.name == output_names[i];
        if (!known) invalid("'{}' is not an output of the model", output_names[i]);
        wanted.emplace_back(output_names[i]);
      }
    }
    RunOptions run_options;
    bool allocates = false;
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (bound_outputs && bound_outputs[i].data) {
        std::string what = fmt::format("output '{}'", wanted[i]);
        Shape shape = view_shape(bound_outputs[i], what);
        run_options.bound_outputs.emplace_back(
            wanted[i], Tensor::external(static_cast<DType>(bound_outputs[i].dtype),
                                        std::move(shape), bound_outputs[i].data));
      } else {
        allocates = true;
      }
    }
    if (allocates && !allocated_outputs) {
      invalid("an output has no bound buffer and allocated_outputs is NULL");
    }
    NamedValues results = value_or_throw(target.session->run(feeds, run_options));
    std::vector<std::unique_ptr<OnnxkitValue>> values(wanted.size());
    for (size_t i = 0; i < wanted.size(); ++i) {
      if (bound_outputs && bound_outputs[i].data) continue;
      for (auto& [name, value] : results) {
        if (name != wanted[i]) continue;
        if (!value.is_tensor() || value.tensor().dtype() == DType::kString) {
          fail("output '{}' is not a numeric tensor: the C API cannot return it", name);
        }
        values[i] = std::make_unique<OnnxkitValue>(OnnxkitValue{value.tensor()});
      }
    }
    if (allocated_outputs) {
      for (size_t i = 0; i < wanted.size(); ++i) allocated_outputs[i] = values[i].release();
    }
  });
}

OnnxkitStatus* onnxkit_value_view(const OnnxkitValue* value, OnnxkitTensorView* view) {
  return guarded([&] {
    const Tensor& tensor = require(value, "value").tensor;
    require(view, "view");
    view->dtype = static_cast<int32_t>(tensor.dtype());
    view->rank = tensor.rank();
    view->shape = tensor.shape().data();
    // The caller reads it; onnxkit does not touch an output it handed over.
    view->data = const_cast<void*>(tensor.raw_data());
  });
}

void onnxkit_value_free(OnnxkitValue* value) {
  delete value;
}

OnnxkitStatus* onnxkit_simplify_options_create(OnnxkitSimplifyOptions** options) {
  return guarded([&] { require(options, "options") = new OnnxkitSimplifyOptions{}; });
}

void onnxkit_simplify_options_free(OnnxkitSimplifyOptions* options) {
  delete options;
}

OnnxkitStatus* onnxkit_simplify_options_set_check_n(OnnxkitSimplifyOptions* options, int n) {
  return guarded([&] {
    auto& target = require(options, "options");
    static_assert(ONNXKIT_CHECK_N_AUTO == SimplifyOptions::kCheckAuto);
    if (n < 0 && n != ONNXKIT_CHECK_N_AUTO) {
      invalid("check_n must be >= 0 or ONNXKIT_CHECK_N_AUTO, not {}", n);
    }
    target.options.check_n = n;
  });
}

OnnxkitStatus* onnxkit_simplify_options_set_skip_optimization(OnnxkitSimplifyOptions* options,
                                                              int skip) {
  return guarded([&] { require(options, "options").options.skip_all_optimization = skip != 0; });
}

OnnxkitStatus* onnxkit_simplify_options_set_input_shape(OnnxkitSimplifyOptions* options,
                                                        const char* name, const int64_t* dims,
                                                        size_t rank) {
  return guarded([&] {
    auto& target = require(options, "options");
    require_text(name, "name");
    if (rank > 0 && !dims) invalid("input shape of '{}': dims is NULL", name);
    std::vector<Dim> shape;
    for (size_t i = 0; i < rank; ++i) {
      if (dims[i] < 0) invalid("input shape of '{}': dim {} is {}", name, i, dims[i]);
      shape.push_back(Dim::known(dims[i]));
    }
    target.options.input_shapes[name] = std::move(shape);
  });
}

OnnxkitStatus* onnxkit_simplify_options_add_custom_op_library(OnnxkitSimplifyOptions* options,
                                                              const char* path) {
  return guarded([&] {
    require(options, "options")
        .options.custom_op_libraries.emplace_back(require_text(path, "path"));
  });
}

OnnxkitStatus* onnxkit_simplify_file(const char* input_path, const char* output_path,
                                     const OnnxkitSimplifyOptions* options, size_t* nodes_before,
                                     size_t* nodes_after) {
  OnnxkitStatus* check_failed = nullptr;
  OnnxkitStatus* status = guarded([&] {
    namespace fs = std::filesystem;
    require_text(input_path, "input_path");
    require_text(output_path, "output_path");
    std::error_code ec;
    if (fs::weakly_canonical(input_path, ec) == fs::weakly_canonical(output_path, ec)) {
      invalid("refusing to write over the input model {}: choose another output path", input_path);
    }
    Model model = value_or_throw(load_model(input_path));
    SimplifyOptions simplify_options = options ? options->options : SimplifyOptions{};
    SimplifyReport report;
    try {
      report = value_or_throw(simplify(model, simplify_options));
    } catch (const Error& e) {
      throw Error(std::string(input_path) + ": " + e.what());
    }
    if (!report.check_ok) {
      check_failed = new OnnxkitStatus{ONNXKIT_ERROR_CHECK_FAILED,
                                       fmt::format("{}: check failed: {}; nothing was written",
                                                   input_path, report.check_message)};
      return;
    }
    Status saved = save_model(model, output_path);
    if (!saved.ok()) throw Error(saved.message());
    if (nodes_before) *nodes_before = report.before.nodes;
    if (nodes_after) *nodes_after = report.after.nodes;
  });
  return status ? status : check_failed;
}

}  // extern "C"
