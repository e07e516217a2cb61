#include "onnx/tensor_io.h"

#include <onnx/onnx-data_pb.h>

#include <fstream>

#include "onnx/proto_convert.h"

namespace onnxkit {
namespace {

template <typename Proto>
Proto parse_file(const std::filesystem::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open", path.string());
  Proto proto;
  if (!proto.ParseFromIstream(&in)) fail("{}: not a valid {} file", path.string(), what);
  return proto;
}

Tensor tensor_from(const onnx::TensorProto& proto) {
  onnx_io::ReadContext context;
  return onnx_io::tensor_from_proto(proto, context);
}

RuntimeValue sequence_from(const onnx::SequenceProto& proto) {
  std::vector<Tensor> items;
  for (const auto& tensor : proto.tensor_values()) items.push_back(tensor_from(tensor));
  if (proto.sequence_values_size() || proto.map_values_size() || proto.optional_values_size()) {
    fail("sequences of sequences, maps or optionals are not supported");
  }
  return RuntimeValue::sequence(std::move(items));
}

RuntimeValue optional_from(const onnx::OptionalProto& proto) {
  switch (proto.elem_type()) {
    case onnx::OptionalProto::TENSOR:
      return RuntimeValue(tensor_from(proto.tensor_value()));
    case onnx::OptionalProto::SEQUENCE:
      return sequence_from(proto.sequence_value());
    case onnx::OptionalProto::UNDEFINED:
      return RuntimeValue();
    default:
      fail("optional of element type {} is not supported", proto.elem_type());
  }
}

}  // namespace

Result<Tensor> read_tensor_pb(const std::filesystem::path& path) {
  return capture([&] {
    try {
      return tensor_from(parse_file<onnx::TensorProto>(path, "TensorProto"));
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.find(path.string()) != std::string::npos) throw;
      fail("{}: {}", path.string(), message);
    }
  });
}

Result<RuntimeValue> read_value_pb(const std::filesystem::path& path, const ValueType& type) {
  return capture([&]() -> RuntimeValue {
    try {
      switch (type.kind) {
        case ValueType::Kind::kSequence:
          return sequence_from(parse_file<onnx::SequenceProto>(path, "SequenceProto"));
        case ValueType::Kind::kOptional:
          return optional_from(parse_file<onnx::OptionalProto>(path, "OptionalProto"));
        default:
          return RuntimeValue(tensor_from(parse_file<onnx::TensorProto>(path, "TensorProto")));
      }
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.find(path.string()) != std::string::npos) throw;
      fail("{}: {}", path.string(), message);
    }
  });
}

Status write_value_pb(const RuntimeValue& value, const std::string& name,
                      const std::filesystem::path& path) {
  return capture([&] {
    onnx_io::WriteContext context;
    std::string bytes;
    if (value.is_sequence()) {
      onnx::SequenceProto proto;
      proto.set_name(name);
      proto.set_elem_type(onnx::SequenceProto::TENSOR);
      for (const Tensor& item : value.sequence_items()) {
        onnx_io::tensor_to_proto(item, *proto.add_tensor_values(), context);
      }
      bytes = proto.SerializeAsString();
    } else {
      onnx::TensorProto proto;
      onnx_io::tensor_to_proto(value.tensor(), proto, context);
      proto.set_name(name);
      bytes = proto.SerializeAsString();
    }
    std::ofstream out(path, std::ios::binary);
    if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
      fail("{}: write failed", path.string());
    }
  });
}

}  // namespace onnxkit
