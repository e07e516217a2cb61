#include "runtime/inter_op_pool.h"

namespace onnxkit {

InterOpPool& InterOpPool::instance() {
  static InterOpPool pool;
  return pool;
}

InterOpPool::~InterOpPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void InterOpPool::worker_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (stopping_) return;
    const std::function<void()>* task = tasks_.back();
    tasks_.pop_back();
    ++running_;
    lock.unlock();
    (*task)();
    lock.lock();
    --running_;
    done_.notify_all();
  }
}

void InterOpPool::run(int workers, const std::function<void()>& body) {
  if (workers <= 1) {
    body();
    return;
  }
  // Concurrent parallel runs (several sessions, or one session from several threads) take
  // turns with the helpers, so the process never runs more workers than one run asked for.
  std::lock_guard turn(run_mutex_);
  {
    std::lock_guard lock(mutex_);
    while (static_cast<int>(threads_.size()) < workers - 1) {
      threads_.emplace_back([this] { worker_loop(); });
    }
    for (int i = 0; i < workers - 1; ++i) tasks_.push_back(&body);
  }
  wake_.notify_all();
  body();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return tasks_.empty() && running_ == 0; });
}

}  // namespace onnxkit
