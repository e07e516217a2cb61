// Tensor files: ONNX TensorProto / SequenceProto / OptionalProto `.pb` files (the backend
// test data format) read into and written from runtime values.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"
#include "ir/value_type.h"
#include "onnxkit/runtime_value.h"

namespace onnxkit {

// Reads a serialized TensorProto.
Result<Tensor> read_tensor_pb(const std::filesystem::path& path);
// Reads a .pb holding the kind `type` describes: TensorProto for tensors, SequenceProto for
// sequences, OptionalProto for optionals (kNone reads a TensorProto).
Result<RuntimeValue> read_value_pb(const std::filesystem::path& path, const ValueType& type);
// Writes a tensor (or a sequence as SequenceProto) named `name`.
Status write_value_pb(const RuntimeValue& value, const std::string& name,
                      const std::filesystem::path& path);

}  // namespace onnxkit
