// The public header alone is enough to load and inspect a model.
#include <onnxkit/onnxkit.h>

#include <gtest/gtest.h>

namespace {

TEST(PublicApi, LoadInspectVerify) {
  auto model = onnxkit::load_model(ONNXKIT_SOURCE_DIR "/examples/models/tiny_cnn.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  onnxkit::ModelStats stats = onnxkit::compute_model_stats(model.value());
  EXPECT_EQ(stats.op_histogram["Conv"], 2u);
  EXPECT_TRUE(onnxkit::verify_model(model.value()).ok());
  EXPECT_TRUE(onnxkit::check_model(model.value(), true).ok());
}

}  // namespace
