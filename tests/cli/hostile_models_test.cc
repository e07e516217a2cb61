// The hostile models of tests/data/hostile/ (made by make_hostile_models.py) through the
// onnxkit binary: each case in cases.txt must end with its exit code and one line naming
// what is wrong, quickly and without memory beyond what a tiny valid model takes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "../test_util.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

const fs::path kHostile = fs::path(ONNXKIT_SOURCE_DIR) / "tests/data/hostile";

struct HostileCase {
  std::string model;
  std::string command;  // run | simplify | inspect | bench | quantize | quantize-static
  int exit_code = 1;
  std::string fragment;  // the error line must contain it
};

std::vector<HostileCase> read_cases() {
  std::vector<HostileCase> cases;
  std::ifstream in(kHostile / "cases.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    HostileCase c;
    fields >> c.model >> c.command >> c.exit_code;
    std::getline(fields >> std::ws, c.fragment);
    cases.push_back(c);
  }
  return cases;
}

std::string command_line(const std::string& command, const fs::path& model,
                         const fs::path& out_dir) {
  // stderr alone (stdout: the session and inputs `run` prints before it fails).
  const std::string binary = testing::onnxkit_binary();
  const std::string stderr_only = " 2>&1 >/dev/null";
  if (command == "run") return binary + " run --random " + model.string() + stderr_only;
  if (command == "simplify") {
    // The check forced: --check-n auto skips it on a model this big (the hostile sizes are
    // what it must refuse to run), and simplifying alone would succeed.
    return binary + " simplify --check-n 1 " + model.string() + " " +
           (out_dir / "out.onnx").string() + stderr_only;
  }
  if (command == "bench") {
    return binary + " bench --iterations 1 --warmup 0 " + model.string() + stderr_only;
  }
  if (command == "quantize" || command == "quantize-static") {
    const std::string mode = command == "quantize" ? "" : " --mode static --calibration-samples 1";
    return binary + " quantize" + mode + " " + model.string() + " " +
           (out_dir / "out.onnx").string() + stderr_only;
  }
  return binary + " inspect " + model.string() + (command == "inspect" ? "" : stderr_only);
}

TEST(HostileModels, EachFailsWithOneLineQuicklyAndInLittleMemory) {
  const auto cases = read_cases();
  ASSERT_GE(cases.size(), 30u) << "tests/data/hostile/cases.txt is missing or short";
  testing::TempDir dir;
  // What the same commands take on a tiny valid model: the bar for memory.
  const fs::path tiny = fs::path(ONNXKIT_SOURCE_DIR) / "examples/models/tiny_cnn.onnx";
  long baseline_kib = 0;
  for (const char* command : {"run", "simplify", "inspect"}) {
    auto result = testing::run_command(command_line(command, tiny, dir.path()) +
                                       (std::string(command) == "run" ? " --dim batch=1" : ""));
    fs::remove(dir.path() / "out.onnx");
    ASSERT_EQ(result.exit_code, 0) << command << ":\n" << result.output;
    baseline_kib = std::max(baseline_kib, result.peak_rss_kib);
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model + " " + c.command);
    const fs::path model = kHostile / (c.model + ".onnx");
    ASSERT_TRUE(fs::exists(model)) << model;
    auto result = testing::run_command(command_line(c.command, model, dir.path()));
    EXPECT_EQ(result.exit_code, c.exit_code) << result.output;
    std::string output = result.output;
    while (!output.empty() && output.back() == '\n') output.pop_back();
    if (c.exit_code != 0) {
      EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 0) << "expected one line, got:\n"
                                                                   << output;
    }
    EXPECT_NE(output.find(c.fragment), std::string::npos) << "expected '" << c.fragment << "' in:\n"
                                                          << output;
    EXPECT_LT(result.cpu_seconds, 1.0) << output;
    EXPECT_LT(result.peak_rss_kib, baseline_kib + 32 * 1024)
        << "peak RSS " << result.peak_rss_kib << " KiB, a tiny model takes " << baseline_kib;
    EXPECT_FALSE(c.exit_code != 0 && fs::exists(dir.path() / "out.onnx"))
        << "a hostile model was written out";
    fs::remove(dir.path() / "out.onnx");
  }
}

// A model path that names a FIFO or a folder, or external data in a FIFO: refused at once. Opening
// a FIFO for reading waited for a writer forever (`timeout` ends the command if it still does).
TEST(HostileModels, AFifoOrAFolderAsTheModelOrItsDataFailsAtOnce) {
  testing::TempDir dir;
  const fs::path fifo = dir / "model.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path folder = dir / "folder.onnx";
  fs::create_directory(folder);
  // And a FIFO where a model keeps its external data.
  const fs::path external = dir / "external";
  fs::create_directory(external);
  fs::copy_file(kHostile / "weights_in_out_onnx_data.onnx", external / "model.onnx");
  ASSERT_EQ(::mkfifo((external / "out.onnx.data").c_str(), 0600), 0);
  for (const fs::path& path : {fifo, folder, external / "model.onnx"}) {
    for (const char* command : {"run --random", "inspect"}) {
      SCOPED_TRACE(path.string() + " " + command);
      auto result = testing::run_command("timeout 20 " + testing::onnxkit_binary() + " " + command +
                                         " " + path.string() + " 2>&1 >/dev/null");
      EXPECT_EQ(result.exit_code, 1) << result.output;
      EXPECT_NE(result.output.find(path.string()), std::string::npos) << result.output;
      EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
    }
  }
}

// simplify and quantize with --save-as-external-data write OUT.data beside OUT: where the
// input keeps its weights, that would replace them (the input then read the output's).
TEST(HostileModels, SavingExternalDataNeverReplacesTheInputsWeights) {
  testing::TempDir dir;
  for (const char* file : {"weights_in_out_onnx_data.onnx", "out.onnx.data"}) {
    fs::copy_file(kHostile / file, dir / file);
  }
  const auto weights = [&] { return testing::read_file(dir / "out.onnx.data"); };
  const std::string before = weights();
  for (const char* command : {"simplify", "quantize"}) {
    SCOPED_TRACE(command);
    auto result = testing::run_command(testing::onnxkit_binary() + " " + command +
                                       " --save-as-external-data " +
                                       (dir / "weights_in_out_onnx_data.onnx").string() + " " +
                                       (dir / "out.onnx").string() + " 2>&1 >/dev/null");
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_NE(result.output.find("the input model reads its tensor 'w' from it"), std::string::npos)
        << result.output;
    EXPECT_FALSE(fs::exists(dir / "out.onnx"));
    EXPECT_EQ(weights(), before);
  }
}

}  // namespace
}  // namespace onnxkit
