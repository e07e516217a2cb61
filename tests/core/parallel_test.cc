#include "core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace onnxkit {
namespace {

TEST(Parallel, ChunksCoverTheRangeOnce) {
  ThreadCountScope threads(2);
  for (int64_t n : {0, 1, 7, 1000, 12345}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for(n, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(Parallel, SmallRangesRunInlineAsOneChunk) {
  ThreadCountScope threads(2);
  int calls = 0;
  parallel_for(10, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 10);
  });
  EXPECT_EQ(calls, 1);
}

TEST(Parallel, ExceptionsReachTheCaller) {
  ThreadCountScope threads(2);
  EXPECT_THROW(parallel_for(1000, 1, [](int64_t, int64_t) { throw std::runtime_error("x"); }),
               std::runtime_error);
}

TEST(Parallel, ThreadCountScopeRestores) {
  const int before = max_threads();
  {
    ThreadCountScope threads(1);
    EXPECT_EQ(max_threads(), 1);
  }
  EXPECT_EQ(max_threads(), before);
  EXPECT_GE(available_cores(), 1);
}

}  // namespace
}  // namespace onnxkit
