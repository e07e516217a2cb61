#include "core/buffer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "../test_util.h"
#include "core/block_alloc.h"
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

// A file of `bytes` bytes whose byte at offset i is i % 251.
void write_pattern_file(const std::filesystem::path& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  std::string block(4096, '\0');
  for (size_t offset = 0; offset < bytes; offset += block.size()) {
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>((offset + i) % 251);
    out.write(block.data(), static_cast<std::streamsize>(block.size()));
  }
}

TEST(FileMapping, ADeadViewLeavesTheResidentSetAndItsNeighboursKeepTheirBytes) {
  testing::TempDir dir;
  constexpr size_t kBytes = size_t{16} << 20;
  write_pattern_file(dir / "weights.bin", kBytes);
  auto file = FileMapping::open(dir / "weights.bin");
  auto sum = [](const std::shared_ptr<Buffer>& view) {
    size_t total = 0;
    for (size_t i = 0; i < view->size(); i += 512) total += static_cast<uint8_t>(view->data()[i]);
    return total;
  };
  // Two views that share a page at their border: the big one dies.
  auto big = Buffer::view(file, 100, kBytes - 1000);
  auto tail = Buffer::view(file, kBytes - 1000, 1000);
  const size_t big_sum = sum(big), tail_sum = sum(tail);
  const size_t touched = testing::resident_bytes();
  big.reset();
  EXPECT_GT(touched, testing::resident_bytes() + (kBytes / 2))
      << "the dead view's pages are dropped";
  EXPECT_EQ(sum(tail), tail_sum);
  EXPECT_EQ(static_cast<uint8_t>(tail->data()[999]), (kBytes - 1) % 251);
  // The file's bytes come back when read again.
  EXPECT_EQ(sum(Buffer::view(file, 100, kBytes - 1000)), big_sum);
  file->release_pages();
  EXPECT_EQ(sum(tail), tail_sum);
}

// The VmFlags line of the mapping in /proc/self/smaps that holds `address`.
std::string mapping_flags(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2) {
      inside = begin <= target && target < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(FileMapping, MapsBasePagesAndPopulatesARangeOnRequest) {
  testing::TempDir dir;
  constexpr size_t kBytes = size_t{16} << 20;
  write_pattern_file(dir / "weights.bin", kBytes);
  auto file = FileMapping::open(dir / "weights.bin");
  // No huge mappings of the file: a 2 MiB page cache folio would otherwise come in whole
  // for every small tensor read. (A kernel without transparent huge pages has no such flag.)
  if (std::filesystem::exists("/sys/kernel/mm/transparent_hugepage")) {
    EXPECT_NE(mapping_flags(file->data()).find(" nh"), std::string::npos)
        << mapping_flags(file->data());
  }
  const size_t before = testing::resident_bytes();
  if (!file->populate_pages(100, kBytes / 2)) GTEST_SKIP() << "no MADV_POPULATE_READ here";
  EXPECT_GE(testing::resident_bytes(), before + kBytes / 2 - (size_t{1} << 20))
      << "the range is mapped without being read";
  EXPECT_EQ(static_cast<uint8_t>(file->data()[kBytes / 2]), (kBytes / 2) % 251);
  // Ranges past the end are clipped, empty ones ignored.
  EXPECT_TRUE(file->populate_pages(kBytes - 10, 100));
  EXPECT_TRUE(file->populate_pages(kBytes + 10, 100));
  EXPECT_TRUE(file->populate_pages(0, 0));
  file->release_pages();
}

TEST(LongLivedBlocks, MidSizedBlocksShareAChunk) {
  auto a = allocate_long_lived(100 << 10);
  auto b = allocate_long_lived(300 << 10);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % kTensorAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % kTensorAlignment, 0u);
  // Carved one after the other from the same chunk, and writable.
  const auto distance =
      reinterpret_cast<uintptr_t>(b->data()) - reinterpret_cast<uintptr_t>(a->data());
  EXPECT_EQ(distance, size_t{100} << 10);
  std::memset(a->mutable_data(), 1, a->size());
  std::memset(b->mutable_data(), 2, b->size());
  EXPECT_EQ(static_cast<int>(a->data()[a->size() - 1]), 1);
  // The chunk outlives a buffer as long as another of its buffers lives.
  a.reset();
  EXPECT_EQ(static_cast<int>(b->data()[0]), 2);
}

TEST(LongLivedBlocks, SmallAndLargeBlocksStandAlone) {
  auto small = allocate_long_lived(1000);
  auto large = allocate_long_lived(size_t{16} << 20);
  ASSERT_TRUE(small && large);
  EXPECT_GE(small->size(), 1000u);
  EXPECT_EQ(large->size(), size_t{16} << 20);
  std::memset(large->mutable_data(), 3, large->size());
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
