// The server's Prometheus metrics (prometheus-cpp, text format at GET /metrics). Names mirror
// Triton's nv_* metrics with an onnxkit_ prefix; per-model series carry model and version
// labels.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "onnxkit/batcher.h"

namespace onnxkit::serve {

// Why a request failed, as the failure counter's `reason` label says.
enum class FailureReason { kRejected, kBackend, kOther };

// One model version's series.
struct ModelMetrics {
  prometheus::Counter* success;
  prometheus::Counter* failure_rejected;  // queue full or shutting down (503)
  prometheus::Counter* failure_backend;   // the run failed
  prometheus::Counter* failure_other;     // bad request
  prometheus::Counter* inference_count;   // inferences (rows), batched or not
  prometheus::Counter* execution_count;   // session runs
  prometheus::Gauge* pending;
  prometheus::Counter* request_us;
  prometheus::Counter* queue_us;
  prometheus::Counter* compute_input_us;
  prometheus::Counter* compute_infer_us;
  prometheus::Counter* compute_output_us;
  prometheus::Histogram* request_seconds;
  prometheus::Counter* cache_hits;
  prometheus::Counter* cache_misses;

  void record_failure(FailureReason reason);
  void record_success(const BatchTiming& timing, int64_t rows, int64_t request_ns);
};

class ServerMetrics {
 public:
  ServerMetrics();
  // The series of one model version (made on first use, kept after unload).
  ModelMetrics& model(const std::string& name, const std::string& version);
  // Cache lookups or stores that could not be done (Redis down): `total` is the cache's
  // own running count.
  void set_cache_errors(uint64_t total);
  // The text exposition format, process CPU time and resident memory refreshed first.
  std::string render();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& success_;
  prometheus::Family<prometheus::Counter>& failure_;
  prometheus::Family<prometheus::Counter>& inference_count_;
  prometheus::Family<prometheus::Counter>& execution_count_;
  prometheus::Family<prometheus::Gauge>& pending_;
  prometheus::Family<prometheus::Counter>& request_us_;
  prometheus::Family<prometheus::Counter>& queue_us_;
  prometheus::Family<prometheus::Counter>& compute_input_us_;
  prometheus::Family<prometheus::Counter>& compute_infer_us_;
  prometheus::Family<prometheus::Counter>& compute_output_us_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Counter>& cache_hits_;
  prometheus::Family<prometheus::Counter>& cache_misses_;
  prometheus::Gauge& cache_errors_;
  prometheus::Gauge& cpu_seconds_;
  prometheus::Gauge& resident_bytes_;
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace onnxkit::serve
