// Target (e): the server's request parsing, from the bytes a client sends: the HTTP request
// (Boost.Beast's parser under the server's kind of limits), its path (percent-decoded
// segments), Inference-Header-Content-Length, Content-Encoding (gzip/deflate inflated under a
// bound), and the Open Inference Protocol body, JSON or binary extension, checked against a
// model's inputs (shared memory through a fake region), and the classification answers it
// asks for. A request that parses must encode back (binary extension) and parse again to the
// same tensors; anything else is a finding.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "serve/content_encoding.h"
#include "serve/inference_protocol.h"

using namespace onnxkit;
using namespace onnxkit::serve;
namespace http = boost::beast::http;

namespace {

constexpr size_t kMaxBodyBytes = size_t{1} << 20;

ValueInfo input(std::string name, DType dtype, std::optional<std::vector<Dim>> dims) {
  ValueInfo info;
  info.name = std::move(name);
  info.is_tensor = true;
  info.dtype = dtype;
  info.shape = std::move(dims);
  return info;
}

// A model with a declared FP32 input (batch dim free), a BYTES input, and an input that
// takes any datatype and shape (so every datatype's parser is reachable).
const std::vector<ValueInfo>& model_inputs() {
  static const std::vector<ValueInfo> inputs{
      input("x", DType::kFloat, std::vector<Dim>{Dim::symbol("batch"), Dim::known(3)}),
      input("s", DType::kString, std::vector<Dim>{Dim::symbol("n")}),
      input("any", DType::kUndefined, std::nullopt),
  };
  return inputs;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString) return a.strings() == b.strings();
  return a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

constexpr uint64_t kRegionBytes = 64 * 1024;

// Part of a fake 64 KiB shared memory region.
class FakeRegionView : public SharedMemoryView {
 public:
  FakeRegionView(uint64_t offset, uint64_t size) : offset_(offset), size_(size) {}
  uint64_t size() const override { return size_; }
  void read(char* out, const std::string&) const override {
    std::memcpy(out, region() + offset_, size_);
  }
  void write(std::string_view bytes, const std::string&) const override {
    if (bytes.size() > size_) finding("a shared memory write past its view");
    std::memcpy(region() + offset_, bytes.data(), bytes.size());
  }

