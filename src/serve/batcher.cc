// The dynamic batcher (include/onnxkit/batcher.h): one queue per session, worker threads
// that wait up to max_queue_delay_us for the oldest request's batch to fill, then merge,
// run and split.
#include "onnxkit/batcher.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/buffer.h"

namespace onnxkit {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ns_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

struct Request {
  NamedValues inputs;
  BatchCallback done;
  Clock::time_point enqueued;
  // Rows along dim 0 when the request can join a merged batch; 0: it runs alone.
  int64_t rows = 0;
  // Requests merge only with the same key: input names in model order, dtypes, dims 1..n.
  std::string merge_key;
};

bool first_dim_dynamic(const ValueInfo& info) {
  return info.is_tensor && info.shape && !info.shape->empty() && !info.shape->front().is_known();
}

// Tensor with dims [rows, rest...] built from `parts`' rows, in order, then zero rows up to
// `rows`.
Tensor concat_rows(const std::vector<const Tensor*>& parts, int64_t rows) {
  const Tensor& first = *parts.front();
  Shape shape = first.shape();
  shape[0] = rows;
  if (first.dtype() == DType::kString) {
    std::vector<std::string> strings;
    for (const Tensor* part : parts) {
      strings.insert(strings.end(), part->strings().begin(), part->strings().end());
    }
    strings.resize(static_cast<size_t>(shape_numel(shape)));
    return Tensor::from_strings(std::move(shape), std::move(strings));
  }
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(first.dtype());
  Tensor merged =
      Tensor::from_buffer(first.dtype(), std::move(shape), Buffer::allocate_uninitialized(bytes));
  auto* out = static_cast<std::byte*>(merged.mutable_raw_data());
  for (const Tensor* part : parts) {
    if (part->nbytes()) std::memcpy(out, part->raw_data(), part->nbytes());
    out += part->nbytes();
  }
  const auto* end = static_cast<std::byte*>(merged.mutable_raw_data()) + bytes;
  if (out < end) std::memset(out, 0, static_cast<size_t>(end - out));
  return merged;
}

// Rows [begin, begin + count) of `tensor` as a tensor of their own.
Tensor slice_rows(const Tensor& tensor, int64_t begin, int64_t count) {
  Shape shape = tensor.shape();
  const int64_t row_elements = tensor.shape()[0] ? tensor.numel() / tensor.shape()[0] : 0;
  shape[0] = count;
  if (tensor.dtype() == DType::kString) {
    auto first = tensor.strings().begin() + begin * row_elements;
    return Tensor::from_strings(std::move(shape),
                                std::vector<std::string>(first, first + count * row_elements));
  }
  const size_t row_bytes = static_cast<size_t>(row_elements) * dtype_size(tensor.dtype());
  const size_t bytes = row_bytes * static_cast<size_t>(count);
  Tensor part =
      Tensor::from_buffer(tensor.dtype(), std::move(shape), Buffer::allocate_uninitialized(bytes));
  if (bytes > 0) {
    std::memcpy(part.mutable_raw_data(),
                static_cast<const std::byte*>(tensor.raw_data()) + row_bytes * begin, bytes);
  }
  return part;
}

}  // namespace

struct DynamicBatcher::State {
  std::shared_ptr<const Session> session;
  BatcherOptions options;
  std::vector<ValueInfo> model_inputs;
  bool merges = false;

  mutable std::mutex mutex;
  std::condition_variable changed;
  std::deque<Request> queue;
  bool stopping = false;
  uint64_t requests_done = 0;
  uint64_t executions = 0;
  std::vector<std::thread> workers;
  // warm_up() runs waiting for each worker (by index), taken before any request.
  std::vector<std::deque<std::function<void()>>> worker_tasks;

  // Rows and merge key of a request that can join a merged batch; rows 0 otherwise (it
  // then runs alone and the session reports what is wrong with it).
  void classify(Request& request) const {
    if (!merges || request.inputs.size() != model_inputs.size()) return;
    std::string key;
    int64_t rows = -1;
    for (const ValueInfo& info : model_inputs) {
      auto it = std::find_if(request.inputs.begin(), request.inputs.end(),
                             [&](const auto& named) { return named.first == info.name; });
      if (it == request.inputs.end() || !it->second.is_tensor()) return;
      const Tensor& tensor = it->second.tensor();
      if (tensor.rank() != info.shape->size() || tensor.dtype() != info.dtype) return;
      for (size_t d = 1; d < tensor.rank(); ++d) {
        const Dim& declared = (*info.shape)[d];
        if (declared.is_known() && declared.value != tensor.shape()[d]) return;
      }
      if (rows >= 0 && tensor.shape()[0] != rows) return;
      rows = tensor.shape()[0];
      key += info.name;
      key += ':' + std::to_string(static_cast<int>(tensor.dtype()));
      for (size_t d = 1; d < tensor.rank(); ++d) key += ',' + std::to_string(tensor.shape()[d]);
      key += ';';
    }
    if (rows < 1 || rows > options.max_batch_size) return;
    request.rows = rows;
    request.merge_key = std::move(key);
  }

