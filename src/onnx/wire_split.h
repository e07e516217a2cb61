// Splits a serialized ModelProto into a small message without the big raw_data payloads
// of the main graph's initializers, plus where those payloads lie in the input bytes.
//
// Parsing that small message with protobuf and viewing the payloads in the mapped file
// is what lets a 1.9 GB single-file model load without copying its weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace onnxkit::onnx_io {

struct RawDataLocation {
  size_t initializer_index;  // position among GraphProto.initializer
  size_t offset;             // byte offset of the payload in the input
  size_t length;
};

struct SplitModel {
  std::string stripped;  // the ModelProto without the listed payloads
  std::vector<RawDataLocation> payloads;
};

// Payloads of at least `min_payload` bytes are taken out. Throws Error with the byte
// offset when the input is not well-formed protobuf wire format (truncated, random bytes).
SplitModel split_model_bytes(std::span<const std::byte> bytes, size_t min_payload);

}  // namespace onnxkit::onnx_io
