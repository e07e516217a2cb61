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

struct RunError {
  std::string message;  // "" when the run succeeded
  ErrorKind kind = ErrorKind::kFailed;
};

RunError run_failure(const fs::path& model, const SessionOptions& options,
                     const NamedValues& inputs = {}) {
  auto session = Session::load(model, options);
  if (!session) return {session.error(), session.error_kind()};
  auto outputs = session.value()->run(inputs);
  if (outputs) return {};
  return {outputs.error(), outputs.error_kind()};
}

std::string run_error(const fs::path& model, const SessionOptions& options,
                      const NamedValues& inputs = {}) {
  return run_failure(model, options, inputs).message;
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

TEST(ResourceLimits, ABoundReachedIsAResourceLimitErrorAndABadInputIsNot) {
  SessionOptions options;
  options.max_tensor_bytes = 1024;
  RunError bound = run_failure(kTinyCnn, options, tiny_cnn_input());
  ASSERT_NE(bound.message, "");
  EXPECT_EQ(bound.kind, ErrorKind::kResourceLimit) << bound.message;
  options.max_tensor_bytes = 0;
  options.max_run_bytes = 16 * 1024;
  bound = run_failure(kTinyCnn, options, tiny_cnn_input());
  EXPECT_EQ(bound.kind, ErrorKind::kResourceLimit) << bound.message;
  options.max_run_bytes = 0;
  options.max_loop_iterations = 10;
  bound = run_failure(kHostile / "while_without_progress.onnx", options);
  EXPECT_EQ(bound.kind, ErrorKind::kResourceLimit) << bound.message;

  // A spatial size the network cannot take is the input's fault, not a bound's.
  const NamedValues too_small = {{"input", RuntimeValue(Tensor(DType::kFloat, {1, 3, 1, 1}))}};
  const RunError bad = run_failure(kTinyCnn, {}, too_small);
  ASSERT_NE(bad.message, "");
  EXPECT_EQ(bad.kind, ErrorKind::kFailed) << bad.message;
}

TEST(ResourceLimits, ResultValueRethrowsTheErrorWithItsKind) {
  Result<int> failed = Status::error("bound", ErrorKind::kResourceLimit);
  try {
    (void)failed.value();
    FAIL() << "value() of an error returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kResourceLimit);
    EXPECT_STREQ(e.what(), "bound");
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
