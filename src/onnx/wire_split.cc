#include "onnx/wire_split.h"

#include "core/status.h"

namespace onnxkit::onnx_io {
namespace {

// Field numbers of the path ModelProto.graph -> GraphProto.initializer -> TensorProto.raw_data.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorRawData = 9;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, size_t base) : bytes_(bytes), base_(base) {}
  bool done() const { return pos_ >= bytes_.size(); }
  size_t position() const { return base_ + pos_; }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) fail("truncated varint at byte {}", position());
      auto byte = static_cast<uint8_t>(bytes_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail("malformed varint at byte {}", position());
  }

  struct Field {
    uint32_t number;
    uint32_t wire_type;
    size_t start;          // offset of the tag, relative to this reader
    size_t payload_start;  // offset of the payload (after a length prefix)
    size_t end;            // offset just past the field
  };

  Field next() {
    Field field{};
    field.start = pos_;
    uint64_t tag = varint();
    field.number = static_cast<uint32_t>(tag >> 3);
    field.wire_type = static_cast<uint32_t>(tag & 7);
    if (field.number == 0) fail("invalid field number 0 at byte {}", base_ + field.start);
    switch (field.wire_type) {
      case kVarint:
        varint();
        break;
      case kFixed64:
        skip(8);
        break;
      case kFixed32:
        skip(4);
        break;
      case kLengthDelimited: {
        uint64_t length = varint();
        field.payload_start = pos_;
        skip(length);
        break;
      }
      default:
        fail("unsupported wire type {} at byte {}", field.wire_type, base_ + field.start);
    }
    field.end = pos_;
    if (field.wire_type != kLengthDelimited) field.payload_start = field.end;
    return field;
  }

  std::span<const std::byte> slice(size_t begin, size_t end) const {
    return bytes_.subspan(begin, end - begin);
  }

 private:
  void skip(uint64_t count) {
    if (count > bytes_.size() - pos_) {
      fail("field at byte {} runs past the end of the data ({} bytes)", position(),
           base_ + bytes_.size());
    }
    pos_ += count;
  }

  std::span<const std::byte> bytes_;
  size_t base_;
  size_t pos_ = 0;
};

void append(std::string& out, std::span<const std::byte> bytes) {
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void append_length_delimited(std::string& out, uint32_t number, const std::string& payload) {
  append_varint(out, (static_cast<uint64_t>(number) << 3) | kLengthDelimited);
  append_varint(out, payload.size());
  out += payload;
}

// Rewrites one TensorProto, dropping a large raw_data field.
std::string strip_tensor(std::span<const std::byte> bytes, size_t base, size_t index,
                         size_t min_payload, std::vector<RawDataLocation>& payloads) {
  Reader reader(bytes, base);
  std::string out;
  while (!reader.done()) {
    auto field = reader.next();
    size_t length = field.end - field.payload_start;
    if (field.number == kTensorRawData && field.wire_type == kLengthDelimited &&
        length >= min_payload) {
      // A repeated raw_data field overrides the earlier one (last one wins).
      std::erase_if(payloads,
                    [&](const RawDataLocation& p) { return p.initializer_index == index; });
      payloads.push_back({index, base + field.payload_start, length});
      continue;
    }
    append(out, reader.slice(field.start, field.end));
  }
  return out;
}

std::string strip_graph(std::span<const std::byte> bytes, size_t base, size_t& initializer_count,
                        size_t min_payload, std::vector<RawDataLocation>& payloads) {
  Reader reader(bytes, base);
  std::string out;
  while (!reader.done()) {
    auto field = reader.next();
    if (field.number == kGraphInitializer && field.wire_type == kLengthDelimited) {
      std::string tensor =
          strip_tensor(reader.slice(field.payload_start, field.end), base + field.payload_start,
                       initializer_count++, min_payload, payloads);
      append_length_delimited(out, kGraphInitializer, tensor);
      continue;
    }
    append(out, reader.slice(field.start, field.end));
  }
  return out;
}

}  // namespace

SplitModel split_model_bytes(std::span<const std::byte> bytes, size_t min_payload) {
  SplitModel result;
  Reader reader(bytes, 0);
  size_t initializer_count = 0;
  while (!reader.done()) {
    auto field = reader.next();
    if (field.number == kModelGraph && field.wire_type == kLengthDelimited) {
      std::string graph =
          strip_graph(reader.slice(field.payload_start, field.end), field.payload_start,
                      initializer_count, min_payload, result.payloads);
      append_length_delimited(result.stripped, kModelGraph, graph);
      continue;
    }
    append(result.stripped, reader.slice(field.start, field.end));
  }
  return result;
}

}  // namespace onnxkit::onnx_io
