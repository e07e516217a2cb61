#include "core/memory_pool.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace onnxkit {
namespace {

TEST(MemoryPool, ReusesAFreedBlockOfASimilarSize) {
  auto pool = MemoryPool::create();
  const std::byte* first = nullptr;
  {
    auto block = pool->allocate(1000, true);
    first = block->data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kTensorAlignment, 0u);
    EXPECT_TRUE(block->writable());
    EXPECT_EQ(pool->stats().bytes_in_use, 1024u);
  }
  EXPECT_EQ(pool->stats().bytes_in_use, 0u);
  EXPECT_EQ(pool->stats().bytes_free, 1024u);
  auto again = pool->allocate(990, false);
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(pool->stats().system_allocations, 1u);
  EXPECT_EQ(pool->stats().reuses, 1u);
}

TEST(MemoryPool, DoesNotHandASmallRequestABigBlock) {
  auto pool = MemoryPool::create();
  { auto big = pool->allocate(1 << 20, false); }
  auto small = pool->allocate(1000, false);
  EXPECT_EQ(pool->stats().system_allocations, 2u);
  EXPECT_EQ(pool->stats().reuses, 0u);
}

TEST(MemoryPool, ZeroFillsWhenAskedEvenOnReuse) {
  auto pool = MemoryPool::create();
  {
    auto block = pool->allocate(256, false);
    for (size_t i = 0; i < 256; ++i) block->mutable_data()[i] = std::byte{0xff};
  }
  auto zeroed = pool->allocate(256, true);
  for (size_t i = 0; i < 256; ++i) ASSERT_EQ(zeroed->data()[i], std::byte{0});
}

TEST(MemoryPool, BlocksOutliveThePoolHandle) {
  auto pool = MemoryPool::create();
  auto block = pool->allocate(64, true);
  pool.reset();  // the block keeps the pool alive and returns to it when dropped
  block->mutable_data()[0] = std::byte{1};
  EXPECT_EQ(block->data()[0], std::byte{1});
}

TEST(MemoryPool, ClosedPoolCachesNothing) {
  auto pool = MemoryPool::create();
  { auto cached = pool->allocate(1 << 20, false); }
  auto kept = pool->allocate(4096, false);  // an output a caller keeps past its session
  EXPECT_GT(pool->stats().bytes_free, 0u);
  pool->close();
  EXPECT_EQ(pool->stats().bytes_free, 0u);
  kept.reset();
  EXPECT_EQ(pool->stats().bytes_free, 0u);
  EXPECT_EQ(pool->stats().bytes_in_use, 0u);
}

TEST(MemoryPool, TracksPeakBytesInUse) {
  auto pool = MemoryPool::create();
  {
    auto a = pool->allocate(4096, false);
    auto b = pool->allocate(4096, false);
  }
  EXPECT_EQ(pool->stats().peak_bytes_in_use, 8192u);
  pool->reset_peak();
  EXPECT_EQ(pool->stats().peak_bytes_in_use, 0u);
  pool->trim();
  EXPECT_EQ(pool->stats().bytes_free, 0u);
}

}  // namespace
}  // namespace onnxkit
