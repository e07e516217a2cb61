// A progress line on stderr for work that can take more than a second: a bar when the amount
// of work is known (conformance cases, bench runs), the phase and the time so far otherwise
// (loading, simplify's passes). It appears only after a second, only when stderr is a
// terminal and the command was not asked to be quiet, and erases itself when done, so that
// nothing of it reaches a pipe, a file or a test's captured output.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace onnxkit::cli {

class Progress {
 public:
  // `label` starts the line ("simplify", "bench"). `enabled` false (--quiet, --json) keeps it
  // silent.
  Progress(std::string label, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // What is going on now ("loading model.onnx", "pass constant_folding"); the line ticks its
  // clock on its own while one long step (a load) runs.
  void phase(std::string_view text);
  // `done` of `total` units of work: a bar.
  void count(size_t done, size_t total);
  // Erases the line (before printing results).
  void clear();

  bool active() const { return enabled_; }

 private:
  void draw_locked();
  void ticker();

  std::string label_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_;
  size_t done_ = 0;
  size_t total_ = 0;
  bool shown_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace onnxkit::cli
