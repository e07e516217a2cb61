#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>

#include "../test_util.h"
#include "core/buffer.h"
#include "ir/model.h"
#include "model_builder.h"
#include "onnxkit/model_io.h"
#include "onnxkit/tensor.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Every tensor of 256 bytes or more goes to the data file.
SaveOptions external_data_options() {
  SaveOptions options;
  options.external_data = ExternalDataMode::kAlways;
  options.external_threshold_bytes = 256;
  return options;
}

TEST(ExternalData, SaveAlwaysWritesADataFileAndLoadsBackAsViews) {
  TempDir dir;
  testing::write_model(testing::add_model(1000), dir / "in.onnx");
  auto model = load_model(dir / "in.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  ASSERT_TRUE(save_model(model.value(), dir / "out.onnx", external_data_options()).ok());
  ASSERT_TRUE(fs::exists(dir / "out.onnx.data"));
  EXPECT_LT(fs::file_size(dir / "out.onnx"), 1000u);

  auto reloaded = load_model(dir / "out.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error();
  const Tensor& w = reloaded.value().graph().find_value("w")->initializer();
  ASSERT_NE(w.file_region(), nullptr);
  EXPECT_EQ(w.file_region()->file->path().filename(), "out.onnx.data");
  EXPECT_EQ(w.file_region()->offset % 64, 0u);
  EXPECT_TRUE(w.same_contents(model.value().graph().find_value("w")->initializer()));
  EXPECT_EQ(w.data<float>()[999], 499.5f);
}

TEST(ExternalData, SavingOverTheSourceFileKeepsViewsValid) {
  TempDir dir;
  testing::write_model(testing::add_model(4096), dir / "m.onnx");
  auto model = load_model(dir / "m.onnx");
  ASSERT_TRUE(model.ok());
  ASSERT_NE(model.value().graph().find_value("w")->initializer().file_region(), nullptr);
  ASSERT_TRUE(save_model(model.value(), dir / "m.onnx").ok());
  auto reloaded = load_model(dir / "m.onnx");
  ASSERT_TRUE(reloaded.ok());
  EXPECT_TRUE(reloaded.value().graph().find_value("w")->initializer().same_contents(
      model.value().graph().find_value("w")->initializer()));
}

// A model on disk must never end up reading another model's weights: saving refuses a data
// file that the loaded model (or its file) reads from, unless the model replaces its own
// file, data and all. The C API and Python save through save_model, so this holds for them.
TEST(ExternalData, SaveRefusesADataFileTheSourceModelReads) {
  TempDir dir;
  testing::write_model(testing::add_model(1000), dir / "in.onnx");
  auto original = load_model(dir / "in.onnx");
  ASSERT_TRUE(original.ok()) << original.error();
  const SaveOptions external = external_data_options();
  ASSERT_TRUE(save_model(original.value(), dir / "a.onnx", external).ok());
  auto model = load_model(dir / "a.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  const auto data_before = testing::read_file(dir / "a.onnx.data");

  SaveOptions onto_source_data = external;
  onto_source_data.external_location = "a.onnx.data";
  for (const Status& status : {check_save_path(model.value(), dir / "b.onnx", onto_source_data),
                               save_model(model.value(), dir / "b.onnx", onto_source_data)}) {
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("the input model reads its tensor 'w' from it"),
              std::string::npos)
        << status.message();
  }
  SaveOptions onto_source_file = external;
  onto_source_file.external_location = "a.onnx";
  Status status = save_model(model.value(), dir / "b.onnx", onto_source_file);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("over " + (dir / "a.onnx").string() + ", the input model"),
            std::string::npos)
      << status.message();
  EXPECT_FALSE(fs::exists(dir / "b.onnx"));
  EXPECT_EQ(testing::read_file(dir / "a.onnx.data"), data_before);

  // Elsewhere, or over its own file and data together, it saves.
  EXPECT_TRUE(save_model(model.value(), dir / "b.onnx", external).ok());
  EXPECT_TRUE(save_model(model.value(), dir / "a.onnx", external).ok());
  auto reloaded = load_model(dir / "a.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error();
  EXPECT_EQ(reloaded.value().graph().find_value("w")->initializer().data<float>()[999], 499.5f);
}

// Weights still in a mapped file are copied file to file when the model is saved inline.
// Where that file is sparse (a hole at the end of the last weight) the saved model still
// has its full size and reads back the same zeros.
TEST(ExternalData, InlineSaveOfMappedWeightsCopiesThemAndKeepsHoles) {
  TempDir dir;
  constexpr int64_t kSize = 256 * 1024;  // 1 MiB of floats: page-aligned in a data file
  testing::write_model(testing::add_model(kSize), dir / "in.onnx");
  {
    auto model = load_model(dir / "in.onnx");
    ASSERT_TRUE(model.ok()) << model.error();
    SaveOptions external;
    external.external_data = ExternalDataMode::kAlways;
    ASSERT_TRUE(save_model(model.value(), dir / "mid.onnx", external).ok());
  }
  // w is all of mid.onnx.data: punch out its last 64 KiB, a hole up to the end of the file.
  const fs::path data = dir / "mid.onnx.data";
  ASSERT_EQ(fs::file_size(data), kSize * sizeof(float));
  const int fd = ::open(data.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  const int punched = ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                  static_cast<off_t>(fs::file_size(data) - 64 * 1024), 64 * 1024);
  const int error = errno;
  ::close(fd);
  if (punched != 0) GTEST_SKIP() << "no hole punching here: " << std::strerror(error);

  auto model = load_model(dir / "mid.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  const Tensor& w = model.value().graph().find_value("w")->initializer();
  ASSERT_NE(w.file_region(), nullptr);
  EXPECT_EQ(w.data<float>()[kSize - 1], 0.0f) << "the hole reads as zeros";
  EXPECT_EQ(w.data<float>()[1000], 500.0f);
  SaveOptions inline_data;
  inline_data.external_data = ExternalDataMode::kNever;
  ASSERT_TRUE(save_model(model.value(), dir / "out.onnx", inline_data).ok());
  EXPECT_FALSE(fs::exists(dir / "out.onnx.data"));
  auto reloaded = load_model(dir / "out.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error();
  EXPECT_TRUE(reloaded.value().graph().find_value("w")->initializer().same_contents(w));
}

// A model with more than 2 GiB of weights, stored in a sparse file so that it costs
// almost no disk and no time: it must save (external data is chosen automatically),
// load back, and `inspect` it without reading the weights into memory.
TEST(ExternalData, ModelOver2GiBSavesLoadsAndInspectsCheaply) {
  TempDir dir;
  struct statvfs fs_stats {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &fs_stats), 0);
  const uint64_t free_bytes = static_cast<uint64_t>(fs_stats.f_bavail) * fs_stats.f_frsize;
  if (free_bytes < (uint64_t{256} << 20)) {
    GTEST_SKIP() << "needs 256 MiB free in " << dir.path() << ", has " << (free_bytes >> 20)
                 << " MiB";
  }
  constexpr int64_t kElements = int64_t{200} << 20;  // 800 MiB of float per tensor
  constexpr int kTensors = 3;                        // 2.34 GiB in all
  const uint64_t tensor_bytes = kElements * sizeof(float);

  onnx::ModelProto proto = testing::add_model(1);
  auto* graph = proto.mutable_graph();
  for (auto* info : {graph->mutable_input(0), graph->mutable_output(0)}) {
    info->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
        kElements);
  }
  graph->clear_initializer();
  graph->clear_node();
  std::string previous = "x";
  for (int i = 0; i < kTensors; ++i) {
    auto* w = graph->add_initializer();
    w->set_name("w" + std::to_string(i));
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kElements);
    testing::set_external(w, "weights.bin", static_cast<int64_t>(i * tensor_bytes),
                          static_cast<int64_t>(tensor_bytes));
    auto* node = graph->add_node();
    node->set_op_type("Add");
    node->add_input(previous);
    node->add_input(w->name());
    previous = i + 1 == kTensors ? "y" : "sum" + std::to_string(i);
    node->add_output(previous);
  }
  testing::write_model(proto, dir / "big.onnx");
  {
    int fd = ::open((dir / "weights.bin").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kTensors * tensor_bytes)), 0);
    // One marker value at the end of each tensor, so copies can be checked.
    for (int i = 0; i < kTensors; ++i) {
      float marker = 1.0f + static_cast<float>(i);
      ASSERT_EQ(::pwrite(fd, &marker, sizeof marker,
                         static_cast<off_t>((i + 1) * tensor_bytes - sizeof marker)),
                static_cast<ssize_t>(sizeof marker));
    }
    ::close(fd);
  }

  auto model = load_model(dir / "big.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_GT(model_tensor_bytes(model.value()), uint64_t{2} << 30);
  fs::create_directory(dir / "copy");
  ASSERT_TRUE(save_model(model.value(), dir / "copy" / "big.onnx").ok());
  ASSERT_TRUE(fs::exists(dir / "copy" / "big.onnx.data"));
  struct stat data_stat {};
  ASSERT_EQ(::stat((dir / "copy" / "big.onnx.data").c_str(), &data_stat), 0);
  EXPECT_GE(static_cast<uint64_t>(data_stat.st_size), kTensors * tensor_bytes);
  EXPECT_LT(static_cast<uint64_t>(data_stat.st_blocks) * 512, uint64_t{64} << 20)
      << "holes in the weights were written out as zeros";

  auto reloaded = load_model(dir / "copy" / "big.onnx");
  ASSERT_TRUE(reloaded.ok()) << reloaded.error();
  for (int i = 0; i < kTensors; ++i) {
    const Tensor& w = reloaded.value().graph().find_value("w" + std::to_string(i))->initializer();
    ASSERT_EQ(w.numel(), kElements);
    EXPECT_EQ(w.data<float>()[kElements - 1], 1.0f + static_cast<float>(i));
    EXPECT_EQ(w.data<float>()[0], 0.0f);
  }

  auto inspect = testing::run_command(testing::onnxkit_binary() + " inspect " +
                                      (dir / "copy" / "big.onnx").string());
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_NE(inspect.output.find("629,145,600 parameters"), std::string::npos) << inspect.output;
  std::cout << "[ measured ] onnxkit inspect on a " << (kTensors * tensor_bytes >> 20)
            << " MiB model: peak RSS " << inspect.peak_rss_kib / 1024 << " MiB\n";
  RecordProperty("inspect_peak_rss_kib", std::to_string(inspect.peak_rss_kib));
  EXPECT_LT(inspect.peak_rss_kib, 128 * 1024) << "inspect read the weights into memory";
}

}  // namespace
}  // namespace onnxkit
