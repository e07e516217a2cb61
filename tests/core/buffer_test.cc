#include "core/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

#include "../test_util.h"
#include "core/status.h"

namespace onnxkit {
namespace {

TEST(Buffer, AllocateIsAlignedZeroedAndWritable) {
  for (size_t bytes : {0, 1, 63, 64, 1000}) {
    auto buffer = Buffer::allocate(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % kTensorAlignment, 0u);
    EXPECT_EQ(buffer->size(), bytes);
    EXPECT_TRUE(buffer->writable());
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(buffer->data()[i], std::byte{0});
  }
}

TEST(Buffer, FileViewSeesFileBytesAndIsReadOnly) {
  testing::TempDir dir;
  std::ofstream(dir / "data.bin") << "0123456789";
  auto file = FileMapping::open(dir / "data.bin");
  auto view = Buffer::view(file, 3, 4);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view->data()), 4), "3456");
  EXPECT_FALSE(view->writable());
  ASSERT_NE(view->file_region(), nullptr);
  EXPECT_EQ(view->file_region()->offset, 3u);
  EXPECT_THROW(view->mutable_data(), Error);
}

TEST(Buffer, ViewPastTheEndIsRefused) {
  testing::TempDir dir;
  std::ofstream(dir / "data.bin") << "0123456789";
  auto file = FileMapping::open(dir / "data.bin");
  EXPECT_THROW(Buffer::view(file, 8, 4), Error);
  EXPECT_THROW(Buffer::view(file, 11, 0), Error);
}

TEST(FileMapping, MissingFileNamesThePath) {
  try {
    FileMapping::open("/nonexistent/model.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.onnx"), std::string::npos);
  }
}

}  // namespace
}  // namespace onnxkit
