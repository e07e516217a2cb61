#include "onnxkit/runtime_value.h"

#include "core/status.h"

namespace onnxkit {

const Tensor& RuntimeValue::tensor() const {
  if (kind_ != Kind::kTensor) fail("expected a tensor, got {}", describe());
  return tensor_;
}

Tensor& RuntimeValue::mutable_tensor() {
  if (kind_ != Kind::kTensor) fail("expected a tensor, got {}", describe());
  return tensor_;
}

const std::vector<Tensor>& RuntimeValue::sequence_items() const {
  if (kind_ != Kind::kSequence) fail("expected a sequence, got {}", describe());
  return *sequence_;
}

std::string RuntimeValue::describe() const {
  switch (kind_) {
    case Kind::kNone:
      return "none";
    case Kind::kTensor:
      return std::string(dtype_name(tensor_.dtype())) + shape_to_string(tensor_.shape());
    case Kind::kSequence: {
      DType type = sequence_->empty() ? sequence_elem_type_ : (*sequence_)[0].dtype();
      return fmt::format("seq<{} x {}>", sequence_->size(), dtype_name(type));
    }
  }
  return "?";
}

}  // namespace onnxkit
