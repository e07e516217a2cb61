// The models a server holds: a repository folder of NAME/VERSION/model.onnx (with an optional
// NAME/config.json) or model files given by path. Each loaded version is a ModelInstance: a
// session behind a DynamicBatcher, with Triton-style statistics. Loading and unloading are
// safe while requests run: a request holds its instance until it has been queued, and an
// instance taken out of service finishes its queued requests before it goes.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "onnxkit/batcher.h"
#include "onnxkit/session.h"
#include "serve/inference_protocol.h"

namespace onnxkit::serve {

// How a model is served; config.json overrides the server's defaults field by field:
// {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": 500,
//  "preferred_batch_size": [4, 8], "max_queue_size": 64}, "threads": 2, "level": "all",
//  "instances": 1, "warmup": true, "pad_batches": false}
struct ModelConfig {
  int64_t max_batch_size = 0;
  int64_t max_queue_delay_us = 0;
  std::vector<int64_t> preferred_batch_sizes;
  size_t max_queue_size = 256;
  int threads = 0;
  std::string level = "all";
  int instances = 1;  // batches of this model that may run at once
  bool warmup = false;
  // Pad merged batches to powers of two (and max_batch_size), so a model runs at a few batch
  // sizes only (BatcherOptions::padded_batch_sizes). Off by default: sessions keep a plan per
  // input shape, so a size costs one slow run once (warm-up pays it), while padded rows are
  // paid on every batch (ResNet-50, one thread: 9 requests padded to 16 took 505 ms, 8 took
  // 247 ms; batching at concurrency 16 gave 0.56x the unbatched throughput).
  bool pad_batches = false;
  // Custom op libraries the model's sessions load (SessionOptions::custom_op_libraries).
  std::vector<std::string> custom_op_libraries;
  // Output name -> a file of class labels, one per line (Triton's label_filename), for
  // classification answers.
  std::map<std::string, std::filesystem::path> label_files;
};

// The batch sizes merged batches are padded to: 2, 4, 8, ... below max_batch_size, and it.
std::vector<int64_t> padded_batch_sizes(int64_t max_batch_size);

// The batch sizes --warmup runs, largest first (so each smaller size's tensors fit blocks a
// larger one left in the session's memory pool): every size the batcher can run when there
// are at most kWarmupAllSizesUpTo of them (1..max_batch_size, or 1 and the padded sizes),
// else 1, the powers of two, the preferred sizes and max_batch_size. `merges`: whether the
// batcher merges requests at all (else 1 only).
inline constexpr int64_t kWarmupAllSizesUpTo = 16;
std::vector<int64_t> warmup_batch_sizes(const ModelConfig& config, bool merges);

// A non-empty relative path none of whose parts is empty, "." or "..": a file a model's
// config or a load request may name inside the model's folder.
bool is_plain_relative_path(const std::filesystem::path& path);

// Reads `file` (config.json) over `defaults`; throws Error naming the file and field.
ModelConfig read_model_config(const std::filesystem::path& file, ModelConfig defaults);
// The same from a parsed object; `where` names it in errors, label files are relative to
// `folder`.
ModelConfig model_config_from_json(const nlohmann::json& object, const std::string& where,
                                   const std::filesystem::path& folder, ModelConfig defaults);

// What a load request (the model repository extension's, as tritonclient's load_model sends
// it) puts in place of the repository's files for that load.
struct LoadOverride {
  // config.json's fields, used instead of the model's config.json.
  std::optional<nlohmann::json> config;
  // Relative path ("1/model.onnx", "labels.txt") -> bytes: the model's folder, used instead of
  // the repository's. Written to a temporary folder that is removed once the load ends (the
  // sessions keep what they need in memory or mapped).
  std::map<std::string, std::string> files;
};

// Counters of one model version, with the statistics extension's field names.
class ModelStatistics {
 public:
  // `rows`: the request's batch rows (inference_count counts rows, as Triton's does).
  void record_success(const BatchTiming& timing, int64_t rows, int64_t request_ns);
  void record_failure(int64_t request_ns);
  void record_cache_hit(int64_t rows, int64_t lookup_ns, int64_t request_ns);
  void record_cache_miss(int64_t lookup_ns);
  void record_execution(const BatchTiming& timing);
  nlohmann::json to_json(const std::string& name, const std::string& version) const;

