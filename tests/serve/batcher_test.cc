// DynamicBatcher: merged batches give each request what running it alone gives, the queue
// is bounded, a bad request fails alone, stop() finishes what was accepted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>

#include "onnxkit/batcher.h"
#include "onnxkit/session.h"
#include "serve/model_repository.h"

namespace onnxkit {
namespace {

const char* kTinyCnn = ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx";  // [batch,3,32,32]

std::shared_ptr<const Session> tiny_cnn() {
  SessionOptions options;
  options.intra_op_threads = 1;
  return std::shared_ptr<const Session>(Session::load(kTinyCnn, options).value());
}

NamedValues frames(int64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> data(static_cast<size_t>(rows * 3 * 32 * 32));
  for (float& value : data) value = normal(rng);
  return {{"input", Tensor::from_vector(DType::kFloat, {rows, 3, 32, 32}, data)}};
}

// Holds one of a batcher's workers inside a request's callback until release(). Declare it
// before the batcher: the batcher's destructor joins the worker whose callback uses it.
class WorkerHold {
 public:
  void occupy(DynamicBatcher& batcher) {
    ASSERT_TRUE(batcher
                    .submit(frames(1, 0),
                            [this](Result<NamedValues>, const BatchTiming&) {
                              std::unique_lock lock(mutex_);
                              running_ = true;
                              changed_.notify_all();
                              changed_.wait(lock, [this] { return released_; });
                            })
                    .ok());
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return running_; });
  }
  void release() {
    {
      std::lock_guard guard(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool running_ = false, released_ = false;
};

void expect_same(const NamedValues& actual, const NamedValues& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    const Tensor& a = actual[i].second.tensor();
    const Tensor& e = expected[i].second.tensor();
    ASSERT_EQ(a.shape(), e.shape());
    for (int64_t k = 0; k < a.numel(); ++k) {
      EXPECT_NEAR(a.data<float>()[k], e.data<float>()[k], 1e-4f) << "element " << k;
    }
  }
}

TEST(BatcherTest, MergedRequestsGetWhatTheyGetAlone) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 16;
  options.max_queue_delay_us = 200000;  // long enough that all requests meet in the queue
  DynamicBatcher batcher(session, options);
  ASSERT_TRUE(batcher.merges_batches());
  const std::vector<int64_t> rows{1, 2, 1, 3, 1};  // 8 rows in all
  std::vector<std::future<Result<NamedValues>>> futures;
  for (size_t i = 0; i < rows.size(); ++i) futures.push_back(batcher.submit(frames(rows[i], i)));
  for (size_t i = 0; i < rows.size(); ++i) {
    Result<NamedValues> outputs = futures[i].get();
    ASSERT_TRUE(outputs.ok()) << outputs.error();
    expect_same(outputs.value(), session->run(frames(rows[i], i)).value());
  }
  EXPECT_EQ(batcher.stats().requests, rows.size());
  EXPECT_LT(batcher.stats().executions, rows.size());
}

TEST(BatcherTest, PaddedBatchesGiveEachRequestItsOwnRows) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 8;
  options.max_queue_delay_us = 200000;
  options.padded_batch_sizes = {4, 8};  // 3 rows run as 4, 5 as 8
  DynamicBatcher batcher(session, options);
  const std::vector<int64_t> rows{1, 1, 1};
  std::vector<std::future<Result<NamedValues>>> futures;
  for (size_t i = 0; i < rows.size(); ++i) futures.push_back(batcher.submit(frames(rows[i], i)));
  for (size_t i = 0; i < rows.size(); ++i) {
    Result<NamedValues> outputs = futures[i].get();
    ASSERT_TRUE(outputs.ok()) << outputs.error();
    expect_same(outputs.value(), session->run(frames(rows[i], i)).value());
  }
  futures.clear();
  for (int64_t n : {2, 3}) futures.push_back(batcher.submit(frames(n, 10 + n)));
  for (int64_t n : {2, 3}) {
    Result<NamedValues> outputs = futures[n - 2].get();
    ASSERT_TRUE(outputs.ok()) << outputs.error();
    expect_same(outputs.value(), session->run(frames(n, 10 + n)).value());
  }
}

