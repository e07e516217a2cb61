// End-to-end tests of `onnxkit bench`: its JSON report, the profile it writes, its errors.
// No timing assertions: only that the numbers are consistent with each other.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <vector>

#include "../test_util.h"
#include "ir/npy.h"

namespace onnxkit {
namespace {

using testing::run_command;

const std::string kExample = std::string(ONNXKIT_SOURCE_DIR) + "/examples/models/tiny_cnn.onnx";

std::string bench(const std::string& args) {
  return testing::onnxkit_binary() + " bench " + args;
}

nlohmann::json parse_report(const testing::CommandResult& result) {
  EXPECT_EQ(result.exit_code, 0) << result.output;
  try {
    return nlohmann::json::parse(result.output);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << result.output;
    return {};
  }
}

TEST(BenchCli, SpinPolicyIsAppliedAndReported) {
  // libgomp reads its wait policy before main: --spin re-runs onnxkit with it set.
  for (const char* policy : {"off", "on", "default"}) {
    auto report = parse_report(run_command(
        bench(kExample + " --json --threads 1 --iterations 2 --warmup 0 --dim batch=1 --spin " +
              policy)));
    EXPECT_EQ(report["spin"], policy) << report.dump(2);
  }
  auto bad = run_command(bench(kExample + " --spin sometimes"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--spin"), std::string::npos) << bad.output;
}

TEST(BenchCli, MemoryPlanIsReported) {
  auto planned = parse_report(
      run_command(bench(kExample + " --json --threads 1 --iterations 3 --warmup 1 --dim batch=1")));
  EXPECT_GT(planned["arena_mb"].get<double>(), 0) << planned.dump(2);
  EXPECT_GE(planned["planned_runs"].get<int>(), 3);
  EXPECT_EQ(planned["diverged_runs"], 0);
  auto pool = parse_report(run_command(bench(
      kExample + " --json --threads 1 --iterations 3 --warmup 1 --dim batch=1 --no-memory-plan")));
  EXPECT_EQ(pool["arena_mb"], 0) << pool.dump(2);
  EXPECT_EQ(pool["planned_runs"], 0);
}

TEST(BenchCli, JsonHasTheFieldsWithSaneValues) {
  auto report = parse_report(
      run_command(bench(kExample + " --json --threads 1 --iterations 7 --warmup 1 --dim batch=2")));
  ASSERT_TRUE(report.is_object());
  for (const char* field :
       {"median_ms", "p90_ms", "p95_ms", "p99_ms", "min_ms", "max_ms", "mean_ms", "throughput",
        "session_create_ms", "first_run_ms", "peak_rss_mb", "peak_tensor_mb",
        "pool_system_allocations", "iterations", "threads", "level", "nodes"}) {
    EXPECT_TRUE(report.contains(field)) << field << "\n" << report.dump(2);
  }
  EXPECT_EQ(report["iterations"], 7);
  EXPECT_EQ(report["threads"], 1);
  EXPECT_EQ(report["level"], "all");
  EXPECT_EQ(report["inputs"]["input"], "float[2,3,32,32]");
  const double min = report["min_ms"], median = report["median_ms"], p90 = report["p90_ms"],
               p99 = report["p99_ms"], max = report["max_ms"], mean = report["mean_ms"];
  EXPECT_GT(min, 0);
  EXPECT_LE(min, median);
  EXPECT_LE(median, p90);
  EXPECT_LE(p90, p99);
  EXPECT_LE(p99, max);
  EXPECT_LE(min, mean);
  EXPECT_LE(mean, max);
  EXPECT_GT(report["throughput"].get<double>(), 0);
  EXPECT_GT(report["session_create_ms"].get<double>(), 0);
  EXPECT_GT(report["first_run_ms"].get<double>(), 0);
  EXPECT_GT(report["peak_rss_mb"].get<double>(), 1);
  EXPECT_LT(report["peak_rss_mb"].get<double>(), 4096);
  EXPECT_GT(report["peak_tensor_mb"].get<double>(), 0);
  EXPECT_LT(report["peak_tensor_mb"].get<double>(), report["peak_rss_mb"].get<double>());
  EXPECT_EQ(report["nodes"]["before"], 16);
  EXPECT_GT(report["nodes"]["after"].get<int>(), 0);
  EXPECT_LT(report["nodes"]["after"].get<int>(), 16) << "level all folds BatchNormalization";
}

TEST(BenchCli, PeakRssIsTheBenchmarkedProcessOwn) {
  // A harness with a large resident set (compare_runtime.py's Python after GPT-2's outputs)
  // starts the bench: getrusage's maxrss would report the harness's, as Linux carries it
  // across execve.
  constexpr size_t kHarnessBytes = size_t{512} << 20;
  std::vector<char> resident(kHarnessBytes);
  for (size_t i = 0; i < resident.size(); i += 4096) resident[i] = static_cast<char>(i >> 12);
  // posix_spawn, as Python's subprocess: the child runs on the parent's memory until exec.
  const std::string binary = testing::onnxkit_binary();
  std::vector<std::string> args{binary,      "bench", kExample,       "--json",
                                "--threads", "1",     "--iterations", "2",
                                "--warmup",  "0",     "--dim",        "batch=1"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  testing::CommandResult result;
  char buffer[4096];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.output.append(buffer, got);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto report = parse_report(result);
  EXPECT_GT(report["peak_rss_mb"].get<double>(), 1);
  EXPECT_LT(report["peak_rss_mb"].get<double>(), 256) << "the harness's 512 MB leaked in";
  EXPECT_NE(resident[4096], resident[0]);  // keeps the pages live up to here
}

TEST(BenchCli, ConcurrencyDurationAndReferenceKernels) {
  auto concurrent = parse_report(
      run_command(bench(kExample + " --json --iterations 9 --warmup 0 --concurrency 3")));
  EXPECT_EQ(concurrent["iterations"], 9);
  EXPECT_EQ(concurrent["concurrency"], 3);
  auto timed = parse_report(run_command(
      bench(kExample + " --json --duration 0.05 --level none --kernels reference --threads 1")));
  EXPECT_GE(timed["iterations"].get<int>(), 1);
  EXPECT_EQ(timed["level"], "none");
  EXPECT_EQ(timed["nodes"]["before"], timed["nodes"]["after"]);
  auto parallel = parse_report(
      run_command(bench(kExample + " --json --iterations 2 --parallel --inter-op-threads 2")));
  EXPECT_EQ(parallel["parallel"], true);
  EXPECT_EQ(parallel["inter_op_threads"], 2);
}

TEST(BenchCli, InputsFromFiles) {
  testing::TempDir dir;
  Tensor input(DType::kFloat, {3, 3, 32, 32});
  for (int64_t i = 0; i < input.numel(); ++i) input.mutable_data<float>()[i] = (i % 7) * 0.1f;
  ASSERT_TRUE(write_npy(input, dir / "input.npy").ok());
  auto report = parse_report(run_command(
      bench(kExample + " --json --iterations 2 --input input=" + (dir / "input.npy").string())));
  EXPECT_EQ(report["inputs"]["input"], "float[3,3,32,32]");
}

TEST(BenchCli, TextReportAndProfile) {
  testing::TempDir dir;
  const auto trace_path = dir / "trace.json";
  auto result = run_command(bench(kExample + " --iterations 3 --profile " + trace_path.string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* expected :
       {"session", "level all", "create", "first run", "latency ms", "p50", "p99", "throughput",
        "peak RSS", "16 -> ", "kernel time by op type", "Conv"}) {
    EXPECT_NE(result.output.find(expected), std::string::npos) << expected << "\n" << result.output;
  }
  std::ifstream file(trace_path);
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  auto trace = nlohmann::json::parse(text.str());
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_FALSE(trace["traceEvents"].empty());
  EXPECT_EQ(trace["traceEvents"][0]["ph"], "X");

  auto json = parse_report(run_command(
      bench(kExample + " --json --iterations 2 --profile " + (dir / "t2.json").string())));
  ASSERT_TRUE(json["top_ops"].is_array());
  ASSERT_FALSE(json["top_ops"].empty());
  double percent = 0;
  for (const auto& op : json["top_ops"]) percent += op["percent"].get<double>();
  EXPECT_NEAR(percent, 100.0, 0.5) << "tiny_cnn has fewer than 15 op types";
}

TEST(BenchCli, BadUsageExitsWith2) {
  for (const std::string& args :
       {kExample + " --iterations 0", kExample + " --concurrency 0",
        kExample + " --iterations 3 --duration 1", kExample + " --inter-op-threads 2",
        kExample + " --level fastest", kExample + " --frobnicate", std::string("")}) {
    auto result = run_command(bench(args));
    EXPECT_EQ(result.exit_code, 2) << args << "\n" << result.output;
  }
  auto skip = run_command(bench(kExample + " --skip-pass no_such_pass"));
  EXPECT_EQ(skip.exit_code, 2) << skip.output;
}

TEST(BenchCli, BadInputsExitWith1AndSayWhy) {
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"/no/such/model.onnx", "model.onnx"},
           {kExample + " --input nope=x.npy", "'nope'"},
           {kExample + " --input input=/no/such/file.npy", "file.npy"},
           {kExample + " --dim batch=two", "batch"},
           {kExample + " --profile /no/such/dir/trace.json --iterations 1", "trace.json"},
       }) {
    auto result = run_command(bench(c.args));
    EXPECT_EQ(result.exit_code, 1) << c.args << "\n" << result.output;
    EXPECT_NE(result.output.find(c.message), std::string::npos) << c.args << "\n" << result.output;
  }
}

}  // namespace
}  // namespace onnxkit
