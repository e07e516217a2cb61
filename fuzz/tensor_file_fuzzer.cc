// Target (d): the input-file parsers `run --input` and the conformance runner use: .npy
// (read_npy), TensorProto (read_tensor_pb) and SequenceProto / OptionalProto
// (read_value_pb). The first byte picks the parser, the rest is the file.
#include <string>

#include "fuzz_util.h"
#include "ir/npy.h"
#include "ir/value_type.h"
#include "onnx/tensor_io.h"

using namespace onnxkit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 4;
  const auto path =
      fuzz::write_scratch_file(which == 0 ? "input.npy" : "input.pb", data + 1, size - 1);
  switch (which) {
    case 0:
      (void)read_npy(path);
      break;
    case 1:
      (void)read_tensor_pb(path);
      break;
    case 2: {
      ValueType sequence;
      sequence.kind = ValueType::Kind::kSequence;
      sequence.element.push_back(ValueType::tensor(DType::kFloat));
      (void)read_value_pb(path, sequence);
      break;
    }
    default: {
      ValueType optional;
      optional.kind = ValueType::Kind::kOptional;
      optional.element.push_back(ValueType::tensor(DType::kFloat));
      (void)read_value_pb(path, optional);
      break;
    }
  }
  return 0;
}
