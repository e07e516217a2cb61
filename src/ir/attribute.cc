#include "ir/attribute.h"

#include "ir/graph.h"

namespace onnxkit {

// Out of line so that unique_ptr<Graph> sees the complete type.
Attribute::Attribute() = default;
Attribute::~Attribute() = default;
Attribute::Attribute(Attribute&&) noexcept = default;
Attribute& Attribute::operator=(Attribute&&) noexcept = default;

std::string_view attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kUndefined:
      return "undefined";
    case AttrType::kFloat:
      return "float";
    case AttrType::kInt:
      return "int";
    case AttrType::kString:
      return "string";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kGraph:
      return "graph";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kInts:
      return "ints";
    case AttrType::kStrings:
      return "strings";
    case AttrType::kTensors:
      return "tensors";
    case AttrType::kGraphs:
      return "graphs";
    case AttrType::kSparseTensor:
      return "sparse_tensor";
    case AttrType::kSparseTensors:
      return "sparse_tensors";
    case AttrType::kTypeProto:
      return "type_proto";
    case AttrType::kTypeProtos:
      return "type_protos";
  }
  return "unknown";
}

}  // namespace onnxkit
