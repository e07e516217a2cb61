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
  const std::string bytes = testing::read_file(kExample);
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

namespace onnxkit {
namespace {

TEST(CliRun, RandomInputsWithDimsAndOutputFiles) {
  testing::TempDir dir;
  auto result = testing::run_command(onnxkit("run " + kExample +
                                             " --random --seed 3 --dim batch=2 --output-dir " +
                                             (dir / "out").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("input  input: float[2,3,32,32]"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("output logits: float[2,10]"), std::string::npos) << result.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "logits.npy"));
  // Same seed, same outputs; fed back through --input, the saved input reproduces them.
  auto again =
      testing::run_command(onnxkit("run " + kExample + " --random --seed 3 --dim batch=2"));
  auto first_line = [](const std::string& text) {
    auto at = text.find("output logits");
    return text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(first_line(result.output), first_line(again.output));
}

TEST(CliRun, MissingDimsAndInputsAreClearErrors) {
  auto no_dim = testing::run_command(onnxkit("run " + kExample + " --random"));
  EXPECT_EQ(no_dim.exit_code, 1);
  EXPECT_NE(no_dim.output.find("--dim batch=N"), std::string::npos) << no_dim.output;
  auto no_input = testing::run_command(onnxkit("run " + kExample));
  EXPECT_EQ(no_input.exit_code, 1);
  EXPECT_NE(no_input.output.find("inputs without data: input"), std::string::npos)
      << no_input.output;
  auto bad_name = testing::run_command(onnxkit("run " + kExample + " --input nope=x.npy"));
  EXPECT_EQ(bad_name.exit_code, 1);
  EXPECT_NE(bad_name.output.find("'nope'"), std::string::npos) << bad_name.output;
}

TEST(CliRun, BackendTestInputsAsPbFiles) {
  const std::string dir = ONNXKIT_TESTDATA_DIR "/node/test_add";
  auto result = testing::run_command(onnxkit("run " + dir + "/model.onnx --input x=" + dir +
                                             "/test_data_set_0/input_0.pb --input y=" + dir +
                                             "/test_data_set_0/input_1.pb"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("output sum: float[3,4,5]"), std::string::npos) << result.output;
}

TEST(CliConformance, ReportsPassAndFailAndHonoursExpectations) {
  const std::string node = ONNXKIT_TESTDATA_DIR "/node";
  auto pass =
      testing::run_command(onnxkit("conformance " + node + " --filter '^node/test_(abs|relu)$'"));
  EXPECT_EQ(pass.exit_code, 0) << pass.output;
  EXPECT_NE(pass.output.find("PASS  node/test_abs"), std::string::npos);
  EXPECT_NE(pass.output.find("2 passed, 0 failed"), std::string::npos) << pass.output;

  testing::TempDir dir;
  std::ofstream(dir / "expect.txt") << "node/test_abs  pretend it fails\n";
  auto xpass =
      testing::run_command(onnxkit("conformance " + node + " --filter '^node/test_abs$' --expect " +
                                   (dir / "expect.txt").string()));
  EXPECT_EQ(xpass.exit_code, 1) << "a listed case that passes must fail the run";
  EXPECT_NE(xpass.output.find("XPASS node/test_abs"), std::string::npos) << xpass.output;

  auto gradient = testing::run_command(
      onnxkit("conformance " ONNXKIT_TESTDATA_DIR "/simple --filter gradient_of_add$"));
  EXPECT_EQ(gradient.exit_code, 1);
  EXPECT_NE(gradient.output.find("FAIL  simple/test_gradient_of_add"), std::string::npos)
      << gradient.output;
  EXPECT_NE(gradient.output.find("0 passed, 1 failed"), std::string::npos) << gradient.output;
}

TEST(Cli, OpsListsTheRegistry) {
  auto result = run_command(onnxkit("ops --filter '^Relu$'"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("ai.onnx"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("Relu"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("1 ops"), std::string::npos) << result.output;
}

TEST(Cli, OpsCheckNamesVersionsNeitherRegisteredNorAllowed) {
  testing::TempDir dir;
  const std::string schemas = (dir / "schemas.txt").string();
  const std::string allow = (dir / "allow.txt").string();
  // Gelu has one version (20), so the table below lists every registered one.
  std::ofstream(schemas) << "# a table\nai.onnx Gelu 20\nai.onnx Gelu 99\n";
  std::ofstream(allow) << "";
  auto missing = run_command(onnxkit("ops --schemas " + schemas + " --allow " + allow));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("ai.onnx Gelu 99: not registered, and not in the allow list"),
            std::string::npos)
      << missing.output;
  std::ofstream(allow) << "ai.onnx Gelu 99  a version from the future\n";
  auto allowed = run_command(onnxkit("ops --schemas " + schemas + " --allow " + allow));
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  std::ofstream(allow) << "ai.onnx Gelu 20  stale\nai.onnx Gelu 99  a version from the future\n";
  auto stale = run_command(onnxkit("ops --schemas " + schemas + " --allow " + allow));
  EXPECT_EQ(stale.exit_code, 1) << stale.output;
  EXPECT_NE(stale.output.find("ai.onnx Gelu 20: registered now"), std::string::npos)
      << stale.output;
}

}  // namespace
}  // namespace onnxkit
