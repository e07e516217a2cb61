// Per-kernel timings of profiled runs, and the Chrome trace they export to.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace onnxkit {

struct KernelTiming {
  std::string node_name;
  std::string op_type;   // "domain::Op" outside the standard domain
  int64_t start_ns = 0;  // since the profiler was created
  int64_t end_ns = 0;
  int thread = 0;  // a small number per OS thread that ran kernels
};

// Collects kernel timings; record() may be called from several threads.
class Profiler {
 public:
  Profiler();
  int64_t now_ns() const;
  void record(const Node& node, int64_t start_ns, int64_t end_ns);

  std::vector<KernelTiming> timings() const;
  void clear();

  // The Chrome trace event format (chrome://tracing, ui.perfetto.dev): one complete event
  // per kernel call, with its node name and op type.
  std::string chrome_trace_json() const;

  struct OpTotal {
    std::string op_type;
    int64_t total_ns = 0;
    size_t calls = 0;
  };
  // Kernel time summed per op type, largest first.
  std::vector<OpTotal> totals_by_op_type() const;

 private:
  int thread_index();
  int64_t epoch_ns_;
  mutable std::mutex mutex_;
  std::vector<KernelTiming> timings_;
  std::vector<size_t> thread_ids_;  // hashes of std::thread::id, index = thread number
};

}  // namespace onnxkit
