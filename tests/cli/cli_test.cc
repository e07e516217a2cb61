// End-to-end tests of the onnxkit binary: exit codes, messages, output formats.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "../test_util.h"

namespace onnxkit {
namespace {

using testing::run_command;

const std::string kExample = std::string(ONNXKIT_SOURCE_DIR) + "/examples/models/tiny_cnn.onnx";

std::string onnxkit(const std::string& args) {
  return testing::onnxkit_binary() + " " + args;
}

TEST(Cli, InspectShowsTheModel) {
  auto result = run_command(onnxkit("inspect " + kExample));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* expected :
       {"ir_version   7", "producer     onnxkit-examples 1", "opsets       ai.onnx 13",
        "input: float[batch,3,32,32]", "logits: float[batch,10]", "nodes        16",
        "initializers 17", "BatchNormalization", "Conv "}) {
    EXPECT_NE(result.output.find(expected), std::string::npos)
        << "missing '" << expected << "' in:\n"
        << result.output;
  }
}

TEST(Cli, InspectJson) {
  auto result = run_command(onnxkit("inspect --json " + kExample));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["ir_version"], 7);
  EXPECT_EQ(json["opsets"]["ai.onnx"], 13);
  EXPECT_EQ(json["inputs"][0]["shape"], nlohmann::json::parse(R"(["batch",3,32,32])"));
  EXPECT_EQ(json["nodes"], 16);
  EXPECT_EQ(json["op_histogram"]["Conv"], 2);
  EXPECT_EQ(json["initializers"], 17);
  EXPECT_GT(json["parameters"].get<int64_t>(), 1000);
  EXPECT_GT(json["file_bytes"].get<int64_t>(), 1000);
}

TEST(Cli, InspectCountsSubgraphNodes) {
  auto result =
      run_command(onnxkit("inspect --json " ONNXKIT_TESTDATA_DIR "/node/test_if/model.onnx"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto json = nlohmann::json::parse(result.output);
  EXPECT_EQ(json["nodes"], 1);
  EXPECT_EQ(json["nodes_total"], 3);
  EXPECT_EQ(json["subgraphs"], 2);
}

TEST(Cli, UsageErrorsExitWith2) {
  for (const char* args : {"", "frobnicate", "inspect", "inspect --no-such-flag x.onnx"}) {
    auto result = run_command(onnxkit(args));
    EXPECT_EQ(result.exit_code, 2) << "args '" << args << "':\n" << result.output;
    EXPECT_NE(result.output.find("Usage"), std::string::npos) << result.output;
  }
  auto unknown = run_command(onnxkit("frobnicate"));
  EXPECT_NE(unknown.output.find("unknown subcommand 'frobnicate'"), std::string::npos);
}

TEST(Cli, HelpExitsWith0) {
  EXPECT_EQ(run_command(onnxkit("--help")).exit_code, 0);
  EXPECT_EQ(run_command(onnxkit("inspect --help")).exit_code, 0);
}

TEST(Cli, BadFilesExitWith1AndOneClearLine) {
  testing::TempDir dir;
  std::ofstream(dir / "garbage.onnx") << "this is not a model at all";
  std::ifstream source(kExample, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(source)), {});
  std::ofstream(dir / "cut.onnx", std::ios::binary).write(bytes.data(), bytes.size() / 3);
  for (const auto& [file, fragment] : std::vector<std::pair<std::string, std::string>>{
           {(dir / "missing.onnx").string(), "no such file"},
           {(dir / "garbage.onnx").string(), "not a valid ONNX file"},
           {(dir / "cut.onnx").string(), "cut.onnx"}}) {
    auto result = run_command(onnxkit("inspect " + file));
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_NE(result.output.find(file), std::string::npos) << result.output;
    EXPECT_NE(result.output.find(fragment), std::string::npos) << result.output;
    EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  }
}

}  // namespace
}  // namespace onnxkit
