#include "cli/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace onnxkit::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDelay = std::chrono::seconds(1);
constexpr auto kTick = std::chrono::milliseconds(200);

size_t terminal_width() {
  struct winsize size {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 80;
}

}  // namespace

Progress::Progress(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled && ::isatty(STDERR_FILENO)), start_(Clock::now()) {
  if (enabled_) thread_ = std::thread([this] { ticker(); });
}

Progress::~Progress() {
  if (!enabled_) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  clear();
}

void Progress::phase(std::string_view text) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  phase_ = text;
  draw_locked();
}

void Progress::count(size_t done, size_t total) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  done_ = done;
  total_ = total;
  draw_locked();
}

void Progress::clear() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (shown_) std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

void Progress::draw_locked() {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  if (stopping_ || Clock::now() - start_ < kDelay) return;
  std::string line = fmt::format("{} {:.1f}s", label_, elapsed);
  if (total_ > 0) {
    constexpr size_t kBar = 24;
    const size_t filled = std::min(kBar, done_ * kBar / total_);
    line += fmt::format(" [{}{}] {}/{}", std::string(filled, '#'), std::string(kBar - filled, '.'),
                        done_, total_);
  }
  if (!phase_.empty()) line += "  " + phase_;
  const size_t width = terminal_width() - 1;
  if (line.size() > width) line.resize(width);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  shown_ = true;
}

// Redraws while nothing calls in (one long load), so the clock keeps moving.
void Progress::ticker() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kTick);
    if (!stopping_) draw_locked();
  }
}

}  // namespace onnxkit::cli
