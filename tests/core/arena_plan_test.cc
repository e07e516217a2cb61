#include "core/arena_plan.h"

#include <gtest/gtest.h>

namespace onnxkit {
namespace {

// Allocation i of `sizes` at event positions; frees named by allocation number.
AllocationTrace trace_of(std::vector<size_t> sizes, std::vector<AllocationEvent> events) {
  AllocationTrace trace;
  trace.sizes = std::move(sizes);
  trace.events = std::move(events);
  return trace;
}

bool overlap(size_t a_offset, size_t a_size, size_t b_offset, size_t b_size) {
  return a_offset < b_offset + b_size && b_offset < a_offset + a_size;
}

TEST(ArenaPlan, TensorsAliveTogetherNeverShareBytesAndDeadOnesAreReused) {
  // a and b live together; c comes after a died; d outlives the run (a graph output).
  auto plan = ArenaPlan::from_trace(
      trace_of({1000, 500, 900, 64},
               {{true, 0}, {true, 1}, {false, 0}, {true, 2}, {true, 3}, {false, 1}, {false, 2}}));
  ASSERT_EQ(plan->offsets.size(), 4u);
  EXPECT_FALSE(overlap(plan->offsets[0], 1000, plan->offsets[1], 500));
  EXPECT_FALSE(overlap(plan->offsets[1], 500, plan->offsets[2], 900));
  EXPECT_EQ(plan->offsets[2], plan->offsets[0]);  // a's bytes, free again
  EXPECT_EQ(plan->offsets[3], ArenaPlan::kFromPool);
  EXPECT_EQ(plan->planned_tensors, 3u);
  EXPECT_LE(plan->arena_bytes, 1024u + 512u);
  for (size_t offset : {plan->offsets[0], plan->offsets[1]}) EXPECT_EQ(offset % 64, 0u);
}

// The events of a small run: two temporaries and an output.
std::vector<std::shared_ptr<Buffer>> run_pattern(BlockAllocator& allocator, size_t second) {
  std::vector<std::shared_ptr<Buffer>> kept;
  auto a = allocator.allocate(256, false);
  auto b = allocator.allocate(second, true);
  a.reset();
  auto out = allocator.allocate(128, false);
  b.reset();
  kept.push_back(out);
  return kept;
}

TEST(ArenaRun, ReplayPlacesTensorsInOneArenaAndOutputsOutsideIt) {
  auto pool = MemoryPool::create();
  auto recorder = ArenaRun::record(pool);
  auto outputs = run_pattern(*recorder, 512);
  recorder->finish();
  auto plan = ArenaPlan::from_trace(recorder->take_trace());
  EXPECT_EQ(plan->planned_tensors, 2u);

  auto replay = ArenaRun::replay(pool, plan);
  std::vector<std::shared_ptr<Buffer>> kept;
  auto a = replay->allocate(256, false);
  auto b = replay->allocate(512, true);
  for (size_t i = 0; i < 512; ++i) EXPECT_EQ(b->data()[i], std::byte{0});
  EXPECT_FALSE(
      overlap(reinterpret_cast<size_t>(a->data()), 256, reinterpret_cast<size_t>(b->data()), 512));
  a.reset();
  auto out = replay->allocate(128, false);
  b.reset();
  replay->finish();
  EXPECT_FALSE(replay->diverged());
  // The output came from the pool, so it survives the arena going back.
  replay.reset();
  out->mutable_data()[0] = std::byte{7};
  EXPECT_EQ(out->data()[0], std::byte{7});
}

TEST(ArenaRun, ARunThatLeavesThePlanTakesTheRestFromThePool) {
  auto pool = MemoryPool::create();
  auto recorder = ArenaRun::record(pool);
  run_pattern(*recorder, 512);
  recorder->finish();
  auto plan = ArenaPlan::from_trace(recorder->take_trace());

  // The first tensor lives longer than planned: the next allocation must not reuse it.
  auto replay = ArenaRun::replay(pool, plan);
  auto a = replay->allocate(256, false);
  auto b = replay->allocate(512, false);
  auto c = replay->allocate(128, false);  // planned after a's death, which has not come
  EXPECT_TRUE(replay->diverged());
  EXPECT_FALSE(
      overlap(reinterpret_cast<size_t>(a->data()), 256, reinterpret_cast<size_t>(c->data()), 128));
  EXPECT_FALSE(
      overlap(reinterpret_cast<size_t>(b->data()), 512, reinterpret_cast<size_t>(c->data()), 128));

  // A different size also leaves the plan.
  auto other = ArenaRun::replay(pool, plan);
  run_pattern(*other, 1024);
  other->finish();
  EXPECT_TRUE(other->diverged());
}

}  // namespace
}  // namespace onnxkit
