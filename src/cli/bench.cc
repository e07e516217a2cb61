// `onnxkit bench MODEL [session flags] [--iterations N | --duration S] [--warmup N]
//  [--concurrency C] [--dim NAME=V] [--input NAME=FILE] [--seed N] [--profile FILE] [--json]
//  [--report FILE.html [--against MODEL.onnx|PEER.json]]`:
// times a model's runs. The first run is timed on its own (it pays for first-touch
// allocations), then --warmup untimed runs, then the timed ones, from --concurrency threads
// sharing one session.
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/progress.h"
#include "cli/session_flags.h"
#include "core/parallel.h"
#include "core/spin_policy.h"
#include "core/status.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"
#include "report/bench_report.h"
#include "runtime/profiler.h"

namespace onnxkit::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string model;
  SessionFlags session;
  bool parallel = false;
  int inter_op_threads = 0;
  int iterations = 10;
  double duration_seconds = 0;  // > 0: run for this long instead of --iterations runs
  int warmup = 2;
  int concurrency = 1;
  std::vector<std::string> dims;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::string profile;
  bool json = false;
  bool quiet = false;
  std::string report;
  std::string against;  // a second model, or a peer's JSON, beside the first in the report
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The process's peak resident set: VmHWM, the high-water mark of this program's own memory.
// getrusage's ru_maxrss is no good here: Linux carries it across execve, so a bench started
// by a harness with 500 MB resident (bench/compare_runtime.py after GPT-2) reported 500.
double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      try {
        return std::stod(line.substr(6)) / 1024.0;  // kB
      } catch (const std::exception&) {
        break;
      }
    }
  }
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB
}

// CPU time the process burns while idle right after the runs (threads spinning while they
// wait for work), in CPU-ms per wall second, over `idle_ms` of sleep.
double idle_cpu_ms_per_second(int idle_ms) {
  auto cpu_ms = [] {
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
    return ms(usage.ru_utime) + ms(usage.ru_stime);
  };
  const double before = cpu_ms();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  return (cpu_ms() - before) / (ms_since(start) / 1e3);
}

// Linear interpolation between the closest ranks, as numpy.percentile does by default.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (rank - static_cast<double>(below));
}

// The feeds: --input files, and generated data for the rest (ids in range of the table
// they index, masks of ones, floats normal(0,1); see make_check_inputs).
NamedValues make_feeds(const Session& session, const BenchArgs& args) {
  const Graph& graph = session.model().graph();
  std::map<std::string, RuntimeValue> files = read_input_files(graph, args.inputs);
  bool all_given = true;
  std::map<std::string, Tensor> given_tensors;
  for (const Value* input : graph.inputs()) {
    auto file = files.find(input->name());
    if (file != files.end()) {
      if (file->second.is_tensor()) given_tensors.emplace(input->name(), file->second.tensor());
    } else if (!input->has_initializer()) {
      all_given = false;
      if (input->type().kind != ValueType::Kind::kTensor) {
        fail("input '{}' is a {}: give it as a file with --input {}=FILE", input->name(),
             value_type_to_string(input->type()), input->name());
      }
    }
  }
  NamedValues generated;
  if (!all_given) {
    generated = make_check_inputs(session.model(), parse_dims(args.dims), given_tensors, args.seed);
  }
  NamedValues feeds;
  for (const Value* input : graph.inputs()) {
    auto file = files.find(input->name());
    if (file != files.end()) {
      feeds.emplace_back(input->name(), std::move(file->second));
      continue;
    }
    for (auto& [name, value] : generated) {
      if (name == input->name()) feeds.emplace_back(name, std::move(value));
    }
  }
  return feeds;
}

void run_once(const Session& session, const NamedValues& feeds, Profiler* profiler = nullptr) {
  RunOptions options;
  options.profiler = profiler;
  auto outputs = session.run(feeds, options);
  if (!outputs) fail("{}", outputs.error());
}

struct TimedRuns {
  std::vector<double> latencies_ms;  // sorted
  std::vector<double> in_order_ms;   // as the runs finished
  double wall_seconds = 0;
};

