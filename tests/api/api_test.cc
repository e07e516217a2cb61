// The public API as an embedding program uses it: this binary links onnxkit_lib alone and
// sees include/ only (no src/ header is reachable from here).
#include <onnxkit/onnxkit.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

const char* const kTinyCnn = ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx";

onnxkit::Tensor ramp_input(int64_t batch) {
  std::vector<float> data(static_cast<size_t>(batch * 3 * 32 * 32));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 23) / 11.0f - 1.0f;
  return onnxkit::Tensor::from_vector(onnxkit::DType::kFloat, {batch, 3, 32, 32}, data);
}

std::vector<float> run_logits(onnxkit::Model model, const onnxkit::Tensor& input,
                              const onnxkit::SessionOptions& options) {
  auto session = onnxkit::Session::create(std::move(model), options);
  EXPECT_TRUE(session.ok()) << session.error();
  if (!session) return {};
  auto outputs = session.value()->run({{"input", input}});
  EXPECT_TRUE(outputs.ok()) << outputs.error();
  if (!outputs) return {};
  EXPECT_EQ(outputs.value().size(), 1u);
  EXPECT_EQ(outputs.value()[0].first, "logits");
  const onnxkit::Tensor& logits = outputs.value()[0].second.tensor();
  EXPECT_EQ(logits.dtype(), onnxkit::DType::kFloat);
  EXPECT_EQ(logits.shape(), (onnxkit::Shape{input.shape()[0], 10}));
  return std::vector<float>(logits.data<float>(), logits.data<float>() + logits.numel());
}

TEST(PublicApi, LoadSimplifyRunSave) {
  const onnxkit::Tensor input = ramp_input(2);
  auto original = onnxkit::load_model(kTinyCnn);
  ASSERT_TRUE(original.ok()) << original.error();
  const std::vector<float> expected =
      run_logits(std::move(original).value(), input, onnxkit::SessionOptions::reference());
  ASSERT_EQ(expected.size(), 20u);

  auto model = onnxkit::load_model(kTinyCnn);
  ASSERT_TRUE(model.ok()) << model.error();
  auto report = onnxkit::simplify(model.value(), onnxkit::SimplifyOptions());
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_TRUE(report.value().check_ok) << report.value().check_message;
  EXPECT_EQ(report.value().checks_run, 1);
  EXPECT_EQ(report.value().before.nodes, 16u);
  EXPECT_LT(report.value().after.nodes, report.value().before.nodes);
  EXPECT_EQ(report.value().after.ops.count("BatchNormalization"), 0u);

  const auto saved = std::filesystem::temp_directory_path() /
                     ("onnxkit_api_test_" + std::to_string(getpid()) + ".onnx");
  ASSERT_TRUE(onnxkit::save_model(model.value(), saved).ok());
  auto reloaded = onnxkit::load_model(saved);
  ASSERT_TRUE(reloaded.ok()) << reloaded.error();
  const std::vector<float> simplified =
      run_logits(std::move(reloaded).value(), input, onnxkit::SessionOptions());
  std::filesystem::remove(saved);
  ASSERT_EQ(simplified.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(simplified[i], expected[i], 1e-4f + 1e-4f * std::fabs(expected[i])) << i;
  }
}

TEST(PublicApi, SessionDescribesItsInputsAndOutputs) {
  auto session = onnxkit::Session::load(kTinyCnn);
  ASSERT_TRUE(session.ok()) << session.error();
  const std::vector<onnxkit::ValueInfo> inputs = session.value()->inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].name, "input");
  EXPECT_TRUE(inputs[0].is_tensor);
  EXPECT_EQ(inputs[0].dtype, onnxkit::DType::kFloat);
  ASSERT_TRUE(inputs[0].shape.has_value());
  EXPECT_EQ(*inputs[0].shape,
            (std::vector<onnxkit::Dim>{onnxkit::Dim::symbol("batch"), onnxkit::Dim::known(3),
                                       onnxkit::Dim::known(32), onnxkit::Dim::known(32)}));
  EXPECT_EQ(inputs[0].type, "float[batch,3,32,32]");
  const std::vector<onnxkit::ValueInfo> outputs = session.value()->outputs();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "logits");
  EXPECT_EQ(outputs[0].type, "float[batch,10]");
}

