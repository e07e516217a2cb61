// The page of `onnxkit bench --report`: latency histogram, per-run timeline, kernel time per
// op type, memory over the run; for two records (a second model, or a peer runtime's JSON such
// as bench/ort_bench.js --json writes) the two side by side on shared axes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onnxkit::report {

struct OpTime {
  std::string op_type;
  double total_ms = 0;  // over the profiled runs
  double percent = 0;   // of all kernel time
  size_t calls = 0;
};

struct MemorySample {
  double ms = 0;  // since the measurement started
  double rss_mb = 0;
  std::optional<double> tensors_mb;  // bytes held by live tensors, where the runtime says
};

// What one benchmark measured. Fields a peer's JSON lacks stay empty.
struct BenchRecord {
  std::string label;  // "onnxkit", "onnxruntime-node 1.30.0"
  std::string model;
  std::vector<std::pair<std::string, std::string>> settings;  // threads, level, inputs, ...
  std::vector<double> runs_ms;  // timed runs, in the order they finished
  // From the JSON when runs_ms is empty; computed from runs_ms otherwise.
  std::vector<std::pair<std::string, double>> latency_ms;  // min, p50, p90, ... mean
  double session_create_ms = 0;
  double first_run_ms = 0;
  double throughput = 0;
  double peak_rss_mb = 0;
  std::vector<OpTime> ops;  // largest first
  size_t profiled_runs = 0;
  std::vector<MemorySample> memory;
};

// min, p50, p90, p95, p99, max, mean of `runs_ms` (percentiles as numpy's default).
std::vector<std::pair<std::string, double>> latency_summary(std::vector<double> runs_ms);

// The whole HTML page for one or two records.
std::string render_bench_page(const std::vector<BenchRecord>& records);

}  // namespace onnxkit::report