// Runs the timed iterations: `concurrency` threads share a run counter (or the deadline)
// and each calls Session::run on the one session.
TimedRuns run_timed(const Session& session, const NamedValues& feeds, const BenchArgs& args,
                    Profiler* profiler, Progress& progress) {
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::string first_error;
  std::vector<std::pair<double, double>> latencies;  // finished at (ms since start), took (ms)
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(args.duration_seconds));
  auto worker = [&] {
    std::vector<std::pair<double, double>> mine;
    try {
      for (;;) {
        if (stop.load()) break;
        const int index = started.fetch_add(1);
        if (args.duration_seconds > 0) {
          if (index > 0 && Clock::now() >= deadline) break;  // at least one run
        } else if (index >= args.iterations) {
          break;
        }
        const auto before = Clock::now();
        run_once(session, feeds, profiler);
        mine.emplace_back(ms_since(start), ms_since(before));
        if (args.duration_seconds > 0) {
          progress.phase(fmt::format("{} runs", index + 1));
        } else {
          progress.count(static_cast<size_t>(index + 1), static_cast<size_t>(args.iterations));
        }
      }
    } catch (const std::exception& e) {
      stop = true;
      std::lock_guard lock(mutex);
      if (first_error.empty()) first_error = e.what();
    }
    std::lock_guard lock(mutex);
    latencies.insert(latencies.end(), mine.begin(), mine.end());
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < args.concurrency; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& thread : threads) thread.join();
  if (!first_error.empty()) fail("{}", first_error);
  TimedRuns timed;
  timed.wall_seconds = ms_since(start) / 1e3;
  std::sort(latencies.begin(), latencies.end());
  for (const auto& [finished, took] : latencies) {
    timed.in_order_ms.push_back(took);
    timed.latencies_ms.push_back(took);
  }
  std::sort(timed.latencies_ms.begin(), timed.latencies_ms.end());
  return timed;
}

struct OpShare {
  std::string op_type;
  double total_ms = 0;
  double percent = 0;
  size_t calls = 0;
};

std::vector<OpShare> top_op_types(const Profiler& profiler, size_t count) {
  auto totals = profiler.totals_by_op_type();
  int64_t all_ns = 0;
  for (const auto& total : totals) all_ns += total.total_ns;
  std::vector<OpShare> top;
  for (size_t i = 0; i < std::min(count, totals.size()); ++i) {
    const auto& total = totals[i];
    top.push_back({total.op_type, static_cast<double>(total.total_ns) / 1e6,
                   all_ns ? 100.0 * static_cast<double>(total.total_ns) / all_ns : 0.0,
                   total.calls});
  }
  return top;
}

// The process's resident set now (/proc/self/statm), in MB.
double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Samples resident memory (and the session's tensor memory once there is a session) on its
// own thread every few milliseconds, for the report's memory-over-the-run chart.
class MemorySampler {
 public:
  explicit MemorySampler(bool enabled) : start_(Clock::now()) {
    if (enabled) thread_ = std::thread([this] { sample(); });
  }
  ~MemorySampler() { stop(); }
  void watch(const Session* session) {
    std::lock_guard lock(mutex_);
    session_ = session;
  }
  std::vector<report::MemorySample> stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    return std::move(samples_);
  }

 private:
  void sample() {
    constexpr size_t kMostSamples = 4000;
    auto interval = std::chrono::milliseconds(5);
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      report::MemorySample point{ms_since(start_), resident_mb(), std::nullopt};
      if (session_) {
        point.tensors_mb =
            static_cast<double>(session_->memory_stats().bytes_in_use) / (1024.0 * 1024.0);
      }
      samples_.push_back(point);
      // A long run keeps every other sample and samples half as often from then on.
      if (samples_.size() >= kMostSamples) {
        for (size_t i = 0; i < samples_.size() / 2; ++i) samples_[i] = samples_[2 * i];
        samples_.resize(samples_.size() / 2);
        interval *= 2;
      }
      wake_.wait_for(lock, interval);
    }
  }

  Clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const Session* session_ = nullptr;
  bool stopping_ = false;
  std::vector<report::MemorySample> samples_;
  std::thread thread_;
};

// Everything one model's benchmark measured.
struct Measured {
  std::string model;
  std::string level;
  int threads = 0;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, description
  double session_create_ms = 0;
  double first_run_ms = 0;
  TimedRuns timed;
  double mean_ms = 0;
  double throughput = 0;
  double rss_mb = 0;
  double idle_cpu = 0;
  MemoryPoolStats memory;
  MemoryPlanStats plan;
  SessionStats stats;
  std::vector<OpShare> ops;  // every op type, largest first (with --profile or --report)
  size_t profiled_runs = 0;
  std::vector<report::MemorySample> samples;  // with --report
};

