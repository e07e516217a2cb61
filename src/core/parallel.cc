#include "core/parallel.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>

namespace onnxkit {
namespace {

// CPU quota in cores from cgroup v2 (`cpu.max`: "max 100000" or "200000 100000") or v1;
// 0 when there is none.
double cgroup_cpu_quota() {
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota, period;
  if (v2 >> quota >> period) {
    if (quota == "max") return 0;
    try {
      return std::stod(quota) / std::stod(period);
    } catch (const std::exception&) {
      return 0;
    }
  }
  std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota_us = -1, period_us = 0;
  if (q >> quota_us && p >> period_us && quota_us > 0 && period_us > 0) return quota_us / period_us;
  return 0;
}

}  // namespace

int available_cores() {
  static const int cores = [] {
    int count = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) count = CPU_COUNT(&set);
    if (count <= 0) count = omp_get_num_procs();
    const double quota = cgroup_cpu_quota();
    // A quota of 1.5 cores still lets two threads make progress; round up.
    if (quota > 0) count = std::min(count, std::max(1, static_cast<int>(quota + 0.99)));
    return std::max(1, count);
  }();
  return cores;
}

int max_threads() {
  return omp_get_max_threads();
}

ThreadCountScope::ThreadCountScope(int threads) : previous_(omp_get_max_threads()) {
  omp_set_num_threads(threads > 0 ? threads : available_cores());
}

ThreadCountScope::~ThreadCountScope() {
  omp_set_num_threads(previous_);
}

void parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(min_chunk, 1);
  const int64_t most_useful = (n + min_chunk - 1) / min_chunk;
  const int threads = omp_in_parallel()
                          ? 1
                          : static_cast<int>(std::min<int64_t>(omp_get_max_threads(), most_useful));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t count = omp_get_num_threads();
    const int64_t begin = n * t / count, end = n * (t + 1) / count;
    if (begin < end) {
      try {
        body(begin, end);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace onnxkit
