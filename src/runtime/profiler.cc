#include "runtime/profiler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

namespace onnxkit {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Profiler::Profiler() : epoch_ns_(steady_ns()) {}

int64_t Profiler::now_ns() const {
  return steady_ns() - epoch_ns_;
}

int Profiler::thread_index() {
  const size_t id = std::hash<std::thread::id>()(std::this_thread::get_id());
  auto it = std::find(thread_ids_.begin(), thread_ids_.end(), id);
  if (it != thread_ids_.end()) return static_cast<int>(it - thread_ids_.begin());
  thread_ids_.push_back(id);
  return static_cast<int>(thread_ids_.size() - 1);
}

void Profiler::record(const Node& node, int64_t start_ns, int64_t end_ns) {
  std::string op_type =
      node.domain().empty() ? node.op_type() : node.domain() + "::" + node.op_type();
  std::lock_guard lock(mutex_);
  timings_.push_back({node.name(), std::move(op_type), start_ns, end_ns, thread_index()});
}

std::vector<KernelTiming> Profiler::timings() const {
  std::lock_guard lock(mutex_);
  return timings_;
}

void Profiler::clear() {
  std::lock_guard lock(mutex_);
  timings_.clear();
}

std::string Profiler::chrome_trace_json() const {
  nlohmann::json events = nlohmann::json::array();
  for (const KernelTiming& t : timings()) {
    events.push_back({
        {"name", t.op_type},
        {"cat", "kernel"},
        {"ph", "X"},
        {"ts", static_cast<double>(t.start_ns) / 1e3},
        {"dur", static_cast<double>(t.end_ns - t.start_ns) / 1e3},
        {"pid", 0},
        {"tid", t.thread + 1},
        {"args", {{"node", t.node_name}, {"op_type", t.op_type}}},
    });
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

std::vector<Profiler::OpTotal> Profiler::totals_by_op_type() const {
  std::map<std::string, OpTotal> totals;
  for (const KernelTiming& t : timings()) {
    OpTotal& total = totals[t.op_type];
    total.op_type = t.op_type;
    total.total_ns += t.end_ns - t.start_ns;
    ++total.calls;
  }
  std::vector<OpTotal> sorted;
  for (auto& [name, total] : totals) sorted.push_back(total);
  std::sort(sorted.begin(), sorted.end(),
            [](const OpTotal& a, const OpTotal& b) { return a.total_ns > b.total_ns; });
  return sorted;
}

}  // namespace onnxkit
