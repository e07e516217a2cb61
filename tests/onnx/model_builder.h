// Tiny ModelProtos for tests, written straight with protobuf.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace onnxkit::testing {

inline void add_value_info(onnx::ValueInfoProto* info, const std::string& name,
                           const std::vector<int64_t>& dims) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// y = x + w, with w of `size` floats (data inline unless the caller changes it).
inline onnx::ModelProto add_model(int64_t size, int64_t opset = 13) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("onnxkit-test");
  auto* opset_import = model.add_opset_import();
  opset_import->set_domain("");
  opset_import->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name("add");
  add_value_info(graph->add_input(), "x", {size});
  add_value_info(graph->add_output(), "y", {size});
  auto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(size);
  std::vector<float> values(static_cast<size_t>(size));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  w->set_raw_data(values.data(), values.size() * sizeof(float));
  auto* node = graph->add_node();
  node->set_op_type("Add");
  node->set_name("add_0");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  return model;
}

inline void write_model(const onnx::ModelProto& model, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  model.SerializeToOstream(&out);
}

inline void set_external(onnx::TensorProto* tensor, const std::string& location, int64_t offset,
                         int64_t length) {
  tensor->clear_raw_data();
  tensor->clear_external_data();
  tensor->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* entry = tensor->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

}  // namespace onnxkit::testing
