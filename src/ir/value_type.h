// The static type of a value: tensor (dtype + shape with symbolic dims), sparse tensor,
// sequence, optional or map, as ONNX's TypeProto describes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxkit/dtype.h"
#include "onnxkit/value_info.h"

namespace onnxkit {

std::string symbolic_shape_to_string(const SymbolicShape& shape);

struct ValueType {
  enum class Kind { kNone, kTensor, kSparseTensor, kSequence, kOptional, kMap };

  Kind kind = Kind::kNone;
  DType elem_type = DType::kUndefined;  // tensor / sparse tensor element, map key
  SymbolicShape shape;                  // tensor / sparse tensor
  std::vector<ValueType> element;       // sequence / optional element, map value: 0 or 1 entry
  std::string denotation;

  static ValueType tensor(DType dtype, SymbolicShape shape = std::nullopt) {
    ValueType type;
    type.kind = Kind::kTensor;
    type.elem_type = dtype;
    type.shape = std::move(shape);
    return type;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  bool has_element() const { return !element.empty(); }
  const ValueType& element_type() const { return element.at(0); }
  bool operator==(const ValueType&) const = default;
};

// "float[batch,3,224,224]", "seq(int64[?])", "optional(float[])", ...
std::string value_type_to_string(const ValueType& type);

}  // namespace onnxkit
