// SessionOptions' resource bounds through Session::run: the node at fault is named, and a
// run within its bounds is unchanged.
#include <gtest/gtest.h>

#include <filesystem>

#include "onnxkit/session.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

const fs::path kHostile = fs::path(ONNXKIT_SOURCE_DIR) / "tests/data/hostile";
const fs::path kTinyCnn = fs::path(ONNXKIT_SOURCE_DIR) / "examples/models/tiny_cnn.onnx";

std::string run_error(const fs::path& model, const SessionOptions& options,
                      const NamedValues& inputs = {}) {
  auto session = Session::load(model, options);
  if (!session) return session.error();
  auto outputs = session.value()->run(inputs);
  return outputs ? "" : outputs.error();
}

NamedValues tiny_cnn_input() {
  return {{"input", RuntimeValue(Tensor(DType::kFloat, {1, 3, 32, 32}))}};
}

TEST(ResourceLimits, TensorBoundNamesTheNode) {
  const std::string error = run_error(kHostile / "constant_of_shape_huge.onnx", {});
  EXPECT_NE(error.find("[ConstantOfShape] node 'cos'"), std::string::npos) << error;
  EXPECT_NE(error.find("--max-tensor-bytes"), std::string::npos) << error;
}

TEST(ResourceLimits, SmallBoundsStopAnOrdinaryModelAndLargeOnesDoNot) {
  for (auto level : {OptimizationLevel::kNone, OptimizationLevel::kAll}) {
    SessionOptions options;
    options.level = level;
    EXPECT_EQ(run_error(kTinyCnn, options, tiny_cnn_input()), "");
    options.max_tensor_bytes = 1024;
    std::string error = run_error(kTinyCnn, options, tiny_cnn_input());
    EXPECT_NE(error.find("node '"), std::string::npos) << error;
    EXPECT_NE(error.find("--max-tensor-bytes"), std::string::npos) << error;
    options.max_tensor_bytes = 0;
    options.max_run_bytes = 16 * 1024;
    error = run_error(kTinyCnn, options, tiny_cnn_input());
    EXPECT_NE(error.find("--max-run-bytes"), std::string::npos) << error;
  }
}

TEST(ResourceLimits, LoopStopsAtTheBoundItIsGiven) {
  SessionOptions options;
  options.max_loop_iterations = 10;
  const std::string error = run_error(kHostile / "while_without_progress.onnx", options);
  EXPECT_NE(error.find("[Loop] node 'while': stopped after 10 iterations"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace onnxkit
