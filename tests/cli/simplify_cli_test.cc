// End-to-end: `onnxkit simplify` on small PyTorch exports checked into tests/data/models
// (made by bench/export_models.py --small), verified against PyTorch's own outputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "../test_util.h"
#include "onnx/onnx_checks.h"
#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

const fs::path kModels = fs::path(ONNXKIT_SOURCE_DIR) / "tests/data/models";

std::string onnxkit(const std::string& args) {
  return testing::onnxkit_binary() + " " + args;
}

class SimplifyExport : public ::testing::TestWithParam<std::string> {};

TEST_P(SimplifyExport, FewerNodesSameOutputsValidOnnx) {
  testing::TempDir dir;
  const fs::path source = kModels / GetParam();
  const fs::path out_case = dir / GetParam();
  fs::create_directories(out_case);
  auto result = run_command(onnxkit("simplify --json " + (source / "model.onnx").string() + " " +
                                    (out_case / "model.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output);
  EXPECT_TRUE(report["check"]["ok"].get<bool>());
  EXPECT_EQ(report["check"]["runs"], 1);
  EXPECT_LT(report["after"]["nodes"].get<int>(), report["before"]["nodes"].get<int>());
  EXPECT_EQ(report["after"]["ops"].count("Constant"), 0u) << "constants stay as initializers";
  EXPECT_EQ(report["after"]["ops"].count("BatchNormalization"), 0u) << "BN is fused";

  // The simplified model is standard ONNX that passes the checker...
  auto model = load_model(out_case / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  Status checked = check_model(model.value(), true);
  EXPECT_TRUE(checked.ok()) << checked.message();
  // ...and still computes what PyTorch computed.
  fs::copy(source / "test_data_set_0", out_case / "test_data_set_0");
  auto conformance =
      run_command(onnxkit("conformance --rtol 1e-3 --atol 1e-4 " + out_case.string()));
  EXPECT_EQ(conformance.exit_code, 0) << conformance.output;
}

INSTANTIATE_TEST_SUITE_P(SmallExports, SimplifyExport,
                         ::testing::Values("bert_tiny", "convnet_bn_tiny", "gpt2_tiny", "vit_tiny",
                                           "yolo_tiny", "fpn_dynamic_tiny", "lstm_state_tiny"));

// The same exports converted up to modern opsets first (libonnx's converter to 17, onnxkit's
// adapters past it): no refusal, a valid result as far as libonnx can tell, PyTorch's outputs.
class SimplifyModernOpset : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(SimplifyModernOpset, ConvertsSimplifiesAndMatches) {
  const auto& [name, opset] = GetParam();
  testing::TempDir dir;
  const fs::path source = kModels / name;
  const fs::path out_case = dir / name;
  fs::create_directories(out_case);
  auto result = run_command(onnxkit("simplify --json --target-opset " + std::to_string(opset) +
                                    " " + (source / "model.onnx").string() + " " +
                                    (out_case / "model.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output);
  EXPECT_TRUE(report["check"]["ok"].get<bool>());
  auto model = load_model(out_case / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ(model.value().opset_version(""), opset);
  std::vector<std::string> notes;
  Status checked = check_model(model.value(), false, &notes);
  EXPECT_TRUE(checked.ok()) << checked.message();
  fs::copy(source / "test_data_set_0", out_case / "test_data_set_0");
  auto conformance =
      run_command(onnxkit("conformance --rtol 1e-3 --atol 1e-4 " + out_case.string()));
  EXPECT_EQ(conformance.exit_code, 0) << conformance.output;
}

INSTANTIATE_TEST_SUITE_P(
    SmallExports, SimplifyModernOpset,
    ::testing::Combine(::testing::Values("bert_tiny", "convnet_bn_tiny", "gpt2_tiny", "vit_tiny",
                                         "yolo_tiny", "fpn_dynamic_tiny", "lstm_state_tiny"),
                       ::testing::Values(18, 21)));

// Dynamic models simplify with default options and stay dynamic: an FPN whose N, H and W
// are all dynamic and that downsamples 32x (the check sizes H and W for that), and an LSTM
// with state inputs (one `batch` across input, h and c).
TEST(SimplifyCli, DynamicModelsKeepTheirDims) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"fpn_dynamic_tiny", {"x: float[N,3,H,W]", "mask: float[N,1,H,W]"}},
      {"lstm_state_tiny",
       {"input: float[batch,sequence]", "h: float[2,batch,16]", "c: float[2,batch,16]",
        "output: float[batch,sequence]", "hn: float[2,batch,16]", "cn: float[2,batch,16]"}}};
  for (const auto& [name, types] : cases) {
    testing::TempDir dir;
    auto result = run_command(onnxkit("simplify " + (kModels / name / "model.onnx").string() + " " +
                                      (dir / "o.onnx").string()));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("outputs match"), std::string::npos) << result.output;
    auto model = load_model(dir / "o.onnx");
    ASSERT_TRUE(model.ok()) << model.error();
    std::vector<std::string> actual;
    for (const auto* values : {&model.value().graph().inputs(), &model.value().graph().outputs()}) {
      for (const Value* value : *values) {
        actual.push_back(value->name() + ": " + value_type_to_string(value->type()));
      }
    }
    EXPECT_EQ(actual, types) << name;
  }
}

// Shaped like models shipped in PyPI/npm packages (tests/data/models/
// make_package_like_models.py): paddle2onnx's -1 batch reads as an unknown dim, and a carried
// state [2,?,8] with no dim names gets the input's batch in the check. Both simplify with
// default options, stay dynamic and compute what ONNX Runtime computed.
TEST(SimplifyCli, PackageLikeModelsSimplifyWithDefaultOptions) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"paddle_unknown_dims_tiny", {"x: float[?,3,?,?]"}},
      {"vad_unnamed_state_tiny", {"input: float[?,?]", "state: float[2,?,8]"}}};
  for (const auto& [name, types] : cases) {
    testing::TempDir dir;
    const fs::path out_case = dir / name;
    fs::create_directories(out_case);
    auto result = run_command(onnxkit("simplify " + (kModels / name / "model.onnx").string() + " " +
                                      (out_case / "model.onnx").string()));
    ASSERT_EQ(result.exit_code, 0) << name << "\n" << result.output;
    EXPECT_NE(result.output.find("outputs match"), std::string::npos) << result.output;
    auto model = load_model(out_case / "model.onnx");
    ASSERT_TRUE(model.ok()) << model.error();
    std::vector<std::string> actual;
    for (const Value* value : model.value().graph().inputs()) {
      actual.push_back(value->name() + ": " + value_type_to_string(value->type()));
    }
    EXPECT_EQ(actual, types) << name;
    fs::copy(kModels / name / "test_data_set_0", out_case / "test_data_set_0");
    auto conformance =
        run_command(onnxkit("conformance --rtol 1e-4 --atol 1e-5 " + out_case.string()));
    EXPECT_EQ(conformance.exit_code, 0) << name << "\n" << conformance.output;
  }
}

TEST(SimplifyCli, TestInputShapeSetsTheCheckAndKeepsTheModelDynamic) {
  testing::TempDir dir;
  const std::string in = (kModels / "fpn_dynamic_tiny" / "model.onnx").string();
  auto result = run_command(onnxkit("simplify --json --check-kernels reference " + in + " " +
                                    (dir / "o.onnx").string() + " --test-input-shape x:2,3,64,96"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output);
  EXPECT_TRUE(report["check"]["ok"].get<bool>());
  EXPECT_EQ(report["check"]["dims"], "N=2, H=64, W=96");
  auto model = load_model(dir / "o.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_EQ(value_type_to_string(model.value().graph().inputs()[0]->type()), "float[N,3,H,W]");

  // 48 is no multiple of 32: the check fails and says which dims the flags set.
  auto bad = run_command(onnxkit("simplify " + in + " " + (dir / "p.onnx").string() +
                                 " --test-input-shape x:1,3,48,48"));
  EXPECT_EQ(bad.exit_code, 1);
  for (const char* expected :
       {"cannot be broadcast", "H (x[2])", "--test-input-shape x", "--overwrite-input-shape"}) {
    EXPECT_NE(bad.output.find(expected), std::string::npos) << expected << "\n" << bad.output;
  }
  auto symbol = run_command(onnxkit("simplify " + in + " " + (dir / "q.onnx").string() +
                                    " --test-input-shape x:1,3,H,64"));
  EXPECT_EQ(symbol.exit_code, 1);
  EXPECT_NE(symbol.output.find("'H' is not a size"), std::string::npos) << symbol.output;
}

TEST(SimplifyCli, RefusesOnlyOpsetsNewerThanOnnx123) {
  testing::TempDir dir;
  auto result = run_command(onnxkit("simplify --target-opset 29 " +
                                    (kModels / "vit_tiny" / "model.onnx").string() + " " +
                                    (dir / "out.onnx").string()));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("1 to 28"), std::string::npos) << result.output;
}

TEST(SimplifyCli, FoldsTheExampleAndPrintsTheTable) {
  testing::TempDir dir;
  auto result =
      run_command(onnxkit("simplify " ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx " +
                          (dir / "out.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* expected : {"BatchNormalization", "original", "simplified", "nodes", "16",
                               "check: 1 run(s), outputs match", "wrote"}) {
    EXPECT_NE(result.output.find(expected), std::string::npos) << expected << "\n" << result.output;
  }
  EXPECT_TRUE(fs::exists(dir / "out.onnx"));
}

TEST(SimplifyCli, CheckAutoRunsWhatIsCheapSkipsWhatIsNotAndACountForcesIt) {
  const std::string model = ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx";
  testing::TempDir dir;
  const std::string out = (dir / "out.onnx").string();
  auto simplify = [&](const std::string& flags) {
    fs::remove(out);
    return run_command(onnxkit("simplify " + model + " " + out + flags));
  };
  // Batch 1: about 0.5M units a run, well inside auto's budget.
  auto cheap = simplify(" --json");
  ASSERT_EQ(cheap.exit_code, 0) << cheap.output;
  auto check = nlohmann::json::parse(cheap.output)["check"];
  EXPECT_EQ(check["requested"], "auto");
  EXPECT_EQ(check["runs"], 1);
  EXPECT_GT(check["estimated_cost"].get<uint64_t>(), 0u);
  EXPECT_FALSE(check.contains("skipped"));
  // Batch 1024 in the check: over the budget. Skipped, saying why and how to force it; the
  // model is written.
  const std::string big = " --test-input-shape input:1024,3,32,32";
  auto skipped = simplify(big);
  ASSERT_EQ(skipped.exit_code, 0) << skipped.output;
  EXPECT_NE(skipped.output.find("check skipped: its two runs would cost about"), std::string::npos)
      << skipped.output;
  EXPECT_NE(skipped.output.find("--check-n 1 runs it"), std::string::npos) << skipped.output;
  EXPECT_EQ(skipped.output.find("run(s)"), std::string::npos) << skipped.output;
  EXPECT_TRUE(fs::exists(out));
  auto skipped_json = simplify(big + " --json");
  ASSERT_EQ(skipped_json.exit_code, 0) << skipped_json.output;
  check = nlohmann::json::parse(skipped_json.output)["check"];
  EXPECT_EQ(check["runs"], 0);
  EXPECT_TRUE(check["ok"].get<bool>());
  EXPECT_GT(check["estimated_cost"].get<uint64_t>(), 100'000'000u);
  EXPECT_NE(check["skipped"].get<std::string>().find("--check-n 1"), std::string::npos);
  // A count forces that many runs (at batch 2: cheap either way), 0 none and no line.
  auto forced = simplify(" --check-n 2 --test-input-shape input:2,3,32,32");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_NE(forced.output.find("check: 2 run(s), outputs match"), std::string::npos)
      << forced.output;
  auto off = simplify(" --check-n 0");
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(off.output.find("check"), off.output.find("check 0.00s")) << off.output;
  EXPECT_EQ(off.output.find("check skipped"), std::string::npos) << off.output;
  for (const char* bad : {"-1", "often", "2x"}) {
    auto wrong = simplify(std::string(" --check-n ") + bad);
    EXPECT_EQ(wrong.exit_code, 1) << bad;
    EXPECT_NE(wrong.output.find("--check-n: expected auto or a count"), std::string::npos)
        << wrong.output;
    EXPECT_FALSE(fs::exists(out)) << bad;
  }
}

TEST(SimplifyCli, ThreadsSleepBetweenLoopsUnlessAskedToSpin) {
  // libgomp reads its wait policy before main: simplify re-runs itself with it set.
  const std::string model = ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx";
  for (const auto& [flag, policy] : std::vector<std::pair<std::string, std::string>>{
           {"", "off"}, {" --spin default", "default"}, {" --spin=on", "on"}}) {
    testing::TempDir dir;
    auto result =
        run_command("env -u OMP_WAIT_POLICY " + onnxkit("simplify --json" + flag + " " + model +
                                                        " " + (dir / "out.onnx").string()));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(nlohmann::json::parse(result.output)["check"]["spin"], policy) << flag;
  }
  // A policy in the environment wins over simplify's default.
  testing::TempDir dir;
  auto result =
      run_command("env OMP_WAIT_POLICY=active " +
                  onnxkit("simplify --json " + model + " " + (dir / "out.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(nlohmann::json::parse(result.output)["check"]["spin"], "on");
}

TEST(SimplifyCli, RefusesToOverwriteItsInput) {
  testing::TempDir dir;
  fs::copy(ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx", dir / "m.onnx");
  const auto before = fs::file_size(dir / "m.onnx");
  auto same = run_command(
      onnxkit("simplify " + (dir / "m.onnx").string() + " " + (dir / "m.onnx").string()));
  EXPECT_EQ(same.exit_code, 1);
  EXPECT_NE(same.output.find("refusing to write over the input"), std::string::npos) << same.output;
  auto dotted = run_command(
      onnxkit("simplify " + (dir / "m.onnx").string() + " " + (dir / "." / "m.onnx").string()));
  EXPECT_EQ(dotted.exit_code, 1) << dotted.output;
  EXPECT_EQ(fs::file_size(dir / "m.onnx"), before);
}

TEST(SimplifyCli, OptionErrorsAreClear) {
  testing::TempDir dir;
  const std::string in = ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx";
  const std::string out = (dir / "o.onnx").string();
  auto pass =
      run_command(onnxkit("simplify " + in + " " + out + " --skip-optimization no_such_pass"));
  EXPECT_EQ(pass.exit_code, 1);
  EXPECT_NE(pass.output.find("unknown pass 'no_such_pass'"), std::string::npos) << pass.output;
  auto shape =
      run_command(onnxkit("simplify " + in + " " + out + " --overwrite-input-shape nope:1,3"));
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_NE(shape.output.find("'nope'"), std::string::npos) << shape.output;
  auto rank =
      run_command(onnxkit("simplify " + in + " " + out + " --overwrite-input-shape input:1,3"));
  EXPECT_EQ(rank.exit_code, 1);
  EXPECT_NE(rank.output.find("rank 4"), std::string::npos) << rank.output;
  // A missing output directory is reported before any work is done.
  auto missing_dir =
      run_command(onnxkit("simplify " + in + " " + (dir / "no_such_dir" / "o.onnx").string()));
  EXPECT_EQ(missing_dir.exit_code, 1);
  EXPECT_NE(missing_dir.output.find("no_such_dir does not exist"), std::string::npos)
      << missing_dir.output;
  EXPECT_EQ(missing_dir.output.find("check:"), std::string::npos) << missing_dir.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(SimplifyCli, OverwriteInputShapeMakesShapesStatic) {
  testing::TempDir dir;
  auto result =
      run_command(onnxkit("simplify --json " ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx " +
                          (dir / "o.onnx").string() + " --overwrite-input-shape input:2,3,32,32"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto model = load_model(dir / "o.onnx");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(value_type_to_string(model.value().graph().inputs()[0]->type()), "float[2,3,32,32]");
  EXPECT_EQ(value_type_to_string(model.value().graph().outputs()[0]->type()), "float[2,10]");
}

TEST(SimplifyCli, SkipAllOptimizationKeepsTheGraph) {
  testing::TempDir dir;
  auto result = run_command(onnxkit("simplify --json --skip-optimization " ONNXKIT_SOURCE_DIR
                                    "/examples/models/tiny_cnn.onnx " +
                                    (dir / "o.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["after"]["nodes"], report["before"]["nodes"]);
}

TEST(SimplifyCli, ExplainNamesWhatStayedDynamic) {
  testing::TempDir dir;
  auto result =
      run_command(onnxkit("simplify --explain " + (kModels / "bert_tiny" / "model.onnx").string() +
                          " " + (dir / "o.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("not folded"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace onnxkit
