// Triton's config.pbtxt: the fields that mean the same here are read, the rest skipped in every
// form Triton's docs write them, and mistakes named with their line.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "serve/triton_config.h"

namespace onnxkit::serve {
namespace {

namespace fs = std::filesystem;

ModelConfig read(const std::string& text) {
  const fs::path folder =
      fs::temp_directory_path() / ("onnxkit_triton_config_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  std::ofstream(folder / "config.pbtxt") << text;
  struct Remove {
    fs::path folder;
    ~Remove() { fs::remove_all(folder); }
  } remove{folder};
  return read_triton_config(folder / "config.pbtxt", ModelConfig{});
}

TEST(TritonConfigTest, ReadsBatchingAndInstancesAndSkipsTheRest) {
  const ModelConfig config = read(R"(
name: "m [not a list]"   # a comment with a [ bracket
platform: 'onnxruntime_onnx'
max_batch_size: 16
input [
  { name: "x" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, -1, -1 ] reshape { shape: [ 1 ] } }
]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 1000 ] label_filename: "labels.txt" } ]
dynamic_batching { preferred_batch_size: [ 4, 8 ] max_queue_delay_microseconds: 100 }
instance_group [ { count: 2 kind: KIND_CPU }, { kind: KIND_CPU } ]
optimization { execution_accelerators { cpu_execution_accelerator [ { name: "openvino" } ] } }
model_warmup [ { name: "w" batch_size: 1 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [3] zero_data: true } } } ]
parameters { key: "k" value: { string_value: "v" } }
)");
  EXPECT_EQ(config.max_batch_size, 16);
  EXPECT_EQ(config.preferred_batch_sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(config.max_queue_delay_us, 100);
  EXPECT_EQ(config.instances, 3);  // 2, and a group without a count is 1
  ASSERT_EQ(config.label_files.count("y"), 1u);
  EXPECT_EQ(config.label_files.at("y").filename(), "labels.txt");
}

TEST(TritonConfigTest, MistakesAndUnservableModelsAreNamed) {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      read(text);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("max_batch_size: 8\nmax_batch_size: \"eight\"\n").find("line 2"),
            std::string::npos);
  EXPECT_NE(error_of("dynamic_batching { max_queue_delay_microseconds: -1 }").find("line 1"),
            std::string::npos);
  EXPECT_NE(error_of("sequence_batching { control_input [ { name: \"S\" control [ { kind: "
                     "CONTROL_SEQUENCE_START } ] } ] }")
                .find("stateful model"),
            std::string::npos);
  EXPECT_NE(error_of("platform: \"ensemble\"\nensemble_scheduling { step [ { model_name: \"a\" "
                     "} ] }")
                .find("an ensemble"),
            std::string::npos);
  EXPECT_NE(error_of("output [ { name: \"y\" label_filename: \"../../etc/passwd\" } ]")
                .find("without '..'"),
            std::string::npos);
}

}  // namespace
}  // namespace onnxkit::serve
