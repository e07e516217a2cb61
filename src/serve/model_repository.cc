#include "serve/model_repository.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "serve/inference_protocol.h"
#include "serve/triton_config.h"

namespace onnxkit::serve {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

template <typename T>
void read_field(const json& object, const char* key, T& out, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return;
  try {
    out = it->get<T>();
  } catch (const json::exception& e) {
    throw Error(where + ": field '" + key + "': " + e.what());
  }
}

bool is_version_folder(const fs::directory_entry& entry) {
  const std::string name = entry.path().filename().string();
  return entry.is_directory() && !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         fs::exists(entry.path() / "model.onnx");
}

// One label per line; a trailing '\r' (a file written on Windows) is not part of it.
std::vector<std::string> read_labels(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot read the label file");
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(std::move(line));
  }
  if (in.bad()) throw Error(file.string() + ": cannot read the label file");
  return labels;
}

// A load request's files in a fresh temporary folder, removed with this object.
class UploadedFolder {
 public:
  explicit UploadedFolder(const std::map<std::string, std::string>& files) {
    std::string pattern = (fs::temp_directory_path() / "onnxkit-load-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      throw RequestError(503, "cannot make a folder for the load request's files: " +
                                  std::string(std::strerror(errno)));
    }
    path_ = pattern;
    try {
      write(files);
    } catch (...) {
      remove();
      throw;
    }
  }
  ~UploadedFolder() { remove(); }
  UploadedFolder(const UploadedFolder&) = delete;
  UploadedFolder& operator=(const UploadedFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  void write(const std::map<std::string, std::string>& files) const {
    for (const auto& [name, bytes] : files) {
      const fs::path relative(name);
      if (!is_plain_relative_path(relative)) {
        throw RequestError(400, "load request: file '" + name +
                                    "' must be a path relative to the model's folder, "
                                    "without '..' (e.g. '1/model.onnx')");
      }
      std::error_code error;
      fs::create_directories((path_ / relative).parent_path(), error);
      std::ofstream out(path_ / relative, std::ios::binary);
      if (error || !out || !out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
        throw RequestError(400, "load request: cannot write file '" + name + "'" +
                                    (error ? ": " + error.message() : ""));
      }
    }
  }
  void remove() const {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }

  fs::path path_;
};

// Versions sort as numbers ("10" after "9").
bool version_less(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// Runs the model on zeros (dynamic dims 1, the batch dim at each of `batch_sizes`) so the
// first requests do not pay for first-touch allocations, the memory plan and oneDNN's
// primitive creation of their shape. The runs go through the batcher, onto every worker
// thread that runs requests (each has its own thread team and oneDNN objects): libgomp keeps
// a thread team per thread that starts parallel regions, and a team left behind on the
// loading thread counts against the cores. With more libgomp threads than cores, libgomp
// stops spinning between parallel regions and every region of a run then pays a futex sleep
// and wake-up (ResNet-50 at --threads 2 on 2 cores: ~1.5x `onnxkit bench`).
void warm_up(DynamicBatcher& batcher, const std::vector<ValueInfo>& model_inputs,
             const std::vector<int64_t>& batch_sizes, const std::string& what) {
  for (int64_t batch : batch_sizes) {
    NamedValues inputs;
    for (const ValueInfo& info : model_inputs) {
      if (!info.is_tensor || !info.shape) return;
      Shape shape;
      for (const Dim& dim : *info.shape) shape.push_back(dim.is_known() ? dim.value : 1);
      if (!shape.empty() && !info.shape->front().is_known()) shape[0] = batch;
      inputs.emplace_back(info.name, Tensor(info.dtype, shape));
    }
    Status status = batcher.warm_up(inputs);
    if (!status.ok()) {
      std::cerr << "onnxkit serve: warmup of " << what << ": " << status.message() << "\n";
      return;
    }
  }
}

// Session::load on a thread of its own that ends with the load. Creating a session runs
// parallel regions (weight prepacking), and libgomp keeps a thread team per thread that
// starts them until that thread exits: a team left on the main thread, or on a handler that
// answered a load request, would count against the cores as described at warm_up.
Result<std::unique_ptr<Session>> load_session(const fs::path& file, const SessionOptions& options) {
  std::optional<Result<std::unique_ptr<Session>>> loaded;
  std::thread([&] {
    try {
      loaded.emplace(Session::load(file, options));
    } catch (const std::exception& e) {
      loaded.emplace(Status::error(file.string() + ": " + e.what()));
    }
  }).join();
  return std::move(*loaded);
}

}  // namespace