TEST(BatcherTest, TimingsReportTheBatchSizeOncePerRun) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 4;
  options.max_queue_delay_us = 10'000'000;
  options.preferred_batch_sizes = {4};  // full: runs at once, not after 10 s
  DynamicBatcher batcher(session, options);
  std::mutex mutex;
  std::condition_variable all_done;
  std::vector<BatchTiming> timings;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(batcher
                    .submit(frames(1, i),
                            [&](Result<NamedValues> outputs, const BatchTiming& timing) {
                              EXPECT_TRUE(outputs.ok());
                              std::lock_guard guard(mutex);
                              timings.push_back(timing);
                              all_done.notify_all();
                            })
                    .ok());
  }
  std::unique_lock lock(mutex);
  ASSERT_TRUE(all_done.wait_for(lock, std::chrono::seconds(5), [&] { return timings.size() == 4; }))
      << "a full batch waited for the queue delay";
  int first = 0;
  for (const BatchTiming& timing : timings) {
    EXPECT_EQ(timing.batch_size, 4);
    first += timing.first_of_batch;
  }
  EXPECT_EQ(first, 1);
}

TEST(BatcherTest, ABadRequestFailsAloneAndTheOthersSucceed) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 8;
  options.max_queue_delay_us = 100000;
  DynamicBatcher batcher(session, options);
  auto good = batcher.submit(frames(1, 1));
  NamedValues wrong_dtype{{"input", Tensor(DType::kInt64, {1, 3, 32, 32})}};
  auto bad = batcher.submit(wrong_dtype);
  NamedValues unknown{{"pixels", frames(1, 2)[0].second}};
  auto bad_name = batcher.submit(unknown);
  auto good2 = batcher.submit(frames(2, 3));
  EXPECT_TRUE(good.get().ok());
  EXPECT_TRUE(good2.get().ok());
  Result<NamedValues> failed = bad.get();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().find("input"), std::string::npos) << failed.error();
  EXPECT_FALSE(bad_name.get().ok());
}

TEST(BatcherTest, AFullQueueRefusesAndNeverGrows) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 1;
  options.max_queue_size = 2;
  WorkerHold hold;
  DynamicBatcher batcher(session, options);
  // The first request's callback holds the only worker until released.
  hold.occupy(batcher);
  auto second = batcher.submit(frames(1, 1));
  auto third = batcher.submit(frames(1, 2));
  EXPECT_EQ(batcher.stats().pending, 2u);
  Status refused = batcher.submit(frames(1, 3), [](Result<NamedValues>, const BatchTiming&) {
    ADD_FAILURE() << "a refused request's callback ran";
  });
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("queue full"), std::string::npos) << refused.message();
  hold.release();
  EXPECT_TRUE(second.get().ok());
  EXPECT_TRUE(third.get().ok());
}

TEST(BatcherTest, StopFinishesAcceptedRequestsThenRefuses) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 4;
  options.max_queue_delay_us = 5'000'000;  // stop() must not wait this out
  DynamicBatcher batcher(session, options);
  std::atomic<int> done{0};
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(batcher
                    .submit(frames(1, i),
                            [&](Result<NamedValues> outputs, const BatchTiming&) {
                              EXPECT_TRUE(outputs.ok());
                              ++done;
                            })
                    .ok());
  }
  const auto start = std::chrono::steady_clock::now();
  batcher.stop();
  EXPECT_EQ(done.load(), 6);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  EXPECT_FALSE(batcher.submit(frames(1, 9)).get().ok());
}

TEST(BatcherTest, WithoutBatchingEveryRequestRunsAlone) {
  auto session = tiny_cnn();
  DynamicBatcher batcher(session, BatcherOptions{});
  EXPECT_FALSE(batcher.merges_batches());
  std::vector<std::future<Result<NamedValues>>> futures;
  for (int i = 0; i < 4; ++i) futures.push_back(batcher.submit(frames(2, i)));
  for (int i = 0; i < 4; ++i) {
    auto outputs = futures[i].get();
    ASSERT_TRUE(outputs.ok());
    EXPECT_EQ(outputs.value()[0].second.tensor().shape(), (Shape{2, 10}));
  }
  EXPECT_EQ(batcher.stats().executions, 4u);
}