// Loads `model_path` and times it as `args` say. With `for_report`, memory is sampled
// throughout and, unless --profile already profiles the timed runs, a few extra runs are
// profiled after them (so the timed runs pay no profiler overhead).
Measured measure(const std::string& model_path, const BenchArgs& args, bool write_profile,
                 bool for_report, Progress& progress) {
  SessionOptions options = to_session_options(args.session);
  options.parallel_execution = args.parallel;
  options.inter_op_threads = args.inter_op_threads;
  MemorySampler sampler(for_report);
  Measured out;
  out.model = model_path;
  out.level = optimization_level_name(options.level);
  out.threads = options.intra_op_threads > 0 ? options.intra_op_threads : available_cores();

  progress.phase("loading " + std::filesystem::path(model_path).filename().string());
  const auto create_start = Clock::now();
  auto loaded = Session::load(model_path, options);
  if (!loaded) fail("{}", loaded.error());
  out.session_create_ms = ms_since(create_start);
  const Session& session = *loaded.value();
  sampler.watch(&session);
  const NamedValues feeds = make_feeds(session, args);
  for (const auto& [name, value] : feeds) out.inputs.emplace_back(name, value.describe());

  progress.phase("first run");
  auto first_start = Clock::now();
  run_once(session, feeds);
  out.first_run_ms = ms_since(first_start);
  progress.phase("warmup");
  for (int i = 0; i < args.warmup; ++i) run_once(session, feeds);

  std::unique_ptr<Profiler> profiler;
  if (write_profile) profiler = std::make_unique<Profiler>();
  progress.phase("timed runs");
  out.timed = run_timed(session, feeds, args, profiler.get(), progress);
  const std::vector<double>& ms = out.timed.latencies_ms;
  out.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  out.throughput = out.timed.wall_seconds > 0 ? ms.size() / out.timed.wall_seconds : 0.0;
  out.profiled_runs = profiler ? ms.size() : 0;
  if (!profiler && for_report) {
    profiler = std::make_unique<Profiler>();
    out.profiled_runs = static_cast<size_t>(std::clamp(args.iterations, 1, 10));
    for (size_t i = 0; i < out.profiled_runs; ++i) {
      progress.phase(fmt::format("profiled run {} of {}", i + 1, out.profiled_runs));
      run_once(session, feeds, profiler.get());
    }
  }
  progress.clear();
  out.rss_mb = peak_rss_mb();
  // Tensor memory of the runs (the session's pool): what activations need at their peak,
  // and how often the steady state still had to ask the system for a block.
  out.memory = session.memory_stats();
  out.plan = session.memory_plan_stats();
  out.idle_cpu = idle_cpu_ms_per_second(300);
  out.stats = session.stats();

  if (write_profile) {
    std::ofstream trace(args.profile, std::ios::binary);
    trace << profiler->chrome_trace_json();
    if (!trace.good()) fail("cannot write the profile to '{}'", args.profile);
  }
  if (profiler) out.ops = top_op_types(*profiler, std::numeric_limits<size_t>::max());
  sampler.watch(nullptr);
  out.samples = sampler.stop();
  return out;
}

