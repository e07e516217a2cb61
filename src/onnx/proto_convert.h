// ModelProto <-> IR. Internal to src/onnx: the only header that names protobuf types.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/buffer.h"
#include "ir/model.h"
#include "onnx/external_data.h"

#include <onnx/onnx_pb.h>

namespace onnxkit::onnx_io {

struct ReadContext {
  // Folder that external data locations are relative to; empty: external data refused.
  std::filesystem::path model_dir;
  ExternalDataFiles* external_files = nullptr;
  // Payloads of main-graph initializers already located in the mapped model file.
  std::unordered_map<size_t, std::shared_ptr<Buffer>> initializer_payloads;
};

// How tensors are written.
struct WriteContext {
  // When set, tensors of at least `external_threshold` bytes go to this file.
  ExternalDataWriter* external = nullptr;
  size_t external_threshold = 1024;
  // For libonnx's checker and shape inference: tensors of at least this many bytes are
  // written without their data (dims and type only), so big models are not copied.
  size_t omit_data_threshold = SIZE_MAX;
  // The inline raw data of this graph's initializers is left out of the message; the file
  // writer streams it from the tensors instead of copying it into protobuf strings.
  const Graph* stream_payloads_of = nullptr;
};

Model model_from_proto(const onnx::ModelProto& proto, ReadContext& context);
void model_to_proto(const Model& model, onnx::ModelProto& proto, WriteContext& context);

Tensor tensor_from_proto(const onnx::TensorProto& proto, ReadContext& context,
                         std::shared_ptr<Buffer> payload = nullptr);
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto& proto, WriteContext& context);

void node_to_proto(const Node& node, onnx::NodeProto& proto, WriteContext& context);
Function function_from_proto(const onnx::FunctionProto& proto, ReadContext& context);

ValueType type_from_proto(const onnx::TypeProto& proto);
void type_to_proto(const ValueType& type, onnx::TypeProto& proto);

}  // namespace onnxkit::onnx_io
