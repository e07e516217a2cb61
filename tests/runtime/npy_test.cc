#include "ir/npy.h"

#include <gtest/gtest.h>

#include <fstream>

#include "../test_util.h"
#include "onnx/tensor_io.h"

namespace onnxkit {
namespace {

TEST(Npy, RoundTripsEveryNumericType) {
  testing::TempDir dir;
  for (DType dtype : {DType::kFloat, DType::kDouble, DType::kFloat16, DType::kInt8, DType::kInt16,
                      DType::kInt32, DType::kInt64, DType::kUInt8, DType::kUInt16, DType::kUInt32,
                      DType::kUInt64, DType::kBool}) {
    Tensor tensor(dtype, {2, 3});
    auto* bytes = static_cast<uint8_t*>(tensor.mutable_raw_data());
    for (size_t i = 0; i < tensor.nbytes(); ++i)
      bytes[i] = dtype == DType::kBool ? i % 2 : uint8_t(i * 7);
    ASSERT_TRUE(write_npy(tensor, dir / "t.npy").ok());
    auto back = read_npy(dir / "t.npy");
    ASSERT_TRUE(back.ok()) << back.error();
    EXPECT_TRUE(back.value().same_contents(tensor)) << dtype_name(dtype);
  }
  Tensor scalar = Tensor::from_vector<float>(DType::kFloat, {}, {2.5f});
  ASSERT_TRUE(write_npy(scalar, dir / "s.npy").ok());
  EXPECT_TRUE(read_npy(dir / "s.npy").value().same_contents(scalar));
}

TEST(Npy, BadFilesAreRefused) {
  testing::TempDir dir;
  std::ofstream(dir / "bad.npy") << "not numpy";
  auto bad = read_npy(dir / "bad.npy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bad.npy"), std::string::npos);
  Tensor tensor(DType::kFloat, {100});
  ASSERT_TRUE(write_npy(tensor, dir / "t.npy").ok());
  std::filesystem::resize_file(dir / "t.npy", 200);
  auto cut = read_npy(dir / "t.npy");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().find("truncated"), std::string::npos) << cut.error();
}

// A header may claim any shape: the file must hold the data before anything is allocated
// (this one claims 40 GB; an overflowing shape is refused by name).
TEST(Npy, AShapeTheFileCannotHoldIsRefusedBeforeAllocating) {
  testing::TempDir dir;
  auto write_header = [&](const std::string& shape) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    header.resize(118, ' ');
    header += '\n';
    std::ofstream out(dir / "claims.npy", std::ios::binary);
    out << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
        << char(header.size() >> 8) << header << std::string(16, '\0');
  };
  write_header("100000, 100000");
  auto claims = read_npy(dir / "claims.npy");
  ASSERT_FALSE(claims.ok());
  EXPECT_NE(claims.error().find("needs 40000000000 bytes of data, the file holds 16"),
            std::string::npos)
      << claims.error();
  write_header("4294967296, 4294967296, 4294967296");
  auto overflow = read_npy(dir / "claims.npy");
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().find("element count"), std::string::npos) << overflow.error();
}

TEST(TensorPb, ReadsBackendTestData) {
  auto tensor = read_tensor_pb(ONNXKIT_TESTDATA_DIR "/node/test_abs/test_data_set_0/input_0.pb");
  ASSERT_TRUE(tensor.ok()) << tensor.error();
  EXPECT_EQ(tensor.value().dtype(), DType::kFloat);
  EXPECT_EQ(tensor.value().shape(), (Shape{3, 4, 5}));
  auto missing = read_tensor_pb("/nonexistent.pb");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent.pb"), std::string::npos);
}

}  // namespace
}  // namespace onnxkit
