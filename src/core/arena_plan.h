// Static memory planning: one arena per run with every tensor at a planned offset.
//
// A sequential run with the same input shapes makes the same allocations and frees in the
// same order. So a session records the allocation trace of one run (ArenaRun::record),
// plans offsets from the lifetimes in it (ArenaPlan::from_trace: greedy by size, tensors
// whose lifetimes overlap never share bytes), and later runs with those input shapes take
// one arena block and place each tensor at its offset (ArenaRun::replay).
//
// A replay checks every event against the trace. At the first difference (a Loop that ran
// a different number of times, a kernel that allocates only on its first run) the run
// stops placing tensors in the arena and takes the rest from the pool; tensors already in
// the arena keep their bytes, so nothing can overlap. Allocations that outlive the run
// (graph outputs) come from the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/memory_pool.h"

namespace onnxkit {

struct AllocationEvent {
  bool allocate = true;  // false: the allocation was freed
  uint32_t index = 0;    // allocation number in the run
};

struct AllocationTrace {
  std::vector<size_t> sizes;  // bytes asked for, per allocation
  std::vector<AllocationEvent> events;
};

struct ArenaPlan {
  static constexpr size_t kFromPool = SIZE_MAX;  // offset of an allocation that outlives a run

  AllocationTrace trace;
  std::vector<size_t> offsets;  // per allocation
  size_t arena_bytes = 0;
  size_t planned_tensors = 0;  // allocations placed in the arena

  static std::shared_ptr<const ArenaPlan> from_trace(AllocationTrace trace);
};

class ArenaRun final : public BlockAllocator,
                       public BlockOwner,
                       public std::enable_shared_from_this<ArenaRun> {
 public:
  // Serves every allocation from `pool` and records the trace.
  static std::shared_ptr<ArenaRun> record(std::shared_ptr<MemoryPool> pool);
  // Places allocations at `plan`'s offsets in one block taken from `pool`.
  static std::shared_ptr<ArenaRun> replay(std::shared_ptr<MemoryPool> pool,
                                          std::shared_ptr<const ArenaPlan> plan);

  std::shared_ptr<Buffer> allocate(size_t bytes, bool zero) override;
  void give_back(std::byte* data, size_t capacity) override;

  // Ends the run: events after this (outputs freed by the caller) are not part of it.
  void finish();
  // Recording: the trace so far. Replaying: whether the run left the plan.
  AllocationTrace take_trace();
  bool diverged() const;

 private:
  ArenaRun(std::shared_ptr<MemoryPool> pool, std::shared_ptr<const ArenaPlan> plan);

  mutable std::mutex mutex_;
  std::shared_ptr<MemoryPool> pool_;
  std::shared_ptr<const ArenaPlan> plan_;  // null while recording
  std::shared_ptr<Buffer> arena_;
  AllocationTrace trace_;  // recording
  size_t cursor_ = 0;      // replaying: next expected event
  uint32_t allocations_ = 0;
  bool diverged_ = false;
  bool finished_ = false;
  // Live allocations by address: their number, and (recording) the pool block behind them.
  struct Live {
    uint32_t index;
    std::shared_ptr<Buffer> block;
  };
  std::unordered_map<const std::byte*, Live> live_;
};

}  // namespace onnxkit