TEST(PublicApi, ErrorsNameWhatIsWrong) {
  auto missing = onnxkit::load_model("/nonexistent/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/model.onnx"), std::string::npos) << missing.error();
  EXPECT_THROW(missing.value(), onnxkit::Error);

  auto session = onnxkit::Session::load(kTinyCnn);
  ASSERT_TRUE(session.ok()) << session.error();
  auto unknown = session.value()->run({{"image", ramp_input(1)}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown input 'image'"), std::string::npos) << unknown.error();
  EXPECT_NE(unknown.error().find("input"), std::string::npos) << unknown.error();

  const onnxkit::Tensor ints(onnxkit::DType::kInt64, {1, 3, 32, 32});
  auto mistyped = session.value()->run({{"input", ints}});
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.error().find("input 'input' must be float, got int64"), std::string::npos)
      << mistyped.error();

  EXPECT_THROW(onnxkit::Tensor(onnxkit::DType::kFloat, {2, -1}), onnxkit::Error);
  EXPECT_THROW(onnxkit::Tensor::from_vector(onnxkit::DType::kFloat, {3}, std::vector<float>(2)),
               onnxkit::Error);
}

TEST(PublicApi, TensorsOverTheCallersData) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  const onnxkit::Tensor copied = onnxkit::Tensor::from_vector(onnxkit::DType::kFloat, {2, 3}, data);
  const onnxkit::Tensor viewed = onnxkit::Tensor::external(onnxkit::DType::kFloat, {2, 3},
                                                           static_cast<const void*>(data.data()));
  data[0] = 10;
  EXPECT_EQ(copied.data<float>()[0], 1.0f);
  EXPECT_EQ(viewed.data<float>()[0], 10.0f);
  EXPECT_EQ(viewed.shape(), (onnxkit::Shape{2, 3}));
  EXPECT_EQ(viewed.numel(), 6);
  EXPECT_EQ(viewed.nbytes(), 24u);
  EXPECT_EQ(onnxkit::dtype_name(viewed.dtype()), "float");
  EXPECT_EQ(onnxkit::shape_to_string(viewed.shape()), "[2,3]");

  const onnxkit::RuntimeValue value = viewed;
  EXPECT_TRUE(value.is_tensor());
  EXPECT_EQ(value.describe(), "float[2,3]");
  EXPECT_THROW(onnxkit::RuntimeValue().tensor(), onnxkit::Error);
}

}  // namespace

TEST(PublicApi, QuantizeStaticallyAndRun) {
  const onnxkit::Tensor input = ramp_input(2);
  auto original = onnxkit::load_model(kTinyCnn);
  ASSERT_TRUE(original.ok()) << original.error();
  const std::vector<float> expected =
      run_logits(std::move(original).value(), input, onnxkit::SessionOptions::reference());

  auto model = onnxkit::load_model(kTinyCnn);
  ASSERT_TRUE(model.ok()) << model.error();
  onnxkit::QuantizeOptions options;
  options.mode = onnxkit::QuantizeMode::kStatic;
  options.calibration_source = [&](size_t index) -> std::optional<onnxkit::CalibrationSample> {
    if (index > 0) return std::nullopt;
    return onnxkit::CalibrationSample{{{"input", input}}, "ramp"};
  };
  auto report = onnxkit::quantize(model.value(), options);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report.value().calibration_samples, 1u);
  EXPECT_EQ(report.value().quantized.at("Conv"), 2u);
  EXPECT_LT(report.value().quantized_weight_bytes, report.value().float_weight_bytes);
  const std::vector<float> quantized =
      run_logits(std::move(model).value(), input, onnxkit::SessionOptions());
  ASSERT_EQ(quantized.size(), expected.size());
  double dot = 0, a = 0, b = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    dot += double(expected[i]) * quantized[i];
    a += double(expected[i]) * expected[i];
    b += double(quantized[i]) * quantized[i];
  }
  EXPECT_GT(dot / std::sqrt(a * b), 0.99);
}
