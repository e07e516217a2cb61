#include "core/resource_limits.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/buffer.h"
#include "core/memory_pool.h"
#include "core/status.h"

namespace onnxkit {
namespace {

TEST(RunLimits, ChargesAndRefundsAndRefusesBlocksOverTheBounds) {
  auto limits = std::make_shared<RunLimits>(1000, 1500);
  limits->charge(1000);
  EXPECT_EQ(limits->live_bytes(), 1000u);
  try {
    limits->charge(1001);
    FAIL() << "a block over the tensor bound was charged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-tensor-bytes"), std::string::npos) << e.what();
  }
  try {
    limits->charge(600);
    FAIL() << "the run bound was crossed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-run-bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(limits->live_bytes(), 1000u) << "a refused charge counts nothing";
  limits->refund(1000);
  EXPECT_EQ(limits->live_bytes(), 0u);
}

TEST(RunLimits, BuffersAndPoolBlocksPayBackWhenTheyDie) {
  auto limits = std::make_shared<RunLimits>(1 << 20, 1 << 21);
  auto pool = MemoryPool::create();
  {
    RunLimitsScope scope(limits.get());
    auto heap = Buffer::allocate(1000);
    auto block = pool->allocate(2000, true);
    EXPECT_EQ(limits->live_bytes(), 3000u);
    auto copy = heap;  // shares the block: still charged once
    heap.reset();
    EXPECT_EQ(limits->live_bytes(), 3000u);
    copy.reset();
    EXPECT_EQ(limits->live_bytes(), 2000u);
    EXPECT_THROW(Buffer::allocate(size_t{2} << 20), Error);
    EXPECT_THROW(pool->allocate(size_t{2} << 20, false), Error);
    EXPECT_EQ(limits->live_bytes(), 2000u);
  }
  EXPECT_EQ(limits->live_bytes(), 0u);
  // Outside a scope nothing is charged.
  auto free_block = Buffer::allocate(4096);
  EXPECT_EQ(limits->live_bytes(), 0u);
}

TEST(RunLimits, CheckedArithmeticRefusesOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checked_add(2, 3, "x"), 5);
  EXPECT_EQ(checked_mul(-4, 3, "x"), -12);
  EXPECT_THROW(checked_add(kMax, 1, "x"), Error);
  EXPECT_THROW(checked_mul(kMax / 2, 3, "x"), Error);
  EXPECT_THROW(checked_nbytes(DType::kDouble, int64_t{1} << 62, "[2^62]"), Error);
  EXPECT_EQ(checked_nbytes(DType::kFloat, 6, "[2,3]"), 24u);
}

TEST(RunLimits, DefaultsFollowTheMachine) {
  const size_t memory = available_memory_bytes();
  EXPECT_GT(memory, size_t{64} << 20);
  RunLimits defaults(0, 0);
  EXPECT_EQ(defaults.max_tensor_bytes(), memory);
  EXPECT_EQ(defaults.max_live_bytes(), memory);
  EXPECT_EQ(defaults.max_loop_iterations(), kDefaultMaxLoopIterations);
  EXPECT_EQ(current_max_loop_iterations(), kDefaultMaxLoopIterations);
  auto custom = std::make_shared<RunLimits>(0, 0, 7);
  RunLimitsScope scope(custom.get());
  EXPECT_EQ(current_max_loop_iterations(), 7);
}

}  // namespace
}  // namespace onnxkit
