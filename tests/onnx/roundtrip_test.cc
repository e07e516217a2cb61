// Every model of the ONNX backend test data loads, saves and loads back unchanged.
//
// "Unchanged" is checked twice: the saved ModelProto is equivalent (protobuf's
// MessageDifferencer, unset == default) to the original after normalizing tensor encodings
// (onnxkit writes raw_data where the file may have used float_data etc.), and saving the
// reloaded model again gives the same bytes.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "onnxkit/model_io.h"

namespace onnxkit {
namespace {

namespace fs = std::filesystem;

template <typename To, typename Field>
void append_as(std::string& raw, const Field& field) {
  for (auto value : field) {
    To converted = static_cast<To>(value);
    raw.append(reinterpret_cast<const char*>(&converted), sizeof(To));
  }
}

// Rewrites typed-field tensor data (float_data, int32_data, ...) as raw_data.
void normalize_tensor(onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.has_raw_data() ||
      t.data_type() == onnx::TensorProto::STRING) {
    return;
  }
  std::string raw;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::COMPLEX64:
      append_as<float>(raw, t.float_data());
      break;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX128:
      append_as<double>(raw, t.double_data());
      break;
    case onnx::TensorProto::INT64:
      append_as<int64_t>(raw, t.int64_data());
      break;
    case onnx::TensorProto::UINT64:
      append_as<uint64_t>(raw, t.uint64_data());
      break;
    case onnx::TensorProto::UINT32:
      append_as<uint32_t>(raw, t.uint64_data());
      break;
    case onnx::TensorProto::INT32:
      append_as<int32_t>(raw, t.int32_data());
      break;
    case onnx::TensorProto::INT16:
      append_as<int16_t>(raw, t.int32_data());
      break;
    case onnx::TensorProto::INT8:
      append_as<int8_t>(raw, t.int32_data());
      break;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      append_as<uint16_t>(raw, t.int32_data());
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      append_as<uint8_t>(raw, t.int32_data());
      break;
    default:
      return;
  }
  t.clear_float_data();
  t.clear_double_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_uint64_data();
  t.set_raw_data(raw);
}

void normalize_graph(onnx::GraphProto& g);

void normalize_nodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
  for (auto& node : nodes) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) normalize_tensor(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) normalize_tensor(t);
      if (a.has_sparse_tensor()) {
        normalize_tensor(*a.mutable_sparse_tensor()->mutable_values());
        normalize_tensor(*a.mutable_sparse_tensor()->mutable_indices());
      }
      if (a.has_g()) normalize_graph(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) normalize_graph(g);
    }
  }
}

void normalize_graph(onnx::GraphProto& g) {
  for (auto& t : *g.mutable_initializer()) normalize_tensor(t);
  for (auto& s : *g.mutable_sparse_initializer()) {
    normalize_tensor(*s.mutable_values());
    normalize_tensor(*s.mutable_indices());
  }
  normalize_nodes(*g.mutable_node());
}

// Attribute types: old files leave AttributeProto.type unset; onnxkit writes it.
void set_attribute_types(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes);
void set_attribute_types_graph(onnx::GraphProto& g) {
  set_attribute_types(*g.mutable_node());
}
void set_attribute_types(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
  for (auto& node : nodes) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) set_attribute_types_graph(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) set_attribute_types_graph(g);
      if (a.type() != onnx::AttributeProto::UNDEFINED) continue;
      if (a.has_f())
        a.set_type(onnx::AttributeProto::FLOAT);
      else if (a.has_i())
        a.set_type(onnx::AttributeProto::INT);
      else if (a.has_s())
        a.set_type(onnx::AttributeProto::STRING);
      else if (a.has_t())
        a.set_type(onnx::AttributeProto::TENSOR);
      else if (a.has_g())
        a.set_type(onnx::AttributeProto::GRAPH);
      else if (a.floats_size())
        a.set_type(onnx::AttributeProto::FLOATS);
      else if (a.ints_size())
        a.set_type(onnx::AttributeProto::INTS);
      else if (a.strings_size())
        a.set_type(onnx::AttributeProto::STRINGS);
      else if (a.tensors_size())
        a.set_type(onnx::AttributeProto::TENSORS);
      else if (a.graphs_size())
        a.set_type(onnx::AttributeProto::GRAPHS);
    }
  }
}

std::vector<std::string> test_models() {
  std::vector<std::string> models;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    fs::path dir = fs::path(ONNXKIT_TESTDATA_DIR) / suite;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::exists(entry.path() / "model.onnx")) {
        models.push_back(std::string(suite) + "/" + entry.path().filename().string());
      }
    }
  }
  std::sort(models.begin(), models.end());
  return models;
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, LoadSaveLoadKeepsTheModel) {
  fs::path path = fs::path(ONNXKIT_TESTDATA_DIR) / GetParam() / "model.onnx";
  onnx::ModelProto original;
  {
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(original.ParseFromIstream(&in)) << path;
  }
  auto loaded = load_model(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  auto saved = serialize_model(loaded.value());
  ASSERT_TRUE(saved.ok()) << saved.error();
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(saved.value()));

  normalize_graph(*original.mutable_graph());
  set_attribute_types_graph(*original.mutable_graph());
  for (auto& f : *original.mutable_functions()) {
    normalize_nodes(*f.mutable_node());
    set_attribute_types(*f.mutable_node());
  }
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_message_field_comparison(google::protobuf::util::MessageDifferencer::EQUIVALENT);
  std::string report;
  differencer.ReportDifferencesToString(&report);
  EXPECT_TRUE(differencer.Compare(original, written)) << report;

  auto reloaded = parse_model(saved.value());
  ASSERT_TRUE(reloaded.ok()) << reloaded.error();
  auto saved_again = serialize_model(reloaded.value());
  ASSERT_TRUE(saved_again.ok());
  EXPECT_TRUE(saved_again.value() == saved.value()) << "second save differs from the first";
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(BackendTestData, RoundTrip, ::testing::ValuesIn(test_models()), case_name);

TEST(RoundTripCorpus, AllBackendTestModelsArePresent) {
  // Debian's libonnx-testdata 1.12 ships 1,072 models in these four folders.
  EXPECT_EQ(test_models().size(), 1072u) << "is libonnx-testdata installed?";
}

}  // namespace
}  // namespace onnxkit
