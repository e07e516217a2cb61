// What flows along a graph edge at run time: a tensor, a sequence of tensors, or nothing
// (an omitted optional input, or an optional value without an element).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onnxkit/tensor.h"

namespace onnxkit {

// One value: a run's input or output.
class RuntimeValue {
 public:
  enum class Kind { kNone, kTensor, kSequence };

  // None.
  RuntimeValue() = default;
  // A tensor (implicit, so a Tensor can be passed wherever a value is expected).
  RuntimeValue(Tensor tensor) : kind_(Kind::kTensor), tensor_(std::move(tensor)) {}  // NOLINT
  // A sequence; `elem_type` gives an empty sequence its element type.
  static RuntimeValue sequence(std::vector<Tensor> tensors, DType elem_type = DType::kUndefined) {
    RuntimeValue value;
    value.kind_ = Kind::kSequence;
    value.sequence_ = std::make_shared<std::vector<Tensor>>(std::move(tensors));
    value.sequence_elem_type_ = elem_type;
    return value;
  }

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }

  // The tensor / the sequence's tensors; throw onnxkit::Error for another kind.
  const Tensor& tensor() const;
  Tensor& mutable_tensor();
  const std::vector<Tensor>& sequence_items() const;
  // Element type of an empty sequence (items carry their own otherwise).
  DType sequence_elem_type() const { return sequence_elem_type_; }

  // "float[2,3]", "seq<3 x float>", "none"
  std::string describe() const;

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<const std::vector<Tensor>> sequence_;
  DType sequence_elem_type_ = DType::kUndefined;
};

}  // namespace onnxkit
