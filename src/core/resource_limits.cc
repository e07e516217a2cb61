#include "core/resource_limits.h"

#include <unistd.h>

#include <fstream>
#include <limits>

#include "core/status.h"

namespace onnxkit {

namespace {

thread_local RunLimits* current_limits = nullptr;

size_t read_limit_file(const char* path) {
  std::ifstream file(path);
  std::string text;
  if (!(file >> text) || text == "max") return std::numeric_limits<size_t>::max();
  try {
    return static_cast<size_t>(std::stoull(text));
  } catch (const std::exception&) {
    return std::numeric_limits<size_t>::max();
  }
}

}  // namespace

RunLimits::RunLimits(size_t max_tensor_bytes, size_t max_live_bytes, int64_t max_loop_iterations)
    : max_tensor_bytes_(max_tensor_bytes ? max_tensor_bytes : available_memory_bytes()),
      max_live_bytes_(max_live_bytes ? max_live_bytes : available_memory_bytes()),
      max_loop_iterations_(max_loop_iterations > 0 ? max_loop_iterations
                                                   : kDefaultMaxLoopIterations) {}

void RunLimits::charge(size_t bytes) {
  if (bytes > max_tensor_bytes_) {
    fail_resource_limit(
        "a tensor of {} is over the largest tensor a run may allocate ({}; --max-tensor-bytes)",
        format_bytes(bytes), format_bytes(max_tensor_bytes_));
  }
  size_t live = live_.load(std::memory_order_relaxed);
  do {
    if (bytes > max_live_bytes_ - std::min(live, max_live_bytes_)) {
      fail_resource_limit(
          "allocating {} more would hold {} in this run, over the bound of {} "
          "(--max-run-bytes)",
          format_bytes(bytes), format_bytes(live + bytes), format_bytes(max_live_bytes_));
    }
  } while (!live_.compare_exchange_weak(live, live + bytes, std::memory_order_relaxed));
}

RunLimits* current_run_limits() {
  return current_limits;
}

int64_t current_max_loop_iterations() {
  return current_limits ? current_limits->max_loop_iterations() : kDefaultMaxLoopIterations;
}

RunLimitsScope::RunLimitsScope(RunLimits* limits) : previous_(current_limits) {
  current_limits = limits;
}

RunLimitsScope::~RunLimitsScope() {
  current_limits = previous_;
}

AllocationCharge::AllocationCharge(size_t bytes) {
  if (RunLimits* limits = current_limits) {
    limits->charge(bytes);
    limits_ = limits->shared_from_this();
    bytes_ = bytes;
  }
}

AllocationCharge& AllocationCharge::operator=(AllocationCharge&& other) noexcept {
  if (this != &other) {
    release();
    limits_ = std::move(other.limits_);
    bytes_ = other.bytes_;
    other.limits_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void AllocationCharge::release() {
  if (limits_) limits_->refund(bytes_);
  limits_ = nullptr;
  bytes_ = 0;
}

void check_allocation(size_t bytes) {
  AllocationCharge(bytes).release();
}

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) fail("{}: {} + {} overflows int64", what, a, b);
  return sum;
}

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) fail("{}: {} * {} overflows int64", what, a, b);
  return product;
}

int64_t checked_int64(double value, std::string_view what) {
  // 2^63 is the first double past int64's range; NaN fails both tests.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(value > -kLimit && value < kLimit)) fail("{}: {} is outside int64", what, value);
  return static_cast<int64_t>(value);
}

size_t checked_nbytes(DType dtype, int64_t numel, const std::string& shape_text) {
  const uint64_t element = dtype == DType::kString ? sizeof(std::string) : dtype_size(dtype);
  if (numel < 0) fail("invalid shape {}: negative element count", shape_text);
  if (element != 0 && static_cast<uint64_t>(numel) > std::numeric_limits<size_t>::max() / element) {
    fail("invalid shape {}: its size in bytes overflows", shape_text);
  }
  return static_cast<size_t>(static_cast<uint64_t>(numel) * element);
}

size_t available_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGESIZE);
    size_t physical = pages > 0 && page_size > 0
                          ? static_cast<size_t>(pages) * static_cast<size_t>(page_size)
                          : std::numeric_limits<size_t>::max();
    physical = std::min(physical, read_limit_file("/sys/fs/cgroup/memory.max"));
    return std::min(physical, read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  }();
  return bytes;
}

std::string format_bytes(size_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace onnxkit
