// --custom-op-lib on run, bench and simplify, with the example library (examples/custom_op:
// com.microsoft::Inverse) and libraries that are wrong.
#include <gtest/gtest.h>

#include <filesystem>

#include "../test_util.h"
#include "ir/graph.h"
#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

std::string onnxkit(const std::string& args) {
  return testing::onnxkit_binary() + " " + args;
}

const std::string kLibrary = std::string(" --custom-op-lib ") + INVERSE_OP_LIB + " ";
const std::string kModel = INVERSE_MODEL;

TEST(CustomOpCli, RunPrintsTheOutput) {
  auto result = run_command(onnxkit("run --random --dim batch=2" + kLibrary + kModel));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("y"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("[2,3,3]"), std::string::npos) << result.output;
}

TEST(CustomOpCli, RunWithoutTheLibraryNamesTheOp) {
  auto result = run_command(onnxkit("run --random --dim batch=2 " + kModel));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("Inverse"), std::string::npos) << result.output;
}

TEST(CustomOpCli, BenchRunsIt) {
  auto result = run_command(onnxkit("bench --iterations 5 --dim batch=4" + kLibrary + kModel));
  ASSERT_EQ(result.exit_code, 0) << result.output;
}

TEST(CustomOpCli, SimplifyFoldsWithTheLibraryAndChecks) {
  testing::TempDir dir;
  auto result =
      run_command(onnxkit("simplify" + kLibrary + kModel + " " + (dir / "out.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("check: 1 run(s), outputs match"), std::string::npos)
      << result.output;
  Model simplified = load_model(dir / "out.onnx").value();
  // Inverse(x), MatMul, Mul: inverse(w) and scale * 2 folded; the result runs with the library.
  EXPECT_EQ(simplified.graph().nodes().size(), 3u);
  result =
      run_command(onnxkit("run --random --dim batch=1" + kLibrary + (dir / "out.onnx").string()));
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(CustomOpCli, SimplifyWithoutTheLibraryKeepsTheOp) {
  testing::TempDir dir;
  auto result = run_command(onnxkit("simplify " + kModel + " " + (dir / "out.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("--custom-op-lib"), std::string::npos) << result.output;
  Model simplified = load_model(dir / "out.onnx").value();
  EXPECT_EQ(simplified.graph().nodes().size(), 4u);  // scale * 2 folded, both Inverse kept
}

TEST(CustomOpCli, BadLibrariesNameTheLibrary) {
  testing::TempDir dir;
  const std::string out = (dir / "out.onnx").string();
  for (const std::string& library :
       {std::string(BAD_OP_NO_EXPORT_LIB), std::string(BAD_OP_TWICE_LIB),
        (dir / "missing.so").string()}) {
    for (const std::string& command :
         {"run --random --dim batch=1 --custom-op-lib " + library + " " + kModel,
          "bench --iterations 1 --custom-op-lib " + library + " " + kModel,
          "simplify --custom-op-lib " + library + " " + kModel + " " + out}) {
      auto result = run_command(onnxkit(command));
      EXPECT_EQ(result.exit_code, 1) << command << "\n" << result.output;
      EXPECT_NE(result.output.find("custom op library '" + library + "'"), std::string::npos)
          << command << "\n"
          << result.output;
    }
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace onnxkit
