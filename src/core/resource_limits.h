// Bounds on what a model may make onnxkit do: the largest single tensor and the tensor bytes
// one run holds at once (SessionOptions::max_tensor_bytes / max_run_bytes), the iterations
// of one Loop (max_loop_iterations), and how deep subgraphs may nest.
//
// A run installs its RunLimits on the threads that execute it. Buffer, MemoryPool and the
// arena charge every tensor block to the current limits BEFORE allocating it, and the
// block pays its bytes back when it dies (hold_charge). A request over a bound throws Error, which
// the executor prefixes with the node.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "onnxkit/dtype.h"

namespace onnxkit {

// Loading and compiling recurse once per level of nested subgraphs (a Loop in an If in a
// Loop ...): a hostile model's thousand levels are refused rather than followed.
inline constexpr int kMaxSubgraphDepth = 64;
// Model-local functions calling functions: the longest chain of calls a model may hold. Each
// level takes one round of inlining, and libonnx's inference of a call recurses once per level
// (a chain of 5,000 overflowed its stack).
inline constexpr int kMaxFunctionCallDepth = 16;
inline constexpr int64_t kDefaultMaxLoopIterations = int64_t{1} << 14;

// Always held by a shared_ptr: the blocks charged to it keep it alive past the run.
class RunLimits : public std::enable_shared_from_this<RunLimits> {
 public:
  // 0 for a byte bound: available_memory_bytes(); 0 iterations: the default.
  RunLimits(size_t max_tensor_bytes, size_t max_live_bytes, int64_t max_loop_iterations = 0);

  // Counts `bytes` as held; throws Error when the block alone is over the tensor bound or
  // the bytes held would go over the run bound (nothing is counted then).
  void charge(size_t bytes);
  void refund(size_t bytes) { live_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t live_bytes() const { return live_.load(std::memory_order_relaxed); }
  size_t max_tensor_bytes() const { return max_tensor_bytes_; }
  size_t max_live_bytes() const { return max_live_bytes_; }
  int64_t max_loop_iterations() const { return max_loop_iterations_; }

 private:
  size_t max_tensor_bytes_;
  size_t max_live_bytes_;
  int64_t max_loop_iterations_;
  std::atomic<size_t> live_{0};
};

// The limits this thread's work is held to; nullptr: none (allocations unbounded, Loop at
// kDefaultMaxLoopIterations).
RunLimits* current_run_limits();
int64_t current_max_loop_iterations();

// Installs `limits` on this thread for the scope's lifetime (the previous ones after).
class RunLimitsScope {
 public:
  explicit RunLimitsScope(RunLimits* limits);
  ~RunLimitsScope();
  RunLimitsScope(const RunLimitsScope&) = delete;
  RunLimitsScope& operator=(const RunLimitsScope&) = delete;

 private:
  RunLimits* previous_;
};

// A charge on the current limits that pays itself back unless handed to the block it paid
// (hold_charge below): taken before allocating, so a failed allocation pays back.
class AllocationCharge {
 public:
  AllocationCharge() = default;
  explicit AllocationCharge(size_t bytes);  // charges current_run_limits(), if any
  ~AllocationCharge() { release(); }
  AllocationCharge(AllocationCharge&& other) noexcept { *this = std::move(other); }
  AllocationCharge& operator=(AllocationCharge&& other) noexcept;
  void release();
  bool empty() const { return !limits_; }

 private:
  std::shared_ptr<RunLimits> limits_;
  size_t bytes_ = 0;
};

// `block` holding `charge` until its last owner lets go: the returned pointer shares
// ownership of both (`block` itself when there is no charge).
template <typename T>
std::shared_ptr<T> hold_charge(std::shared_ptr<T> block, AllocationCharge charge) {
  if (charge.empty()) return block;
  auto holder = std::make_shared<std::pair<std::shared_ptr<T>, AllocationCharge>>(
      std::move(block), std::move(charge));
  T* raw = holder->first.get();
  return std::shared_ptr<T>(std::move(holder), raw);
}

// Throws Error when a block of `bytes` could not be allocated under the current limits:
// for kernels that build tables sized by their output before allocating it.
void check_allocation(size_t bytes);

// Shape arithmetic on dims a model chose: a + b and a * b, throwing Error naming `what` when
// the result leaves int64.
int64_t checked_add(int64_t a, int64_t b, std::string_view what);
int64_t checked_mul(int64_t a, int64_t b, std::string_view what);
// `value` (a constant input's scalar, a scaled dim) as an int64, truncated toward zero;
// throws Error naming `what` when it is not finite or outside int64.
int64_t checked_int64(double value, std::string_view what);

// Bytes of `numel` elements of `dtype` (strings count as std::string objects); throws
// Error naming `shape_text` when the product overflows.
size_t checked_nbytes(DType dtype, int64_t numel, const std::string& shape_text);

// Physical memory, capped by the cgroup's limit (v2 memory.max, v1 memory.limit_in_bytes).
size_t available_memory_bytes();

// "1.5 GiB": sizes in messages.
std::string format_bytes(size_t bytes);

}  // namespace onnxkit
