// End-to-end: `onnxkit quantize` and `onnxkit compare` on the small exports in
// tests/data/models: the JSON report, the calibration data layouts, and the bad-input rules
// (nothing written over the input, nothing half-written, errors that name the culprit).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "../test_util.h"
#include "ir/model.h"
#include "ir/npy.h"
#include "onnx/tensor_io.h"
#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::run_command;

const fs::path kModels = fs::path(ONNXKIT_SOURCE_DIR) / "tests/data/models";

std::string onnxkit(const std::string& args) {
  return testing::onnxkit_binary() + " " + args;
}

std::string model_path(const std::string& name) {
  return (kModels / name / "model.onnx").string();
}

TEST(QuantizeCli, DynamicJsonReportAndCompare) {
  testing::TempDir dir;
  const fs::path out = dir / "bert.int8.onnx";
  auto result = run_command(onnxkit("quantize --json --compare --compare-runs 1 " +
                                    model_path("bert_tiny") + " " + out.string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output);
  EXPECT_GT(report["quantized"]["MatMul"].get<int>(), 0);
  EXPECT_LT(report["file_bytes"]["after"].get<int64_t>(),
            report["file_bytes"]["before"].get<int64_t>());
  ASSERT_EQ(report["compare"]["outputs"].size(), 2u);
  for (const auto& output : report["compare"]["outputs"]) {
    EXPECT_GT(output["cosine"].get<double>(), 0.99) << output.dump();
  }
  // BERT's outputs are hidden states and the pooler's Tanh features: no class scores, so
  // no top-1 figure (the 2-D pooler output is [batch, hidden] but made by Tanh).
  for (const auto& output : report["compare"]["outputs"]) {
    EXPECT_TRUE(output["top1_agreement"].is_null()) << output.dump();
  }
  EXPECT_TRUE(fs::exists(out));
  auto loaded = load_model(out);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
}

TEST(QuantizeCli, StaticWithTestDataSetsAndNpyFolders) {
  testing::TempDir dir;
  // ONNX's test layout: test_data_set_N/input_K.pb.
  const fs::path sets = dir / "sets";
  fs::create_directories(sets);
  fs::copy(kModels / "convnet_bn_tiny" / "test_data_set_0", sets / "test_data_set_0");
  fs::copy(kModels / "convnet_bn_tiny" / "test_data_set_0", sets / "test_data_set_1");
  auto result = run_command(onnxkit(
      "quantize --json --mode static --format qoperator "
      "--calibration-method entropy --calibration-data " +
      sets.string() + " " + model_path("convnet_bn_tiny") + " " + (dir / "a.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto report = nlohmann::json::parse(result.output);
  EXPECT_EQ(report["calibration"]["samples"], 2);
  EXPECT_GT(report["quantized"]["Conv"].get<int>(), 0);

  // NAME.npy with one more dim than the input: samples stacked on the first axis.
  auto x = read_tensor_pb(kModels / "convnet_bn_tiny" / "test_data_set_0" / "input_0.pb");
  ASSERT_TRUE(x.ok());
  Shape stacked_shape{3};
  stacked_shape.insert(stacked_shape.end(), x.value().shape().begin(), x.value().shape().end());
  Tensor stacked(DType::kFloat, stacked_shape);
  for (int i = 0; i < 3; ++i) {
    std::memcpy(static_cast<char*>(stacked.mutable_raw_data()) + i * x.value().nbytes(),
                x.value().raw_data(), x.value().nbytes());
  }
  const fs::path npy = dir / "npy";
  fs::create_directories(npy);
  auto model = load_model(model_path("convnet_bn_tiny"));
  ASSERT_TRUE(model.ok());
  const std::string input_name = model.value().graph().inputs().front()->name();
  ASSERT_TRUE(write_npy(stacked, npy / (input_name + ".npy")).ok());
  result =
      run_command(onnxkit("quantize --json --mode static --calibration-data " + npy.string() + " " +
                          model_path("convnet_bn_tiny") + " " + (dir / "b.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(nlohmann::json::parse(result.output)["calibration"]["samples"], 3);

  // compare on the same data: top-1 agreement for the classifier output.
  result = run_command(onnxkit("compare --json --runs 1 --data " + npy.string() + " " +
                               model_path("convnet_bn_tiny") + " " + (dir / "b.onnx").string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto compared = nlohmann::json::parse(result.output);
  EXPECT_EQ(compared["samples"], 3);
  EXPECT_FALSE(compared["outputs"][0]["top1_agreement"].is_null());
}

TEST(QuantizeCli, BadInputIsAClearErrorAndWritesNothing) {
  testing::TempDir dir;
  const std::string source = model_path("bert_tiny");
  // Never over the input.
  auto result = run_command(onnxkit("quantize " + source + " " + source));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("refusing to write over the input"), std::string::npos)
      << result.output;
  // An op type that cannot be quantized.
  const fs::path out = dir / "out.onnx";
  result =
      run_command(onnxkit("quantize --op-types MatMul Softmax " + source + " " + out.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("'Softmax' cannot be quantized"), std::string::npos)
      << result.output;
  EXPECT_FALSE(fs::exists(out));
  // An already quantized model.
  const fs::path once = dir / "once.onnx";
  ASSERT_EQ(run_command(onnxkit("quantize " + source + " " + once.string())).exit_code, 0);
  result = run_command(onnxkit("quantize " + once.string() + " " + out.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("already quantized"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(out));
  // Calibration data of another model: names the sample folder and the input.
  const fs::path sets = dir / "sets";
  fs::create_directories(sets);
  fs::copy(kModels / "convnet_bn_tiny" / "test_data_set_0", sets / "test_data_set_0");
  result = run_command(onnxkit("quantize --mode static --calibration-data " + sets.string() + " " +
                               source + " " + out.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("test_data_set_0"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("input_ids"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(out));
  // Options of the other mode.
  result = run_command(onnxkit("quantize --format qoperator " + source + " " + out.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("--mode static"), std::string::npos) << result.output;
  result = run_command(onnxkit("quantize --mode static --calibration-data " +
                               (dir / "missing").string() + " " + source + " " + out.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("is not a folder"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace onnxkit
