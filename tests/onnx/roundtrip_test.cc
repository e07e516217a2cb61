// Every model of the ONNX backend test data loads, saves and loads back unchanged.
//
// "Unchanged" is checked twice: the saved ModelProto is equivalent (protobuf's
// MessageDifferencer, unset == default) to the original after normalizing tensor encodings
// (onnxkit writes raw_data where the file may have used float_data etc.; the standard
// domain comes back as "" where the file spelled it "ai.onnx"), and saving the reloaded
// model again gives the same bytes.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/model.h"
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

void normalize_domain(std::string& domain) {
  if (domain == "ai.onnx") domain.clear();
}

void normalize_opsets(google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& opsets) {
  for (auto& opset : opsets) normalize_domain(*opset.mutable_domain());
}

void normalize_nodes(google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
  for (auto& node : nodes) {
    if (node.has_domain()) normalize_domain(*node.mutable_domain());
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
  normalize_opsets(*original.mutable_opset_import());
  for (auto& f : *original.mutable_functions()) {
    if (f.has_domain()) normalize_domain(*f.mutable_domain());
    normalize_opsets(*f.mutable_opset_import());
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

// A file that spells the standard domain "ai.onnx" loads with "" everywhere (nodes, nested
// graphs, opset imports, functions) and is saved with "".
TEST(RoundTripDomains, StandardDomainLoadsAsEmpty) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  auto* opset = proto.add_opset_import();
  opset->set_domain("ai.onnx");
  opset->set_version(13);
  auto* graph = proto.mutable_graph();
  graph->set_name("g");
  auto* cond = graph->add_input();
  cond->set_name("cond");
  cond->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  auto* x = graph->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  graph->add_output()->set_name("y");
  auto* if_node = graph->add_node();
  if_node->set_op_type("If");
  if_node->set_domain("ai.onnx");
  if_node->add_input("cond");
  if_node->add_output("y");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* attribute = if_node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    auto* branch = attribute->mutable_g();
    branch->set_name(name);
    auto* neg = branch->add_node();
    neg->set_op_type("Neg");
    neg->set_domain("ai.onnx");
    neg->add_input("x");
    neg->add_output(std::string(name) + "_out");
    branch->add_output()->set_name(std::string(name) + "_out");
  }
  auto* function = proto.add_functions();
  function->set_name("Twice");
  function->set_domain("local");
  auto* function_opset = function->add_opset_import();
  function_opset->set_domain("ai.onnx");
  function_opset->set_version(13);
  function->add_input("a");
  function->add_output("b");
  auto* add = function->add_node();
  add->set_op_type("Add");
  add->set_domain("ai.onnx");
  add->add_input("a");
  add->add_input("a");
  add->add_output("b");

  auto loaded = parse_model(proto.SerializeAsString());
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Model& model = loaded.value();
  EXPECT_EQ(model.opset_imports, (std::vector<OpsetImport>{{"", 13}}));
  EXPECT_EQ(model.opset_version("ai.onnx"), 13);
  const Node* if_ir = model.graph().nodes()[0];
  EXPECT_EQ(if_ir->domain(), "");
  for (const Graph* branch : if_ir->subgraphs()) EXPECT_EQ(branch->nodes()[0]->domain(), "");
  ASSERT_EQ(model.functions.size(), 1u);
  EXPECT_EQ(model.functions[0].opset_imports, (std::vector<OpsetImport>{{"", 13}}));
  EXPECT_EQ(model.functions[0].body->nodes()[0]->domain(), "");

  auto saved = serialize_model(model);
  ASSERT_TRUE(saved.ok()) << saved.error();
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(saved.value()));
  EXPECT_EQ(written.opset_import(0).domain(), "");
  EXPECT_FALSE(written.graph().node(0).has_domain());
  EXPECT_FALSE(written.graph().node(0).attribute(0).g().node(0).has_domain());
  EXPECT_EQ(written.functions(0).opset_import(0).domain(), "");
  EXPECT_FALSE(written.functions(0).node(0).has_domain());
}

TEST(RoundTripCorpus, AllBackendTestModelsArePresent) {
  // Debian's libonnx-testdata 1.12 ships 1,072 models in these four folders.
  EXPECT_EQ(test_models().size(), 1072u) << "is libonnx-testdata installed?";
}

}  // namespace
}  // namespace onnxkit
