// Intra-op parallelism: the one way kernels split work across threads.
//
// onnxkit's kernels and oneDNN share one OpenMP runtime (libgomp, which Debian's oneDNN is
// built with), so a run's thread budget is a single number: the calling thread's OpenMP
// thread count, set for the duration of a run by ThreadCountScope. Kernels never create
// threads; they call parallel_for with a range and a minimum chunk.
#pragma once

#include <cstdint>
#include <functional>

namespace onnxkit {

// Cores this process may use: the CPU affinity mask, capped by a cgroup CPU quota
// (cgroup v2 cpu.max or v1 cfs_quota/period) when one is set. At least 1.
int available_cores();

// Threads a parallel_for started from this thread would use.
int max_threads();

// Sets this thread's OpenMP thread count for its lifetime, restoring the previous count
// on destruction. `threads` <= 0 means available_cores().
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int threads);
  ~ThreadCountScope();
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int previous_;
};

// Calls body(begin, end) over disjoint chunks covering [0, n), in parallel when n is
// large enough: no chunk is smaller than `min_chunk` (except the last), so tiny loops run
// inline on the calling thread. Inside another parallel region it runs serially.
// Exceptions thrown by `body` are rethrown on the calling thread (the first one wins).
void parallel_for(int64_t n, int64_t min_chunk,
                  const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace onnxkit
