#include "serve/server_metrics.h"

#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

namespace onnxkit::serve {
namespace {

prometheus::Family<prometheus::Counter>& counter(prometheus::Registry& registry, const char* name,
                                                 const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

double process_cpu_seconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

void ModelMetrics::record_failure(FailureReason reason) {
  switch (reason) {
    case FailureReason::kRejected:
      failure_rejected->Increment();
      break;
    case FailureReason::kBackend:
      failure_backend->Increment();
      break;
    case FailureReason::kOther:
      failure_other->Increment();
      break;
  }
}

void ModelMetrics::record_success(const BatchTiming& timing, int64_t rows, int64_t request_ns) {
  success->Increment();
  inference_count->Increment(static_cast<double>(rows));
  if (timing.first_of_batch) execution_count->Increment();
  request_us->Increment(request_ns / 1e3);
  queue_us->Increment(timing.queue_ns / 1e3);
  compute_input_us->Increment(timing.compute_input_ns / 1e3);
  compute_infer_us->Increment(timing.compute_infer_ns / 1e3);
  compute_output_us->Increment(timing.compute_output_ns / 1e3);
  request_seconds->Observe(request_ns / 1e9);
}

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      success_(counter(*registry_, "onnxkit_inference_request_success",
                       "Inference requests that succeeded")),
      failure_(counter(*registry_, "onnxkit_inference_request_failure",
                       "Inference requests that failed, by reason (REJECTED, BACKEND, OTHER)")),
      inference_count_(
          counter(*registry_, "onnxkit_inference_count",
                  "Inferences performed (batch rows; a batched request counts its rows)")),
      execution_count_(
          counter(*registry_, "onnxkit_inference_exec_count",
                  "Model executions (session runs); inference_count / exec_count is the "
                  "average batch size")),
      pending_(prometheus::BuildGauge()
                   .Name("onnxkit_inference_pending_request_count")
                   .Help("Requests queued for the model, not yet running")
                   .Register(*registry_)),
      request_us_(counter(*registry_, "onnxkit_inference_request_duration_us",
                          "Cumulative request duration, receipt to response, microseconds")),
      queue_us_(counter(*registry_, "onnxkit_inference_queue_duration_us",
                        "Cumulative time requests waited in the queue, microseconds")),
      compute_input_us_(counter(*registry_, "onnxkit_inference_compute_input_duration_us",
                                "Cumulative time merging batch inputs, microseconds")),
      compute_infer_us_(counter(*registry_, "onnxkit_inference_compute_infer_duration_us",
                                "Cumulative time in model execution, microseconds")),
      compute_output_us_(counter(*registry_, "onnxkit_inference_compute_output_duration_us",
                                 "Cumulative time splitting batch outputs, microseconds")),
      request_seconds_(prometheus::BuildHistogram()
                           .Name("onnxkit_inference_request_seconds")
                           .Help("Request latency, receipt to response")
                           .Register(*registry_)),
      cache_hits_(counter(*registry_, "onnxkit_cache_num_hits_per_model", "Response cache hits")),
      cache_misses_(
          counter(*registry_, "onnxkit_cache_num_misses_per_model", "Response cache misses")),
      cache_errors_(prometheus::BuildGauge()
                        .Name("onnxkit_cache_errors")
                        .Help("Cache lookups and stores that could not be done (served without "
                              "the cache)")
                        .Register(*registry_)
                        .Add({})),
      cpu_seconds_(prometheus::BuildGauge()
                       .Name("onnxkit_process_cpu_seconds")
                       .Help("CPU time of the server process, user and system, seconds")
                       .Register(*registry_)
                       .Add({})),
      resident_bytes_(prometheus::BuildGauge()
                          .Name("onnxkit_process_resident_memory_bytes")
                          .Help("Resident memory of the server process")
                          .Register(*registry_)
                          .Add({})) {}

ModelMetrics& ServerMetrics::model(const std::string& name, const std::string& version) {
  std::lock_guard guard(mutex_);
  auto& slot = models_[{name, version}];
  if (slot) return *slot;
  const prometheus::Labels labels{{"model", name}, {"version", version}};
  auto with_reason = [&](const char* reason) {
    prometheus::Labels tagged = labels;
    tagged["reason"] = reason;
    return &failure_.Add(tagged);
  };
  slot = std::make_unique<ModelMetrics>(ModelMetrics{
      &success_.Add(labels),
      with_reason("REJECTED"),
      with_reason("BACKEND"),
      with_reason("OTHER"),
      &inference_count_.Add(labels),
      &execution_count_.Add(labels),
      &pending_.Add(labels),
      &request_us_.Add(labels),
      &queue_us_.Add(labels),
      &compute_input_us_.Add(labels),
      &compute_infer_us_.Add(labels),
      &compute_output_us_.Add(labels),
      &request_seconds_.Add(
          labels, prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                          0.1, 0.25, 0.5, 1, 2.5, 5, 10}),
      &cache_hits_.Add(labels),
      &cache_misses_.Add(labels),
  });
  return *slot;
}

void ServerMetrics::set_cache_errors(uint64_t total) {
  cache_errors_.Set(static_cast<double>(total));
}

std::string ServerMetrics::render() {
  cpu_seconds_.Set(process_cpu_seconds());
  resident_bytes_.Set(resident_bytes());
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace onnxkit::serve