std::vector<int64_t> padded_batch_sizes(int64_t max_batch_size) {
  std::vector<int64_t> sizes;
  for (int64_t size = 2; size < max_batch_size; size *= 2) sizes.push_back(size);
  if (max_batch_size > 1) sizes.push_back(max_batch_size);
  return sizes;
}

std::vector<int64_t> warmup_batch_sizes(const ModelConfig& config, bool merges) {
  std::vector<int64_t> sizes{1};
  if (merges && config.max_batch_size > 1) {
    if (config.pad_batches) {
      sizes = padded_batch_sizes(config.max_batch_size);
    } else if (config.max_batch_size <= kWarmupAllSizesUpTo) {
      for (int64_t size = 2; size <= config.max_batch_size; ++size) sizes.push_back(size);
    } else {
      sizes = padded_batch_sizes(config.max_batch_size);
      for (int64_t size : config.preferred_batch_sizes) {
        if (size > 1 && size <= config.max_batch_size) sizes.push_back(size);
      }
    }
    sizes.push_back(1);
  }
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

bool is_plain_relative_path(const fs::path& path) {
  if (path.empty() || path.is_absolute() || path.has_root_name()) return false;
  for (const fs::path& part : path) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

ModelConfig read_model_config(const fs::path& file, ModelConfig config) {
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot read");
  json object;
  try {
    object = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(file.string() + ": " + e.what());
  }
  return model_config_from_json(object, file.string(), file.parent_path(), std::move(config));
}

ModelConfig model_config_from_json(const json& object, const std::string& where,
                                   const fs::path& folder, ModelConfig config) {
  if (!object.is_object()) throw Error(where + ": not a JSON object");
  static const std::set<std::string, std::less<>> kFields = {
      "max_batch_size", "threads",          "level", "instances", "warmup",
      "pad_batches",    "dynamic_batching", "labels"};
  for (const auto& [key, value] : object.items()) {
    if (!kFields.count(key)) {
      std::string known;
      for (const std::string& field : kFields) known += (known.empty() ? "" : ", ") + field;
      throw Error(where + ": unknown field '" + key + "' (the fields: " + known + ")");
    }
  }
  read_field(object, "max_batch_size", config.max_batch_size, where);
  read_field(object, "threads", config.threads, where);
  read_field(object, "level", config.level, where);
  read_field(object, "instances", config.instances, where);
  read_field(object, "warmup", config.warmup, where);
  read_field(object, "pad_batches", config.pad_batches, where);
  if (auto labels = object.find("labels"); labels != object.end()) {
    if (!labels->is_object()) {
      throw Error(where + ": 'labels' is not an object of output name: label file");
    }
    for (const auto& [output, label_file] : labels->items()) {
      const fs::path relative = label_file.is_string() ? label_file.get<std::string>() : "";
      // A file of the model's folder, as Triton's label_filename is: a config a load request
      // uploads must not make the server read its other files into classification answers.
      if (!is_plain_relative_path(relative)) {
        throw Error(where + ": labels of output '" + output +
                    "' must be a file name relative to the model's folder, without '..'");
      }
      config.label_files[output] = folder / relative;
    }
  }
  if (auto batching = object.find("dynamic_batching"); batching != object.end()) {
    if (!batching->is_object()) throw Error(where + ": 'dynamic_batching' is not an object");
    read_field(*batching, "max_queue_delay_microseconds", config.max_queue_delay_us, where);
    read_field(*batching, "preferred_batch_size", config.preferred_batch_sizes, where);
    read_field(*batching, "max_queue_size", config.max_queue_size, where);
  }
  if (config.max_batch_size < 0 || config.max_queue_delay_us < 0 || config.max_queue_size == 0 ||
      config.instances < 1 || config.threads < 0) {
    throw Error(where +
                ": max_batch_size, max_queue_delay_microseconds and threads must be >= 0, "
                "max_queue_size and instances >= 1");
  }
  if (!parse_optimization_level(config.level)) {
    throw Error(where + ": unknown level '" + config.level + "'");
  }
  return config;
}

void ModelStatistics::record_success(const BatchTiming& timing, int64_t rows, int64_t request_ns) {
  std::lock_guard guard(mutex_);
  last_inference_ms_ = now_ms();
  inference_count_ += rows;
  success_.add(request_ns);
  queue_.add(timing.queue_ns);
  compute_input_.add(timing.compute_input_ns);
  compute_infer_.add(timing.compute_infer_ns);
  compute_output_.add(timing.compute_output_ns);
}

void ModelStatistics::record_failure(int64_t request_ns) {
  std::lock_guard guard(mutex_);
  fail_.add(request_ns);
}

void ModelStatistics::record_cache_hit(int64_t rows, int64_t lookup_ns, int64_t request_ns) {
  std::lock_guard guard(mutex_);
  last_inference_ms_ = now_ms();
  inference_count_ += rows;
  cache_hit_.add(lookup_ns);
  success_.add(request_ns);
}

void ModelStatistics::record_cache_miss(int64_t lookup_ns) {
  std::lock_guard guard(mutex_);
  cache_miss_.add(lookup_ns);
}

void ModelStatistics::record_execution(const BatchTiming& timing) {
  std::lock_guard guard(mutex_);
  ++execution_count_;
  BatchDurations& batch = batches_[timing.batch_size];
  batch.compute_input.add(timing.compute_input_ns);
  batch.compute_infer.add(timing.compute_infer_ns);
  batch.compute_output.add(timing.compute_output_ns);
}

json ModelStatistics::to_json(const std::string& name, const std::string& version) const {
  auto duration = [](const Duration& d) { return json{{"count", d.count}, {"ns", d.ns}}; };
  std::lock_guard guard(mutex_);
  json batch_stats = json::array();
  for (const auto& [size, batch] : batches_) {
    batch_stats.push_back({{"batch_size", size},
                           {"compute_input", duration(batch.compute_input)},
                           {"compute_infer", duration(batch.compute_infer)},
                           {"compute_output", duration(batch.compute_output)}});
  }
  return {{"name", name},
          {"version", version},
          {"last_inference", last_inference_ms_},
          {"inference_count", inference_count_},
          {"execution_count", execution_count_},
          {"inference_stats",
           {{"success", duration(success_)},
            {"fail", duration(fail_)},
            {"queue", duration(queue_)},
            {"compute_input", duration(compute_input_)},
            {"compute_infer", duration(compute_infer_)},
            {"compute_output", duration(compute_output_)},
            {"cache_hit", duration(cache_hit_)},
            {"cache_miss", duration(cache_miss_)}}},
          {"batch_stats", batch_stats},
          {"memory_usage", json::array()}};
}

ModelInstance::~ModelInstance() {
  if (batcher) batcher->stop();
}

json ModelInstance::metadata() const {
  auto tensors = [](const std::vector<ValueInfo>& infos) {
    json list = json::array();
    for (const ValueInfo& info : infos) {
      list.push_back({{"name", info.name},
                      {"datatype", protocol_datatype(info.dtype).value_or("UNKNOWN")},
                      {"shape", protocol_shape(info)}});
    }
    return list;
  };
  return {{"name", name},
          {"versions", json::array({version})},
          {"platform", "onnx"},
          {"inputs", tensors(inputs)},
          {"outputs", tensors(outputs)}};
}

ModelRepository::ModelRepository(fs::path root, std::vector<fs::path> files, ModelConfig defaults)
    : root_(std::move(root)), files_(std::move(files)), defaults_(std::move(defaults)) {}

ModelRepository::~ModelRepository() {
  stop_all();
}

std::map<std::string, ModelRepository::Source> ModelRepository::discover() const {
  std::map<std::string, Source> sources;
  for (const fs::path& file : files_) sources[file.stem().string()] = {file, {}};
  if (!root_.empty()) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(root_, error)) {
      if (entry.is_directory()) sources[entry.path().filename().string()] = {{}, entry.path()};
    }
    if (error) throw Error(root_.string() + ": " + error.message());
  }
  return sources;
}