void print_json(const Measured& m, const BenchArgs& args) {
  const std::vector<double>& ms = m.timed.latencies_ms;
  const double arena_mb = static_cast<double>(m.plan.largest_arena_bytes) / (1024.0 * 1024.0);
  const double tensors_mb = static_cast<double>(m.memory.peak_bytes_in_use) / (1024.0 * 1024.0);
  nlohmann::ordered_json report{
      {"model", m.model},
      {"level", m.level},
      {"kernels", args.session.kernels},
      {"threads", m.threads},
      {"parallel", args.parallel},
      {"inter_op_threads", args.inter_op_threads},
      {"concurrency", args.concurrency},
      {"warmup", args.warmup},
      {"iterations", ms.size()},
      {"session_create_ms", m.session_create_ms},
      {"optimize_ms", m.stats.optimize_seconds * 1e3},
      {"compile_ms", m.stats.compile_seconds * 1e3},
      {"first_run_ms", m.first_run_ms},
      {"min_ms", ms.front()},
      {"median_ms", percentile(ms, 50)},
      {"p90_ms", percentile(ms, 90)},
      {"p95_ms", percentile(ms, 95)},
      {"p99_ms", percentile(ms, 99)},
      {"max_ms", ms.back()},
      {"mean_ms", m.mean_ms},
      {"throughput", m.throughput},
      {"peak_rss_mb", m.rss_mb},
      {"peak_tensor_mb", tensors_mb},
      {"pool_system_allocations", m.memory.system_allocations},
      {"arena_mb", arena_mb},
      {"planned_runs", m.plan.planned_runs},
      {"diverged_runs", m.plan.diverged_runs},
      {"idle_cpu_ms_per_s", m.idle_cpu},
      {"spin", spin_policy_name(process_spin_policy())},
      {"nodes", {{"before", m.stats.nodes_loaded}, {"after", m.stats.nodes_optimized}}},
      {"runs_ms", m.timed.in_order_ms},
  };
  report["inputs"] = nlohmann::ordered_json::object();
  for (const auto& [name, text] : m.inputs) report["inputs"][name] = text;
  if (!args.profile.empty()) {
    report["profile"] = args.profile;
    report["top_ops"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < std::min<size_t>(15, m.ops.size()); ++i) {
      const OpShare& op = m.ops[i];
      report["top_ops"].push_back({{"op_type", op.op_type},
                                   {"total_ms", op.total_ms},
                                   {"percent", op.percent},
                                   {"calls", op.calls}});
    }
  }
  std::cout << report.dump(2) << "\n";
}

void print_text(const Measured& m, const BenchArgs& args) {
  const std::vector<double>& ms = m.timed.latencies_ms;
  auto row = [](std::string_view label, const std::string& text) {
    std::cout << fmt::format("{:<13}{}\n", label, text);
  };
  row("model", m.model);
  std::string threading = fmt::format("{} thread{}", m.threads, m.threads == 1 ? "" : "s");
  if (args.parallel) threading += fmt::format(", parallel ({} inter-op)", args.inter_op_threads);
  row("session", fmt::format("level {}, {} kernels, {}", m.level, args.session.kernels, threading));
  for (const auto& [name, text] : m.inputs) row("input", name + ": " + text);
  row("create",
      fmt::format("{:.1f} ms (optimize {:.1f} ms, compile {:.1f} ms)", m.session_create_ms,
                  m.stats.optimize_seconds * 1e3, m.stats.compile_seconds * 1e3));
  row("first run", fmt::format("{:.2f} ms", m.first_run_ms));
  row("timed", fmt::format("{} runs after {} warmup, concurrency {}, {:.2f} s", ms.size(),
                           args.warmup, args.concurrency, m.timed.wall_seconds));
  row("latency ms", fmt::format("min {:.2f}  p50 {:.2f}  p90 {:.2f}  p95 {:.2f}  p99 {:.2f}  "
                                "max {:.2f}  mean {:.2f}",
                                ms.front(), percentile(ms, 50), percentile(ms, 90),
                                percentile(ms, 95), percentile(ms, 99), ms.back(), m.mean_ms));
  row("throughput", fmt::format("{:.2f} inferences/s", m.throughput));
  row("peak RSS", fmt::format("{:.1f} MB", m.rss_mb));
  row("idle CPU", fmt::format("{:.1f} ms per s in the 300 ms after the runs (spin {})", m.idle_cpu,
                              spin_policy_name(process_spin_policy())));
  row("tensors", fmt::format("{:.1f} MB at peak, {} blocks from the system, {} reuses",
                             static_cast<double>(m.memory.peak_bytes_in_use) / (1024.0 * 1024.0),
                             m.memory.system_allocations, m.memory.reuses));
  if (m.plan.plans > 0) {
    row("memory plan",
        fmt::format("arena {:.1f} MB for {} tensors; {} runs planned, {} left "
                    "their plan",
                    static_cast<double>(m.plan.largest_arena_bytes) / (1024.0 * 1024.0),
                    m.plan.planned_tensors, m.plan.planned_runs, m.plan.diverged_runs));
  } else {
    row("memory plan", args.parallel ? "none (parallel execution uses the pool)" : "none");
  }
  row("nodes",
      fmt::format("{} -> {} after optimization", m.stats.nodes_loaded, m.stats.nodes_optimized));
  if (!args.profile.empty()) {
    std::cout << fmt::format("\nprofile written to {}; kernel time by op type:\n", args.profile);
    std::cout << fmt::format("  {:<28}{:>12}{:>9}{:>9}\n", "op type", "total ms", "%", "calls");
    for (size_t i = 0; i < std::min<size_t>(15, m.ops.size()); ++i) {
      const OpShare& op = m.ops[i];
      std::cout << fmt::format("  {:<28}{:>12.2f}{:>8.1f}%{:>9}\n", op.op_type, op.total_ms,
                               op.percent, op.calls);
    }
  }
}

