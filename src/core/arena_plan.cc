#include "core/arena_plan.h"

#include <algorithm>
#include <cstring>

#include "core/resource_limits.h"

namespace onnxkit {
namespace {

size_t aligned(size_t bytes) {
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  return rounded == 0 ? kTensorAlignment : rounded;
}

}  // namespace

std::shared_ptr<const ArenaPlan> ArenaPlan::from_trace(AllocationTrace trace) {
  auto plan = std::make_shared<ArenaPlan>();
  const size_t count = trace.sizes.size();
  // Lifetimes in event positions: [first, last]; an allocation never freed outlives the run.
  constexpr size_t kNever = SIZE_MAX;
  std::vector<size_t> first(count, kNever), last(count, kNever);
  for (size_t position = 0; position < trace.events.size(); ++position) {
    const AllocationEvent& event = trace.events[position];
    (event.allocate ? first : last)[event.index] = position;
  }
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < count; ++i) {
    if (first[i] != kNever && last[i] != kNever) order.push_back(i);
  }
  // Greedy by size: the biggest tensors are placed first, each at the lowest offset that
  // no already placed tensor with an overlapping lifetime covers.
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return trace.sizes[a] > trace.sizes[b]; });
  plan->offsets.assign(count, kFromPool);
  std::vector<uint32_t> placed;
  std::vector<std::pair<size_t, size_t>> taken;  // [offset, end) of overlapping tensors
  for (uint32_t i : order) {
    const size_t size = aligned(trace.sizes[i]);
    taken.clear();
    for (uint32_t j : placed) {
      if (first[j] <= last[i] && first[i] <= last[j]) {
        taken.emplace_back(plan->offsets[j], plan->offsets[j] + aligned(trace.sizes[j]));
      }
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + size) break;
      offset = std::max(offset, end);
    }
    plan->offsets[i] = offset;
    plan->arena_bytes = std::max(plan->arena_bytes, offset + size);
    placed.push_back(i);
  }
  plan->planned_tensors = placed.size();
  plan->trace = std::move(trace);
  return plan;
}

ArenaRun::ArenaRun(std::shared_ptr<MemoryPool> pool, std::shared_ptr<const ArenaPlan> plan)
    : pool_(std::move(pool)), plan_(std::move(plan)) {}

std::shared_ptr<ArenaRun> ArenaRun::record(std::shared_ptr<MemoryPool> pool) {
  return std::shared_ptr<ArenaRun>(new ArenaRun(std::move(pool), nullptr));
}

std::shared_ptr<ArenaRun> ArenaRun::replay(std::shared_ptr<MemoryPool> pool,
                                           std::shared_ptr<const ArenaPlan> plan) {
  std::shared_ptr<ArenaRun> run(new ArenaRun(std::move(pool), std::move(plan)));
  if (run->plan_->arena_bytes > 0)
    run->arena_ = run->pool_->allocate(run->plan_->arena_bytes, false);
  return run;
}

std::shared_ptr<Buffer> ArenaRun::allocate(size_t bytes, bool zero) {
  std::unique_lock lock(mutex_);
  const uint32_t index = allocations_++;
  if (!plan_) {
    // Recording: the pool's block, lent on so that its death is seen here.
    if (!finished_) {
      trace_.sizes.push_back(bytes);
      trace_.events.push_back({true, index});
    }
    lock.unlock();
    std::shared_ptr<Buffer> block = pool_->allocate(bytes, zero);
    std::byte* data = block->mutable_data();
    lock.lock();
    live_[data] = Live{index, std::move(block)};
    return Buffer::lent(data, bytes, bytes, shared_from_this());
  }
  const auto& events = plan_->trace.events;
  const bool as_planned = !diverged_ && !finished_ && cursor_ < events.size() &&
                          events[cursor_].allocate && events[cursor_].index == index &&
                          plan_->trace.sizes[index] == bytes;
  if (!as_planned) diverged_ = true;
  if (!as_planned || plan_->offsets[index] == ArenaPlan::kFromPool) {
    if (as_planned) ++cursor_;
    lock.unlock();
    return pool_->allocate(bytes, zero);
  }
  // Planned bytes count against the run's budget like any other block.
  AllocationCharge charge(bytes);
  ++cursor_;
  std::byte* data = arena_->mutable_data() + plan_->offsets[index];
  live_[data] = Live{index, nullptr};
  lock.unlock();
  if (zero) std::memset(data, 0, bytes);
  return hold_charge(Buffer::lent(data, bytes, bytes, shared_from_this()), std::move(charge));
}

void ArenaRun::give_back(std::byte* data, size_t /*capacity*/) {
  std::shared_ptr<Buffer> block;  // released outside the lock (it goes back to the pool)
  std::lock_guard lock(mutex_);
  auto it = live_.find(data);
  if (it == live_.end()) return;
  const uint32_t index = it->second.index;
  block = std::move(it->second.block);
  live_.erase(it);
  if (finished_) return;
  if (!plan_) {
    trace_.events.push_back({false, index});
    return;
  }
  const auto& events = plan_->trace.events;
  if (!diverged_ && cursor_ < events.size() && !events[cursor_].allocate &&
      events[cursor_].index == index) {
    ++cursor_;
  } else {
    diverged_ = true;
  }
}

void ArenaRun::finish() {
  std::lock_guard lock(mutex_);
  if (plan_ && cursor_ != plan_->trace.events.size()) diverged_ = true;
  finished_ = true;
}

AllocationTrace ArenaRun::take_trace() {
  std::lock_guard lock(mutex_);
  return std::move(trace_);
}

bool ArenaRun::diverged() const {
  std::lock_guard lock(mutex_);
  return diverged_;
}

}  // namespace onnxkit