std::map<std::string, std::shared_ptr<ModelInstance>> ModelRepository::load_versions(
    const std::string& name, const Source& source,
    const std::optional<json>& config_override) const {
  ModelConfig config = defaults_;
  if (config_override) {
    config = model_config_from_json(*config_override, "the load request's config",
                                    source.file.empty() ? source.folder : source.file.parent_path(),
                                    config);
  }
  std::vector<std::pair<std::string, fs::path>> versions;
  if (!source.file.empty()) {
    versions.emplace_back("1", source.file);
  } else {
    if (!config_override && fs::exists(source.folder / "config.json")) {
      config = read_model_config(source.folder / "config.json", config);
    } else if (!config_override && fs::exists(source.folder / "config.pbtxt")) {
      config = read_triton_config(source.folder / "config.pbtxt", config);
    }
    for (const auto& entry : fs::directory_iterator(source.folder)) {
      if (is_version_folder(entry)) {
        versions.emplace_back(entry.path().filename().string(), entry.path() / "model.onnx");
      }
    }
    if (versions.empty()) {
      throw Error(source.folder.string() + ": no VERSION/model.onnx (e.g. " +
                  (source.folder / "1" / "model.onnx").string() + ")");
    }
  }
  std::map<std::string, std::shared_ptr<ModelInstance>> loaded;
  for (const auto& [version, file] : versions) {
    SessionOptions options;
    options.level = *parse_optimization_level(config.level);
    options.intra_op_threads = config.threads;
    options.custom_op_libraries = config.custom_op_libraries;
    auto session = load_session(file, options);
    if (!session.ok()) throw Error(session.error());
    auto instance = std::make_shared<ModelInstance>();
    instance->name = name;
    instance->version = version;
    instance->config = config;
    instance->session = std::shared_ptr<const Session>(std::move(session).value());
    instance->inputs = instance->session->inputs();
    instance->outputs = instance->session->outputs();
    for (const auto& [output, label_file] : config.label_files) {
      if (std::none_of(instance->outputs.begin(), instance->outputs.end(),
                       [&](const ValueInfo& info) { return info.name == output; })) {
        throw Error((source.folder / "config.json").string() + ": labels for output '" + output +
                    "', which " + file.string() + " does not have");
      }
      instance->labels[output] = read_labels(label_file);
    }
    BatcherOptions batching;
    if (config.pad_batches) batching.padded_batch_sizes = padded_batch_sizes(config.max_batch_size);
    batching.max_batch_size = config.max_batch_size;
    batching.max_queue_delay_us = config.max_queue_delay_us;
    batching.preferred_batch_sizes = config.preferred_batch_sizes;
    batching.max_queue_size = config.max_queue_size;
    batching.workers = config.instances;
    instance->batcher = std::make_unique<DynamicBatcher>(instance->session, batching);
    if (config.warmup) {
      warm_up(*instance->batcher, instance->inputs,
              warmup_batch_sizes(config, instance->batcher->merges_batches()),
              name + " version " + version);
    }
    loaded[version] = std::move(instance);
  }
  return loaded;
}