// "resnet50" for resnet50.onnx; the folder's name for a model.onnx in its own folder.
std::string model_label(const std::string& path) {
  const std::filesystem::path file(path);
  if (file.stem() == "model" && file.has_parent_path())
    return file.parent_path().filename().string();
  return file.stem().string();
}

report::BenchRecord to_record(const Measured& m, const BenchArgs& args) {
  report::BenchRecord record;
  record.label = "onnxkit " + model_label(m.model);
  record.model = m.model;
  record.settings = {
      {"session", fmt::format("level {}, {} kernels, {} thread(s){}", m.level, args.session.kernels,
                              m.threads, args.parallel ? ", parallel" : "")},
      {"runs", fmt::format("{} timed after {} warmup, concurrency {}", m.timed.in_order_ms.size(),
                           args.warmup, args.concurrency)},
      {"nodes",
       fmt::format("{} -> {} after optimization", m.stats.nodes_loaded, m.stats.nodes_optimized)},
  };
  for (const auto& [name, text] : m.inputs) record.settings.emplace_back("input " + name, text);
  if (m.profiled_runs > 0) {
    record.settings.emplace_back(
        "profile", args.profile.empty()
                       ? fmt::format("{} extra profiled runs after the timed ones", m.profiled_runs)
                       : fmt::format("the timed runs (--profile {})", args.profile));
  }
  record.runs_ms = m.timed.in_order_ms;
  record.latency_ms = report::latency_summary(m.timed.in_order_ms);
  record.session_create_ms = m.session_create_ms;
  record.first_run_ms = m.first_run_ms;
  record.throughput = m.throughput;
  record.peak_rss_mb = m.rss_mb;
  for (const OpShare& op : m.ops) {
    record.ops.push_back({op.op_type, op.total_ms, op.percent, op.calls});
  }
  record.profiled_runs = m.profiled_runs;
  record.memory = m.samples;
  return record;
}

