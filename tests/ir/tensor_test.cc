#include "onnxkit/tensor.h"

#include <gtest/gtest.h>

#include <fstream>

#include "../test_util.h"
#include "core/buffer.h"
#include "core/status.h"

namespace onnxkit {
namespace {

TEST(Tensor, CopiesShareBytesUntilWritten) {
  Tensor a = Tensor::from_vector<float>(DType::kFloat, {2, 2}, {1, 2, 3, 4});
  Tensor b = a;
  EXPECT_EQ(a.raw_data(), b.raw_data());
  b.mutable_data<float>()[0] = 42;
  EXPECT_NE(a.raw_data(), b.raw_data());
  EXPECT_EQ(a.data<float>()[0], 1);
  EXPECT_EQ(b.data<float>()[0], 42);
}

TEST(Tensor, WritingAFileViewCopiesIt) {
  testing::TempDir dir;
  std::vector<float> values{1.5f, 2.5f};
  std::ofstream(dir / "w.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()), 8);
  auto file = FileMapping::open(dir / "w.bin");
  Tensor view = Tensor::from_buffer(DType::kFloat, {2}, Buffer::view(file, 0, 8));
  ASSERT_NE(view.file_region(), nullptr);
  view.mutable_data<float>()[1] = 7;
  EXPECT_EQ(view.file_region(), nullptr);
  EXPECT_EQ(view.data<float>()[0], 1.5f);
  EXPECT_EQ(view.data<float>()[1], 7.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.raw_data()) % kTensorAlignment, 0u);
}

TEST(Tensor, StringsAndScalars) {
  Tensor s = Tensor::from_strings({2}, {"a", "bc"});
  EXPECT_EQ(s.numel(), 2);
  EXPECT_EQ(s.nbytes(), 0u);
  Tensor t = s;
  t.mutable_strings()[0] = "z";
  EXPECT_EQ(s.strings()[0], "a");
  Tensor scalar(DType::kInt64, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.nbytes(), 8u);
  Tensor empty(DType::kFloat, {3, 0});
  EXPECT_EQ(empty.numel(), 0);
}

TEST(Tensor, BadShapesAreRefused) {
  EXPECT_THROW(Tensor(DType::kFloat, {-1}), Error);
  EXPECT_THROW(Tensor(DType::kFloat, {int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_THROW(Tensor::from_buffer(DType::kFloat, {4}, Buffer::allocate(8)), Error);
}

TEST(Tensor, SameContents) {
  auto a = Tensor::from_vector<int32_t>(DType::kInt32, {2}, {1, 2});
  auto b = Tensor::from_vector<int32_t>(DType::kInt32, {2}, {1, 2});
  auto c = Tensor::from_vector<int32_t>(DType::kInt32, {1, 2}, {1, 2});
  EXPECT_TRUE(a.same_contents(b));
  EXPECT_FALSE(a.same_contents(c));
}

}  // namespace
}  // namespace onnxkit