TEST(BatcherTest, MergedBatchesRunAtTheirOwnSizeAndReuseTheShapesPlan) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 8;
  options.max_queue_delay_us = 10'000'000;
  options.preferred_batch_sizes = {3};  // three one-row requests run at once, unpadded
  DynamicBatcher batcher(session, options);
  // What each request gets alone, computed before the plan counts are read.
  std::vector<NamedValues> alone;
  for (uint64_t seed = 0; seed < 9; ++seed) alone.push_back(session->run(frames(1, seed)).value());
  auto run_three = [&](uint64_t first_seed) {
    std::mutex mutex;
    std::condition_variable all_done;
    std::vector<BatchTiming> timings;
    for (uint64_t i = 0; i < 3; ++i) {
      NamedValues inputs = frames(1, first_seed + i);
      ASSERT_TRUE(batcher
                      .submit(inputs,
                              [&, expected = alone[first_seed + i]](Result<NamedValues> outputs,
                                                                    const BatchTiming& timing) {
                                if (outputs.ok()) {
                                  expect_same(outputs.value(), expected);
                                } else {
                                  ADD_FAILURE() << outputs.error();
                                }
                                std::lock_guard guard(mutex);
                                timings.push_back(timing);
                                all_done.notify_all();
                              })
                      .ok());
    }
    std::unique_lock lock(mutex);
    all_done.wait(lock, [&] { return timings.size() == 3; });
    for (const BatchTiming& timing : timings) EXPECT_EQ(timing.batch_size, 3);
  };
  const size_t plans_before = session->memory_plan_stats().plans;  // the one-row shape
  run_three(0);
  const MemoryPlanStats after_first = session->memory_plan_stats();
  EXPECT_EQ(after_first.plans, plans_before + 1) << "a batch of 3 ran at another shape";
  run_three(3);
  run_three(6);
  const MemoryPlanStats after_more = session->memory_plan_stats();
  EXPECT_EQ(after_more.plans, after_first.plans) << "the 3-row shape was planned again";
  EXPECT_GE(after_more.planned_runs, after_first.planned_runs + 2)
      << "later batches of 3 did not follow the shape's plan";
  EXPECT_EQ(batcher.stats().executions, 3u);
}

TEST(BatcherTest, WarmUpRunsOnEveryWorkerBeforeRequestsAndIsNotCounted) {
  auto session = tiny_cnn();
  BatcherOptions options;
  options.max_batch_size = 8;
  options.workers = 2;
  WorkerHold hold;
  DynamicBatcher batcher(session, options);
  // One worker is held in a request's callback; the warm-up needs that worker too, so it
  // cannot finish on the other one alone.
  hold.occupy(batcher);
  const size_t plans_before = session->memory_plan_stats().plans;
  auto warm = std::async(std::launch::async, [&] { return batcher.warm_up(frames(5, 1)); });
  EXPECT_EQ(warm.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the warm-up finished while a worker had not run it";
  hold.release();
  Status warmed = warm.get();
  EXPECT_TRUE(warmed.ok()) << warmed.message();
  EXPECT_EQ(session->memory_plan_stats().plans, plans_before + 1);  // the 5-row shape
  EXPECT_EQ(batcher.stats().requests, 1u);
  EXPECT_EQ(batcher.stats().executions, 1u);
  NamedValues wrong_dtype{{"input", Tensor(DType::kInt64, {1, 3, 32, 32})}};
  Status failed = batcher.warm_up(wrong_dtype);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("input"), std::string::npos) << failed.message();
  batcher.stop();
  EXPECT_FALSE(batcher.warm_up(frames(1, 2)).ok());
}

TEST(BatcherTest, WarmUpCoversTheBatchSizesTheBatcherRuns) {
  using serve::ModelConfig;
  using serve::warmup_batch_sizes;
  using Sizes = std::vector<int64_t>;
  ModelConfig config;
  config.max_batch_size = 6;
  EXPECT_EQ(warmup_batch_sizes(config, true), (Sizes{6, 5, 4, 3, 2, 1}));  // unpadded: all
  EXPECT_EQ(warmup_batch_sizes(config, false), (Sizes{1}));                // never merges
  config.pad_batches = true;
  EXPECT_EQ(warmup_batch_sizes(config, true), (Sizes{6, 4, 2, 1}));
  config.pad_batches = false;
  config.max_batch_size = 64;  // too many sizes: powers of two, preferred, max
  config.preferred_batch_sizes = {24, 100};
  EXPECT_EQ(warmup_batch_sizes(config, true), (Sizes{64, 32, 24, 16, 8, 4, 2, 1}));
  config.max_batch_size = 0;
  EXPECT_EQ(warmup_batch_sizes(config, true), (Sizes{1}));
}

TEST(BatcherTest, BadOptionsAreErrors) {
  BatcherOptions options;
  options.max_queue_size = 0;
  EXPECT_THROW(DynamicBatcher(tiny_cnn(), options), Error);
  EXPECT_THROW(DynamicBatcher(nullptr, BatcherOptions{}), Error);
}

}  // namespace
}  // namespace onnxkit
