// What a Session's tensor memory has done so far (Session::memory_stats and
// memory_plan_stats).
#pragma once

#include <cstddef>

namespace onnxkit {

// The reuse pool that runs allocate tensors from.
struct MemoryPoolStats {
  size_t system_allocations = 0;  // blocks obtained from the heap
  size_t reuses = 0;              // allocations served from free blocks
  size_t bytes_in_use = 0;        // held by live tensors
  size_t peak_bytes_in_use = 0;
  size_t bytes_free = 0;  // cached for reuse
};

// Static memory planning: arenas laid out per input-shape set.
struct MemoryPlanStats {
  size_t plans = 0;  // input-shape sets with a plan
  size_t largest_arena_bytes = 0;
  size_t planned_tensors = 0;  // in the largest plan
  size_t planned_runs = 0;     // runs that followed a plan to the end
  size_t diverged_runs = 0;    // runs that left their plan (the rest came from the pool)
};

}  // namespace onnxkit
