// The process-wide pool of inter-op worker threads, shared by every session: parallel
// execution borrows workers from it instead of starting threads per run. Workers persist,
// so the OpenMP team each of them starts for its kernels is reused too.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxkit {

class InterOpPool {
 public:
  static InterOpPool& instance();
  ~InterOpPool();

  // Runs `body` on the calling thread and on `workers - 1` pool threads at once; returns
  // when every copy has returned. `body` must not throw.
  void run(int workers, const std::function<void()>& body);

 private:
  InterOpPool() = default;
  void worker_loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;
  std::vector<const std::function<void()>*> tasks_;  // pending copies to run
  int running_ = 0;
  bool stopping_ = false;
  std::mutex run_mutex_;  // one parallel run at a time uses the helpers
};

}  // namespace onnxkit