 private:
  struct Duration {
    uint64_t count = 0;
    uint64_t ns = 0;
    void add(int64_t value) {
      ++count;
      ns += static_cast<uint64_t>(std::max<int64_t>(value, 0));
    }
  };
  struct BatchDurations {
    Duration compute_input, compute_infer, compute_output;
  };
  mutable std::mutex mutex_;
  uint64_t last_inference_ms_ = 0;
  uint64_t inference_count_ = 0;
  uint64_t execution_count_ = 0;
  Duration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_, cache_hit_,
      cache_miss_;
  std::map<int64_t, BatchDurations> batches_;
};

// One loaded model version.
struct ModelInstance {
  std::string name;
  std::string version;
  ModelConfig config;
  std::shared_ptr<const Session> session;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  OutputLabels labels;  // read from config.label_files
  std::unique_ptr<DynamicBatcher> batcher;
  std::shared_ptr<ModelStatistics> statistics = std::make_shared<ModelStatistics>();

  ~ModelInstance();  // stops the batcher: queued requests finish first
  nlohmann::json metadata() const;
};

// A model as the repository index lists it.
struct ModelState {
  std::string name;
  std::string version;
  std::string state;  // READY, UNAVAILABLE (with reason), LOADING
  std::string reason;
};

class ModelRepository {
 public:
  // `root`: a repository folder (may be empty: models given by path only). `files`: model
  // files served as NAME = file stem, version "1".
  ModelRepository(std::filesystem::path root, std::vector<std::filesystem::path> files,
                  ModelConfig defaults);
  ~ModelRepository();

  // Loads every model; returns the errors (a model that fails stays UNAVAILABLE).
  std::vector<std::string> load_all();
  // (Re)loads every version of `name`; the old versions serve until the new ones are ready.
  // Throws RequestError (404 unknown model, 400 failed load). With override files, `name` need
  // not be in the repository.
  void load(const std::string& name, const LoadOverride& override = {});
  // Takes `name` out of service; throws RequestError 404 when it is not loaded.
  void unload(const std::string& name);

  // The instance for `name` (`version`, or the newest when empty); RequestError 404 when it
  // is not loaded.
  std::shared_ptr<ModelInstance> find(const std::string& name, const std::string& version) const;
  // Loaded instances, by name and version.
  std::vector<std::shared_ptr<ModelInstance>> loaded() const;
  std::vector<ModelState> index() const;
  // True when every model known at start is loaded.
  bool all_ready() const;
  // Stops every batcher (queued requests finish).
  void stop_all();

 private:
  struct Source {
    std::filesystem::path file;    // a single file, or
    std::filesystem::path folder;  // NAME/ holding VERSION/model.onnx
  };
  std::map<std::string, std::shared_ptr<ModelInstance>> load_versions(
      const std::string& name, const Source& source,
      const std::optional<nlohmann::json>& config_override) const;
  std::map<std::string, Source> discover() const;

  std::filesystem::path root_;
  std::vector<std::filesystem::path> files_;
  ModelConfig defaults_;
  mutable std::mutex mutex_;
  std::mutex load_mutex_;  // one load or unload at a time
  // name -> version -> instance
  std::map<std::string, std::map<std::string, std::shared_ptr<ModelInstance>>> models_;
  std::map<std::string, std::string> failures_;  // name -> why it is not loaded
  std::map<std::string, bool> unloaded_;         // unloaded on request
};

}  // namespace onnxkit::serve