  // Indices of the queued requests that join the oldest one's batch, and their rows.
  std::pair<std::vector<size_t>, int64_t> gather_batch() const {
    std::vector<size_t> picked{0};
    const Request& first = queue.front();
    int64_t rows = first.rows;
    if (first.rows == 0) return {picked, 1};
    for (size_t i = 1; i < queue.size() && rows < options.max_batch_size; ++i) {
      const Request& candidate = queue[i];
      if (candidate.rows == 0 || candidate.merge_key != first.merge_key) continue;
      if (rows + candidate.rows > options.max_batch_size) continue;
      picked.push_back(i);
      rows += candidate.rows;
    }
    return {picked, rows};
  }

  bool batch_ready(int64_t rows) const {
    if (rows >= options.max_batch_size || queue.front().rows == 0) return true;
    const auto& preferred = options.preferred_batch_sizes;
    return std::find(preferred.begin(), preferred.end(), rows) != preferred.end();
  }

  void worker_loop(size_t worker) {
    std::unique_lock lock(mutex);
    auto& tasks = worker_tasks[worker];
    for (;;) {
      changed.wait(lock, [&] { return stopping || !queue.empty() || !tasks.empty(); });
      if (!tasks.empty()) {
        std::function<void()> task = std::move(tasks.front());
        tasks.pop_front();
        lock.unlock();
        task();
        lock.lock();
        continue;
      }
      if (queue.empty()) return;  // stopping, nothing left
      auto [picked, rows] = gather_batch();
      if (!stopping && !batch_ready(rows)) {
        const auto deadline =
            queue.front().enqueued + std::chrono::microseconds(options.max_queue_delay_us);
        if (Clock::now() < deadline) {
          // Woken by a new request (re-gather) or the deadline (run what there is).
          changed.wait_until(lock, deadline);
          continue;
        }
      }
      std::vector<Request> batch;
      batch.reserve(picked.size());
      for (size_t index : picked) batch.push_back(std::move(queue[index]));
      for (auto it = picked.rbegin(); it != picked.rend(); ++it) queue.erase(queue.begin() + *it);
      // Another worker may take the next batch while this one runs.
      if (!queue.empty()) changed.notify_one();
      lock.unlock();
      run_batch(batch, rows);
      lock.lock();
      requests_done += batch.size();
    }
  }

  void run_alone(Request& request, Clock::time_point started) {
    BatchTiming timing;
    timing.queue_ns = ns_between(request.enqueued, started);
    timing.batch_size = std::max<int64_t>(request.rows, 1);
    timing.first_of_batch = true;
    Result<NamedValues> outputs = session->run(request.inputs);
    timing.compute_infer_ns = ns_between(started, Clock::now());
    count_execution();
    request.done(std::move(outputs), timing);
  }

  void count_execution() {
    std::lock_guard guard(mutex);
    ++executions;
  }

  void run_batch(std::vector<Request>& batch, int64_t rows) {
    const auto started = Clock::now();
    if (batch.size() == 1) {
      run_alone(batch.front(), started);
      return;
    }
    int64_t run_rows = -1;  // the smallest padded size that holds the batch
    for (int64_t size : options.padded_batch_sizes) {
      if (size >= rows && (run_rows < 0 || size < run_rows)) run_rows = size;
    }
    if (run_rows < 0) run_rows = rows;
    NamedValues merged;
    for (const ValueInfo& info : model_inputs) {
      std::vector<const Tensor*> parts;
      for (const Request& request : batch) {
        for (const auto& [name, value] : request.inputs) {
          if (name == info.name) parts.push_back(&value.tensor());
        }
      }
      merged.emplace_back(info.name, concat_rows(parts, run_rows));
    }
    const auto merged_at = Clock::now();
    Result<NamedValues> outputs = session->run(merged);
    const auto ran_at = Clock::now();
    count_execution();
    bool splittable = outputs.ok();
    if (splittable) {
      for (const auto& [name, value] : outputs.value()) {
        splittable = splittable && value.is_tensor() && value.tensor().rank() >= 1 &&
                     value.tensor().shape()[0] == run_rows;
      }
    }
    if (!splittable) {
      // A failed batch (one bad request) or outputs that do not follow the batch dim: each
      // request runs alone, so its result and error are its own.
      for (Request& request : batch) run_alone(request, Clock::now());
      return;
    }
    int64_t begin = 0;
    for (Request& request : batch) {
      const auto split_start = Clock::now();
      NamedValues own;
      for (const auto& [name, value] : outputs.value()) {
        own.emplace_back(name, slice_rows(value.tensor(), begin, request.rows));
      }
      begin += request.rows;
      BatchTiming timing;
      timing.queue_ns = ns_between(request.enqueued, started);
      timing.compute_input_ns = ns_between(started, merged_at);
      timing.compute_infer_ns = ns_between(merged_at, ran_at);
      timing.compute_output_ns = ns_between(split_start, Clock::now());
      timing.batch_size = rows;
      timing.first_of_batch = &request == &batch.front();
      request.done(std::move(own), timing);
    }
  }
};

