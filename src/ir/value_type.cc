#include "ir/value_type.h"

namespace onnxkit {

std::string symbolic_shape_to_string(const SymbolicShape& shape) {
  if (!shape) return "[*]";
  std::string text = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i) text += ",";
    const Dim& dim = (*shape)[i];
    if (dim.is_known()) {
      text += std::to_string(dim.value);
    } else if (dim.is_symbolic()) {
      text += dim.param;
    } else {
      text += "?";
    }
  }
  return text + "]";
}

std::string value_type_to_string(const ValueType& type) {
  auto element = [&]() {
    return type.has_element() ? value_type_to_string(type.element_type()) : std::string("?");
  };
  switch (type.kind) {
    case ValueType::Kind::kNone:
      return "?";
    case ValueType::Kind::kTensor:
      return std::string(dtype_name(type.elem_type)) + symbolic_shape_to_string(type.shape);
    case ValueType::Kind::kSparseTensor:
      return "sparse(" + std::string(dtype_name(type.elem_type)) +
             symbolic_shape_to_string(type.shape) + ")";
    case ValueType::Kind::kSequence:
      return "seq(" + element() + ")";
    case ValueType::Kind::kOptional:
      return "optional(" + element() + ")";
    case ValueType::Kind::kMap:
      return "map(" + std::string(dtype_name(type.elem_type)) + "," + element() + ")";
  }
  return "?";
}

}  // namespace onnxkit
