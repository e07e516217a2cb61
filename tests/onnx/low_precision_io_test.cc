// The sub-byte types are packed in ONNX files (low bits first) and one byte per element in
// memory: load unpacks (raw_data, int32_data, mapped payloads, external data), save packs.
#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "../test_util.h"
#include "core/low_precision.h"
#include "ir/model.h"
#include "model_builder.h"
#include "onnx/proto_convert.h"
#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<int64_t> int4_values(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.push_back(small_int_value(t.dtype(), t.data<uint8_t>()[i]));
  return out;
}

TEST(LowPrecisionIo, Int4RawDataAndInt32DataUnpackAndSavePacks) {
  onnx_io::ReadContext read;
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(static_cast<int32_t>(DType::kInt4));
  proto.add_dims(5);
  const char raw[] = {static_cast<char>(0xf8), 0x70, 0x03};
  proto.set_raw_data(raw, 3);
  Tensor t = onnx_io::tensor_from_proto(proto, read);
  EXPECT_EQ(t.dtype(), DType::kInt4);
  EXPECT_EQ(int4_values(t), (std::vector<int64_t>{-8, -1, 0, 7, 3}));

  onnx::TensorProto typed;
  typed.set_data_type(static_cast<int32_t>(DType::kInt4));
  typed.add_dims(5);
  for (int byte : {0xf8, 0x70, 0x03}) typed.add_int32_data(byte);
  EXPECT_EQ(int4_values(onnx_io::tensor_from_proto(typed, read)), int4_values(t));

  onnx_io::WriteContext write;
  onnx::TensorProto saved;
  onnx_io::tensor_to_proto(t, saved, write);
  EXPECT_EQ(saved.raw_data(), std::string(raw, 3));

  // A payload of the wrong packed size is refused.
  proto.set_raw_data(raw, 2);
  EXPECT_THROW(onnx_io::tensor_from_proto(proto, read), Error);
}

TEST(LowPrecisionIo, Float8Int32DataIsOneCodePerValue) {
  onnx_io::ReadContext read;
  onnx::TensorProto typed;
  typed.set_data_type(static_cast<int32_t>(DType::kFloat8E4M3FN));
  typed.add_dims(2);
  typed.add_int32_data(0x38);
  typed.add_int32_data(0x7e);
  Tensor t = onnx_io::tensor_from_proto(typed, read);
  EXPECT_EQ(small_float_to_float(t.dtype(), t.data<uint8_t>()[0]), 1.0f);
  EXPECT_EQ(small_float_to_float(t.dtype(), t.data<uint8_t>()[1]), 448.0f);
}

// A model file with a uint4 initializer of `n` elements, element i = i % 16.
onnx::ModelProto uint4_model(int64_t n) {
  onnx::ModelProto model = testing::add_model(1);
  auto* w = model.mutable_graph()->mutable_initializer(0);
  w->Clear();
  w->set_name("w");
  w->set_data_type(static_cast<int32_t>(DType::kUInt4));
  w->add_dims(n);
  std::vector<uint8_t> elements(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) elements[static_cast<size_t>(i)] = static_cast<uint8_t>(i % 16);
  std::string packed(serialized_size(DType::kUInt4, n), '\0');
  pack_elements(DType::kUInt4, elements.data(), n, reinterpret_cast<uint8_t*>(packed.data()));
  w->set_raw_data(packed);
  return model;
}

void expect_uint4_ramp(const Tensor& w, int64_t n) {
  ASSERT_EQ(w.dtype(), DType::kUInt4);
  ASSERT_EQ(w.numel(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(w.data<uint8_t>()[i], i % 16) << "element " << i;
}

TEST(LowPrecisionIo, PackedInitializersRoundTripThroughFilesInlineAndExternal) {
  TempDir dir;
  const int64_t n = 4099;  // odd: the last byte is half used
  testing::write_model(uint4_model(n), dir / "in.onnx");
  auto model = load_model(dir / "in.onnx");
  ASSERT_TRUE(model.ok()) << model.error();
  expect_uint4_ramp(model.value().graph().find_value("w")->initializer(), n);

  ASSERT_TRUE(save_model(model.value(), dir / "inline.onnx").ok());
  onnx::ModelProto saved;
  std::ifstream in(dir / "inline.onnx", std::ios::binary);
  ASSERT_TRUE(saved.ParseFromIstream(&in));
  EXPECT_EQ(saved.graph().initializer(0).raw_data().size(), (n + 1) / 2);
  auto inline_model = load_model(dir / "inline.onnx");
  ASSERT_TRUE(inline_model.ok()) << inline_model.error();
  expect_uint4_ramp(inline_model.value().graph().find_value("w")->initializer(), n);

  SaveOptions options;
  options.external_data = ExternalDataMode::kAlways;
  options.external_threshold_bytes = 16;
  ASSERT_TRUE(save_model(model.value(), dir / "external.onnx", options).ok());
  EXPECT_EQ(fs::file_size(dir / "external.onnx.data"), static_cast<uintmax_t>((n + 1) / 2));
  auto external = load_model(dir / "external.onnx");
  ASSERT_TRUE(external.ok()) << external.error();
  expect_uint4_ramp(external.value().graph().find_value("w")->initializer(), n);
}

}  // namespace
}  // namespace onnxkit
