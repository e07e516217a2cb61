// `onnxkit bench MODEL [session flags] [--iterations N | --duration S] [--warmup N]
//  [--concurrency C] [--dim NAME=V] [--input NAME=FILE] [--seed N] [--profile FILE] [--json]`:
// times a model's runs. The first run is timed on its own (it pays for first-touch
// allocations), then --warmup untimed runs, then the timed ones, from --concurrency threads
// sharing one session.
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <mutex>
#include <numeric>
#include <thread>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/session_flags.h"
#include "core/parallel.h"
#include "core/spin_policy.h"
#include "core/status.h"
#include "onnxkit/session.h"
#include "onnxkit/simplify.h"
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
  double wall_seconds = 0;
};

// Runs the timed iterations: `concurrency` threads share a run counter (or the deadline)
// and each calls Session::run on the one session.
TimedRuns run_timed(const Session& session, const NamedValues& feeds, const BenchArgs& args,
                    Profiler* profiler) {
  std::atomic<int> started{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::string first_error;
  std::vector<double> latencies;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(args.duration_seconds));
  auto worker = [&] {
    std::vector<double> mine;
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
        mine.push_back(ms_since(before));
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
  timed.latencies_ms = std::move(latencies);
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

int run_bench(const BenchArgs& args) {
  SessionOptions options = to_session_options(args.session);
  options.parallel_execution = args.parallel;
  options.inter_op_threads = args.inter_op_threads;

  const auto create_start = Clock::now();
  auto loaded = Session::load(args.model, options);
  if (!loaded) fail("{}", loaded.error());
  const double session_create_ms = ms_since(create_start);
  const Session& session = *loaded.value();
  const NamedValues feeds = make_feeds(session, args);

  auto first_start = Clock::now();
  run_once(session, feeds);
  const double first_run_ms = ms_since(first_start);
  for (int i = 0; i < args.warmup; ++i) run_once(session, feeds);

  std::unique_ptr<Profiler> profiler;
  if (!args.profile.empty()) profiler = std::make_unique<Profiler>();
  const TimedRuns timed = run_timed(session, feeds, args, profiler.get());
  const std::vector<double>& ms = timed.latencies_ms;
  const double mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  const double throughput = timed.wall_seconds > 0 ? ms.size() / timed.wall_seconds : 0.0;
  const double rss_mb = peak_rss_mb();
  // Tensor memory of the runs (the session's pool): what activations need at their peak,
  // and how often the steady state still had to ask the system for a block.
  const MemoryPoolStats memory = session.memory_stats();
  const MemoryPlanStats plan = session.memory_plan_stats();
  const double arena_mb = static_cast<double>(plan.largest_arena_bytes) / (1024.0 * 1024.0);
  const double idle_cpu = idle_cpu_ms_per_second(300);
  const double tensors_mb = static_cast<double>(memory.peak_bytes_in_use) / (1024.0 * 1024.0);
  const int threads = options.intra_op_threads > 0 ? options.intra_op_threads : available_cores();
  const SessionStats& stats = session.stats();
  const std::string level(optimization_level_name(options.level));

  std::vector<OpShare> top_ops;
  if (profiler) {
    std::ofstream out(args.profile, std::ios::binary);
    out << profiler->chrome_trace_json();
    if (!out.good()) fail("cannot write the profile to '{}'", args.profile);
    top_ops = top_op_types(*profiler, 15);
  }

  if (args.json) {
    nlohmann::ordered_json report{
        {"model", args.model},
        {"level", level},
        {"kernels", args.session.kernels},
        {"threads", threads},
        {"parallel", args.parallel},
        {"inter_op_threads", args.inter_op_threads},
        {"concurrency", args.concurrency},
        {"warmup", args.warmup},
        {"iterations", ms.size()},
        {"session_create_ms", session_create_ms},
        {"optimize_ms", stats.optimize_seconds * 1e3},
        {"compile_ms", stats.compile_seconds * 1e3},
        {"first_run_ms", first_run_ms},
        {"min_ms", ms.front()},
        {"median_ms", percentile(ms, 50)},
        {"p90_ms", percentile(ms, 90)},
        {"p95_ms", percentile(ms, 95)},
        {"p99_ms", percentile(ms, 99)},
        {"max_ms", ms.back()},
        {"mean_ms", mean_ms},
        {"throughput", throughput},
        {"peak_rss_mb", rss_mb},
        {"peak_tensor_mb", tensors_mb},
        {"pool_system_allocations", memory.system_allocations},
        {"arena_mb", arena_mb},
        {"planned_runs", plan.planned_runs},
        {"diverged_runs", plan.diverged_runs},
        {"idle_cpu_ms_per_s", idle_cpu},
        {"spin", spin_policy_name(process_spin_policy())},
        {"nodes", {{"before", stats.nodes_loaded}, {"after", stats.nodes_optimized}}},
    };
    report["inputs"] = nlohmann::ordered_json::object();
    for (const auto& [name, value] : feeds) report["inputs"][name] = value.describe();
    if (profiler) {
      report["profile"] = args.profile;
      report["top_ops"] = nlohmann::ordered_json::array();
      for (const OpShare& op : top_ops) {
        report["top_ops"].push_back({{"op_type", op.op_type},
                                     {"total_ms", op.total_ms},
                                     {"percent", op.percent},
                                     {"calls", op.calls}});
      }
    }
    std::cout << report.dump(2) << "\n";
    return 0;
  }

  auto row = [](std::string_view label, const std::string& text) {
    std::cout << fmt::format("{:<13}{}\n", label, text);
  };
  row("model", args.model);
  std::string threading = fmt::format("{} thread{}", threads, threads == 1 ? "" : "s");
  if (args.parallel) threading += fmt::format(", parallel ({} inter-op)", args.inter_op_threads);
  row("session", fmt::format("level {}, {} kernels, {}", level, args.session.kernels, threading));
  for (const auto& [name, value] : feeds) row("input", name + ": " + value.describe());
  row("create", fmt::format("{:.1f} ms (optimize {:.1f} ms, compile {:.1f} ms)", session_create_ms,
                            stats.optimize_seconds * 1e3, stats.compile_seconds * 1e3));
  row("first run", fmt::format("{:.2f} ms", first_run_ms));
  row("timed", fmt::format("{} runs after {} warmup, concurrency {}, {:.2f} s", ms.size(),
                           args.warmup, args.concurrency, timed.wall_seconds));
  row("latency ms", fmt::format("min {:.2f}  p50 {:.2f}  p90 {:.2f}  p95 {:.2f}  p99 {:.2f}  "
                                "max {:.2f}  mean {:.2f}",
                                ms.front(), percentile(ms, 50), percentile(ms, 90),
                                percentile(ms, 95), percentile(ms, 99), ms.back(), mean_ms));
  row("throughput", fmt::format("{:.2f} inferences/s", throughput));
  row("peak RSS", fmt::format("{:.1f} MB", rss_mb));
  row("idle CPU", fmt::format("{:.1f} ms per s in the 300 ms after the runs (spin {})", idle_cpu,
                              spin_policy_name(process_spin_policy())));
  row("tensors", fmt::format("{:.1f} MB at peak, {} blocks from the system, {} reuses", tensors_mb,
                             memory.system_allocations, memory.reuses));
  if (plan.plans > 0) {
    row("memory plan",
        fmt::format("arena {:.1f} MB for {} tensors; {} runs planned, {} left "
                    "their plan",
                    arena_mb, plan.planned_tensors, plan.planned_runs, plan.diverged_runs));
  } else {
    row("memory plan",
        options.parallel_execution ? "none (parallel execution uses the pool)" : "none");
  }
  row("nodes",
      fmt::format("{} -> {} after optimization", stats.nodes_loaded, stats.nodes_optimized));
  if (profiler) {
    std::cout << fmt::format("\nprofile written to {}; kernel time by op type:\n", args.profile);
    std::cout << fmt::format("  {:<28}{:>12}{:>9}{:>9}\n", "op type", "total ms", "%", "calls");
    for (const OpShare& op : top_ops) {
      std::cout << fmt::format("  {:<28}{:>12.2f}{:>8.1f}%{:>9}\n", op.op_type, op.total_ms,
                               op.percent, op.calls);
    }
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
  return {command, [args] { return run_bench(*args); }};
}

}  // namespace onnxkit::cli