std::vector<std::string> ModelRepository::load_all() {
  std::vector<std::string> errors;
  for (const auto& [name, source] : discover()) {
    try {
      load(name);
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  }
  return errors;
}

void ModelRepository::load(const std::string& name, const LoadOverride& override) {
  std::lock_guard load_guard(load_mutex_);
  Source source;
  std::optional<UploadedFolder> uploaded;
  if (!override.files.empty()) {
    uploaded.emplace(override.files);
    source.folder = uploaded->path();
  } else {
    const auto sources = discover();
    auto found = sources.find(name);
    if (found == sources.end()) {
      throw RequestError(404, "no model '" + name + "' in the repository");
    }
    source = found->second;
  }
  std::map<std::string, std::shared_ptr<ModelInstance>> versions;
  try {
    versions = load_versions(name, source, override.config);
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (uploaded) {
      // Name an uploaded file as the request did ("file:1/model.onnx"), not by the server's
      // temporary folder.
      const std::string folder = uploaded->path().string() + "/";
      for (size_t at = why.find(folder); at != std::string::npos; at = why.find(folder, at)) {
        why.replace(at, folder.size(), "file:");
      }
    }
    std::lock_guard guard(mutex_);
    failures_[name] = why;
    throw RequestError(400, "failed to load model '" + name + "': " + why);
  }
  std::map<std::string, std::shared_ptr<ModelInstance>> replaced;
  {
    std::lock_guard guard(mutex_);
    replaced.swap(models_[name]);
    models_[name] = std::move(versions);
    failures_.erase(name);
    unloaded_.erase(name);
  }
  // `replaced` dies here, outside the lock: each old batcher finishes its queue first.
}

void ModelRepository::unload(const std::string& name) {
  std::lock_guard load_guard(load_mutex_);
  std::map<std::string, std::shared_ptr<ModelInstance>> removed;
  {
    std::lock_guard guard(mutex_);
    auto it = models_.find(name);
    if (it == models_.end()) throw RequestError(404, "model '" + name + "' is not loaded");
    removed.swap(it->second);
    models_.erase(it);
    unloaded_[name] = true;
  }
  for (auto& [version, instance] : removed) instance->batcher->stop();
}

std::shared_ptr<ModelInstance> ModelRepository::find(const std::string& name,
                                                     const std::string& version) const {
  std::lock_guard guard(mutex_);
  auto it = models_.find(name);
  if (it == models_.end() || it->second.empty()) {
    throw RequestError(404, "unknown model '" + name + "'");
  }
  if (version.empty()) {
    auto newest = std::max_element(
        it->second.begin(), it->second.end(),
        [](const auto& a, const auto& b) { return version_less(a.first, b.first); });
    return newest->second;
  }
  auto found = it->second.find(version);
  if (found == it->second.end()) {
    throw RequestError(404, "unknown version '" + version + "' of model '" + name + "'");
  }
  return found->second;
}

std::vector<std::shared_ptr<ModelInstance>> ModelRepository::loaded() const {
  std::lock_guard guard(mutex_);
  std::vector<std::shared_ptr<ModelInstance>> all;
  for (const auto& [name, versions] : models_) {
    for (const auto& [version, instance] : versions) all.push_back(instance);
  }
  return all;
}

std::vector<ModelState> ModelRepository::index() const {
  std::vector<ModelState> states;
  std::map<std::string, Source> sources;
  try {
    sources = discover();
  } catch (const std::exception&) {
    // The repository folder is unreadable now: the index still lists what is loaded.
  }
  std::lock_guard guard(mutex_);
  // Models loaded, or whose load failed, from a load request's files are listed too.
  for (const auto& [name, versions] : models_) sources.try_emplace(name);
  for (const auto& [name, why] : failures_) sources.try_emplace(name);
  for (const auto& [name, source] : sources) {
    auto loaded = models_.find(name);
    if (loaded != models_.end() && !loaded->second.empty()) {
      for (const auto& [version, instance] : loaded->second) {
        states.push_back({name, version, "READY", ""});
      }
    } else if (auto failure = failures_.find(name); failure != failures_.end()) {
      states.push_back({name, "", "UNAVAILABLE", failure->second});
    } else {
      states.push_back({name, "", "UNAVAILABLE", unloaded_.count(name) ? "unloaded" : ""});
    }
  }
  return states;
}

bool ModelRepository::all_ready() const {
  std::lock_guard guard(mutex_);
  return failures_.empty();
}

void ModelRepository::stop_all() {
  std::lock_guard guard(mutex_);
  for (auto& [name, versions] : models_) {
    for (auto& [version, instance] : versions) instance->batcher->stop();
  }
}

}  // namespace onnxkit::serve
