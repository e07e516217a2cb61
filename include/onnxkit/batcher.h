// DynamicBatcher: queues inference requests for one session and runs them on its own worker
// threads, merging requests along the batch dimension (dim 0) when the model has one. A
// stream of frames from a camera, a server's HTTP requests or any other producer submit
// single requests; the batcher concatenates what arrives within `max_queue_delay_us` up to
// `max_batch_size`, runs the batch once, and splits the outputs back per request.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "onnxkit/session.h"
#include "onnxkit/status.h"

namespace onnxkit {

// How a batcher forms batches.
struct BatcherOptions {
  // Largest merged batch (sum of the requests' dim 0). 0 or 1: every request runs alone.
  int64_t max_batch_size = 1;
  // How long the oldest queued request may wait for others to join its batch.
  int64_t max_queue_delay_us = 0;
  // Batch sizes worth running at once without waiting out the delay (optional).
  std::vector<int64_t> preferred_batch_sizes;
  // Merged batches are padded with zero rows up to the smallest of these sizes that holds
  // them (empty: no padding, each batch runs at its own size). A new input shape costs a
  // session its first run or two, once (kernel primitives, memory plan: ResNet-50 1.1-2.7x
  // a steady run; warm_up() can pay it ahead), while padding rows are computed and dropped
  // on every batch (ResNet-50: 9 rows padded to 16 cost twice 8 rows).
  std::vector<int64_t> padded_batch_sizes;
  // Requests waiting (not yet running) at most; submit() refuses more. Never 0.
  size_t max_queue_size = 1024;
  // Batches that may run at once (each with the session's own thread count).
  int workers = 1;
};

// Where a request's time went, in nanoseconds, and the size of the batch it ran in.
struct BatchTiming {
  int64_t queue_ns = 0;           // submit() until its batch started
  int64_t compute_input_ns = 0;   // merging the batch's inputs
  int64_t compute_infer_ns = 0;   // the session run
  int64_t compute_output_ns = 0;  // splitting the outputs
  int64_t batch_size = 0;         // the merged batch's dim 0 (1 when run alone)
  // True for exactly one request of each session run, so per-execution counts can be kept
  // from the callbacks.
  bool first_of_batch = false;
};

// Called once per accepted request, on a worker thread, with its outputs or its error.
using BatchCallback = std::function<void(Result<NamedValues> outputs, const BatchTiming& timing)>;

// Counts since creation (a consistent snapshot).
struct BatcherStats {
  uint64_t requests = 0;    // requests completed (successfully or not)
  uint64_t executions = 0;  // session runs (batches)
  size_t pending = 0;       // requests queued now, not yet running
};

// A queue and worker threads in front of one session. Thread-safe; destruction (or stop())
// finishes every accepted request before it returns.
class DynamicBatcher {
 public:
  DynamicBatcher(std::shared_ptr<const Session> session, BatcherOptions options);
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  // Queues one request (inputs by name, as Session::run takes them). Fails without calling
  // `done` when the queue holds max_queue_size requests already or the batcher is stopping.
  Status submit(NamedValues inputs, BatchCallback done);
  // The same, for callers that prefer to wait: the future holds the outputs or the error
  // (including a refusal).
  std::future<Result<NamedValues>> submit(NamedValues inputs);

  // Runs `inputs` once on every worker thread, ahead of queued requests, and waits for them:
  // what a run builds per thread (its OpenMP thread team, oneDNN's per-thread objects) and per
  // input shape (kernel plans, the memory plan) is then there before the first request.
  // Not counted in stats(). Returns the first failure.
  Status warm_up(const NamedValues& inputs);

  // Whether requests are merged: max_batch_size > 1 and every input and output of the model
  // has a dynamic first dim.
  bool merges_batches() const;
  const BatcherOptions& options() const;
  BatcherStats stats() const;

  // Refuses new requests, runs the queued ones and joins the workers. Idempotent.
  void stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace onnxkit