 private:
  static char* region() {
    static char bytes[kRegionBytes];
    return bytes;
  }
  uint64_t offset_;
  uint64_t size_;
};

void parse_body(const http::request<http::string_body>& request) {
  std::optional<size_t> header_length;
  if (auto field = request.find("Inference-Header-Content-Length"); field != request.end()) {
    header_length = parse_header_length(field->value());
  }
  std::string body = request.body();
  if (const auto encoding = request[http::field::content_encoding]; !encoding.empty()) {
    body = decode_content(std::move(body), encoding, kMaxBodyBytes);
    if (body.size() > kMaxBodyBytes) finding("a decoded body is over its bound");
  }
  ProtocolLimits limits;
  limits.max_tensor_elements = int64_t{1} << 20;
  const auto& inputs = model_inputs();
  // One shared memory region "r" of 64 KiB, resolved as the server's SharedMemoryRegions
  // resolves its regions (bounds checked, 400 otherwise).
  const SharedMemoryResolver shared_memory =
      [](const std::string& name, uint64_t offset, uint64_t byte_size,
         const std::string& where) -> std::shared_ptr<const SharedMemoryView> {
    if (name != "r" || offset > kRegionBytes || byte_size > kRegionBytes - offset) {
      throw RequestError(400, where + ": no such shared memory");
    }
    return std::make_shared<FakeRegionView>(offset, byte_size);
  };
  InferRequest parsed =
      parse_infer_request(body, header_length, inputs, inputs, limits, shared_memory);
  for (const auto& [name, value] : parsed.inputs) {
    const Tensor& tensor = value.tensor();
    if (tensor.numel() > limits.max_tensor_elements) finding("a tensor is over the element limit");
  }

  // Classification answers of the inputs the request also asks for as outputs: BYTES
  // [rows, k] or [k], k at most the count asked for.
  for (const RequestedOutput& output : parsed.outputs) {
    if (!output.classification) continue;
    for (const auto& [name, value] : parsed.inputs) {
      if (name != output.name) continue;
      const Tensor& tensor = value.tensor();
      Tensor classes;
      try {
        classes = classify(tensor, output.classification, nullptr, name);
      } catch (const RequestError& e) {
        if (e.http_status() != 400) finding("a classification error is not a 400");
        continue;
      }
      const int64_t k = classes.shape().back();
      if (classes.dtype() != DType::kString || k > output.classification ||
          (tensor.rank() >= 2 && classes.shape()[0] != tensor.shape()[0]) ||
          (tensor.rank() < 2 && k > tensor.numel())) {
        finding("a classification answer of the wrong type or shape");
      }
    }
  }
  // A load request's files are base64 in the same kind of body.
  try {
    (void)decode_base64(body, "body");
  } catch (const RequestError&) {
  }

  // Out in the binary extension and back in: the same tensors.
  parsed.outputs.clear();
  parsed.binary_output_default = true;
  const EncodedResponse encoded = encode_infer_response("m", "1", parsed, parsed.inputs);
  if (!encoded.header_length || *encoded.header_length > encoded.body.size()) {
    finding("a binary response has no valid header length");
  }
  auto header = nlohmann::json::parse(encoded.body.substr(0, *encoded.header_length));
  const std::string again_header = nlohmann::json{{"inputs", header["outputs"]}}.dump();
  const std::string again_body = again_header + encoded.body.substr(*encoded.header_length);
  InferRequest again;
  try {
    again = parse_infer_request(again_body, again_header.size(), inputs, inputs, limits);
  } catch (const RequestError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("a parsed request's encoding does not parse back");
  }
  if (again.inputs.size() != parsed.inputs.size()) finding("inputs lost in the round trip");
  for (size_t i = 0; i < parsed.inputs.size(); ++i) {
    if (again.inputs[i].first != parsed.inputs[i].first ||
        !same_bytes(again.inputs[i].second.tensor(), parsed.inputs[i].second.tensor())) {
      finding("an input changed in the round trip");
    }
  }
  if (accepts_gzip(request[http::field::accept_encoding])) {
    const std::string compressed = gzip(encoded.body);
    if (decode_content(compressed, "gzip", encoded.body.size()) != encoded.body) {
      finding("gzip does not round trip");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(kMaxBodyBytes);
  parser.eager(true);
  boost::beast::error_code error;
  size_t offset = 0;
  while (offset < size && !parser.is_done()) {
    const size_t used = parser.put(boost::asio::buffer(data + offset, size - offset), error);
    offset += used;
    // need_more: the parser wants bytes past these. Beast's read algorithms, which the server
    // uses, read more from the socket before the next put; a put on no new bytes breaks the
    // parser's preconditions (an assertion in its chunk-header parse). Here the client has
    // sent all it will.
    if (error == http::error::need_more) {
      error = {};
      break;
    }
    if (error || used == 0) break;
  }
  // The end of the bytes is the client closing its side (Beast wants some bytes first).
  if (!error && !parser.is_done() && parser.got_some()) parser.put_eof(error);
  if (error || !parser.is_done()) return 0;
  const http::request<http::string_body>& request = parser.get();
  try {
    (void)path_segments(request.target());
  } catch (const RequestError& e) {
    if (e.http_status() != 400) finding("a bad path is not a 400");
  }
  try {
    parse_body(request);
  } catch (const RequestError& e) {
    const int status = e.http_status();
    if (status != 400 && status != 413 && status != 415) finding("an unexpected status");
    if (std::strlen(e.what()) == 0) finding("an error without a message");
  }
  return 0;
}