// A peer's JSON: bench/ort_bench.js --json (ONNX Runtime) or onnxkit bench --json.
report::BenchRecord read_peer_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--against {}: cannot read the file", path);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail("--against {}: not JSON ({})", path, e.what());
  }
  if (!json.is_object() || !json.contains("median_ms")) {
    fail(
        "--against {}: not a bench JSON (no 'median_ms'; write one with onnxkit bench --json or "
        "node bench/ort_bench.js --json)",
        path);
  }
  auto number = [&](const char* key) {
    return json.contains(key) && json[key].is_number() ? json[key].get<double>() : 0.0;
  };
  auto text = [&](const char* key) {
    return json.contains(key) && json[key].is_string() ? json[key].get<std::string>()
                                                       : std::string();
  };
  report::BenchRecord record;
  record.model = text("model");
  record.label = json.contains("runtime")
                     ? fmt::format("{} {}", text("runtime"), text("ort_version"))
                     : "onnxkit " + model_label(record.model);
  record.settings.emplace_back("from", path);
  for (const char* key : {"level", "threads", "iterations", "warmup"}) {
    if (!json.contains(key)) continue;
    const nlohmann::json& value = json[key];
    record.settings.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  if (json.contains("inputs") && json["inputs"].is_object()) {
    for (const auto& [name, value] : json["inputs"].items()) {
      record.settings.emplace_back("input " + name,
                                   value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  if (json.contains("runs_ms") && json["runs_ms"].is_array()) {
    for (const auto& value : json["runs_ms"]) {
      if (value.is_number()) record.runs_ms.push_back(value.get<double>());
    }
  }
  if (!record.runs_ms.empty()) {
    record.latency_ms = report::latency_summary(record.runs_ms);
  } else {
    record.latency_ms = {{"min", number("min_ms")},  {"p50", number("median_ms")},
                         {"p90", number("p90_ms")},  {"p95", number("p95_ms")},
                         {"p99", number("p99_ms")},  {"max", number("max_ms")},
                         {"mean", number("mean_ms")}};
  }
  record.session_create_ms = number("session_create_ms");
  record.first_run_ms = number("first_run_ms");
  record.throughput = number("throughput");
  record.peak_rss_mb = number("peak_rss_mb");
  // ORT's per-op totals are under profile.op_types, onnxkit's under top_ops.
  const nlohmann::json* ops = nullptr;
  if (json.contains("profile") && json["profile"].is_object() &&
      json["profile"].contains("op_types")) {
    ops = &json["profile"]["op_types"];
  } else if (json.contains("top_ops")) {
    ops = &json["top_ops"];
  }
  if (ops && ops->is_array()) {
    for (const auto& op : *ops) {
      if (!op.is_object() || !op.contains("op_type")) continue;
      record.ops.push_back({op["op_type"].get<std::string>(), op.value("total_ms", 0.0),
                            op.value("percent", 0.0), op.value("calls", size_t{0})});
    }
    // Totals cover every profiled run; ORT profiles the warmup runs too.
    record.profiled_runs = static_cast<size_t>(number("iterations") + number("warmup") + 1);
  }
  return record;
}

void write_bench_report(const std::vector<report::BenchRecord>& records, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  out << report::render_bench_page(records);
  out.close();
  if (!out.good()) fail("cannot write the report to '{}'", path);
}

int run_bench(const BenchArgs& args) {
  const bool for_report = !args.report.empty();
  if (for_report && same_file(args.report, args.model)) {
    fail("--report {}: refusing to write over the model", args.report);
  }
  Progress progress("bench", !args.quiet && !args.json);
  const Measured first = measure(args.model, args, !args.profile.empty(), for_report, progress);
  if (args.json) {
    print_json(first, args);
  } else {
    print_text(first, args);
  }
  if (for_report) {
    std::vector<report::BenchRecord> records{to_record(first, args)};
    if (!args.against.empty()) {
      if (std::filesystem::path(args.against).extension() == ".json") {
        records.push_back(read_peer_record(args.against));
      } else {
        records.push_back(to_record(measure(args.against, args, false, true, progress), args));
      }
    }
    write_bench_report(records, args.report);
    if (!args.json) std::cout << "wrote the report to " << args.report << "\n";
  }
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& root) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* command = root.add_subcommand("bench", "Time a model's runs: latency, throughput");
  command->add_option("model", args->model, "The .onnx file")->required();
  add_session_flags(command, args->session, "all");
  add_custom_op_lib_flag(command, args->session.custom_op_libraries);
  CLI::Option* parallel = command->add_flag(
      "--parallel", args->parallel, "Run independent branches of the graph at the same time");
  command
      ->add_option("--inter-op-threads", args->inter_op_threads,
                   "Branches run at once with --parallel (0: 2)")
      ->check(CLI::NonNegativeNumber)
      ->needs(parallel)
      ->capture_default_str();
  CLI::Option* iterations = command->add_option("--iterations", args->iterations, "Timed runs")
                                ->check(CLI::PositiveNumber)
                                ->capture_default_str();
  command
      ->add_option("--duration", args->duration_seconds,
                   "Time runs for this many seconds instead of --iterations runs")
      ->check(CLI::PositiveNumber)
      ->excludes(iterations);
  command->add_option("--warmup", args->warmup, "Untimed runs after the first run")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--concurrency", args->concurrency,
                   "Threads calling run() at once on the one session")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  command->add_option("--dim", args->dims,
                      "NAME=VALUE for a symbolic dimension of generated inputs (default: 1 for "
                      "the first dim, 16 for others); repeatable");
  command->add_option("--input", args->inputs,
                      "NAME=FILE (.npy or .pb) for an input; the others are generated; "
                      "repeatable");
  command->add_option("--seed", args->seed, "Seed for generated inputs")->capture_default_str();
  command->add_option("--profile", args->profile,
                      "Profile the timed runs: write a Chrome trace to FILE and print the op "
                      "types that took the most time");
  command->add_flag("--json", args->json, "Print one JSON object instead of text");
  command->add_flag("--quiet", args->quiet, "No progress line on the terminal");
  CLI::Option* report = command->add_option(
      "--report", args->report,
      "Write an HTML page: latency histogram and timeline, time per op type, memory over the run");
  command
      ->add_option("--against", args->against,
                   "With --report: a second model (.onnx, benchmarked the same way) or a peer's "
                   "JSON (onnxkit bench --json, node bench/ort_bench.js --json) side by side")
      ->needs(report);
  return {command, [args] { return run_bench(*args); }};
}

}  // namespace onnxkit::cli