DynamicBatcher::DynamicBatcher(std::shared_ptr<const Session> session, BatcherOptions options)
    : state_(std::make_unique<State>()) {
  if (!session) throw Error("DynamicBatcher: no session");
  if (options.max_queue_size == 0) throw Error("DynamicBatcher: max_queue_size must be > 0");
  if (options.max_queue_delay_us < 0) {
    throw Error("DynamicBatcher: max_queue_delay_us must be >= 0");
  }
  options.workers = std::max(1, options.workers);
  state_->session = std::move(session);
  state_->options = std::move(options);
  state_->model_inputs = state_->session->inputs();
  bool merges = state_->options.max_batch_size > 1 && !state_->model_inputs.empty();
  for (const ValueInfo& info : state_->model_inputs) merges = merges && first_dim_dynamic(info);
  for (const ValueInfo& info : state_->session->outputs()) {
    merges = merges && first_dim_dynamic(info);
  }
  state_->merges = merges;
  state_->worker_tasks.resize(static_cast<size_t>(state_->options.workers));
  for (size_t i = 0; i < state_->worker_tasks.size(); ++i) {
    state_->workers.emplace_back([state = state_.get(), i] { state->worker_loop(i); });
  }
}

DynamicBatcher::~DynamicBatcher() {
  stop();
}

Status DynamicBatcher::submit(NamedValues inputs, BatchCallback done) {
  Request request{std::move(inputs), std::move(done), Clock::now(), 0, {}};
  state_->classify(request);
  {
    std::lock_guard guard(state_->mutex);
    if (state_->stopping) return Status::error("the batcher is stopping");
    if (state_->queue.size() >= state_->options.max_queue_size) {
      return Status::error("queue full: " + std::to_string(state_->queue.size()) +
                           " requests waiting (max_queue_size " +
                           std::to_string(state_->options.max_queue_size) + ")");
    }
    state_->queue.push_back(std::move(request));
  }
  state_->changed.notify_all();
  return {};
}

std::future<Result<NamedValues>> DynamicBatcher::submit(NamedValues inputs) {
  auto promise = std::make_shared<std::promise<Result<NamedValues>>>();
  auto future = promise->get_future();
  Status accepted =
      submit(std::move(inputs), [promise](Result<NamedValues> outputs, const BatchTiming&) {
        promise->set_value(std::move(outputs));
      });
  if (!accepted.ok()) promise->set_value(accepted);
  return future;
}

Status DynamicBatcher::warm_up(const NamedValues& inputs) {
  std::vector<std::future<Status>> runs;
  {
    std::lock_guard guard(state_->mutex);
    if (state_->stopping) return Status::error("the batcher is stopping");
    for (auto& tasks : state_->worker_tasks) {
      auto promise = std::make_shared<std::promise<Status>>();
      runs.push_back(promise->get_future());
      tasks.push_back([session = state_->session.get(), &inputs, promise] {
        Result<NamedValues> outputs = session->run(inputs);
        promise->set_value(outputs.ok() ? Status() : Status::error(outputs.error()));
      });
    }
  }
  state_->changed.notify_all();
  Status first_failure;
  for (auto& run : runs) {
    Status status = run.get();
    if (!status.ok() && first_failure.ok()) first_failure = std::move(status);
  }
  return first_failure;
}

bool DynamicBatcher::merges_batches() const {
  return state_->merges;
}

const BatcherOptions& DynamicBatcher::options() const {
  return state_->options;
}

BatcherStats DynamicBatcher::stats() const {
  std::lock_guard guard(state_->mutex);
  return {state_->requests_done, state_->executions, state_->queue.size()};
}

void DynamicBatcher::stop() {
  {
    std::lock_guard guard(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  for (std::thread& worker : state_->workers) {
    if (worker.joinable()) worker.join();
  }
}

}  // namespace onnxkit
