// The Open Inference Protocol's (KServe v2) infer request and response bodies: JSON tensors
// (nested or flat data) and the binary tensor data extension (a JSON header of
// Inference-Header-Content-Length bytes, then each binary tensor's raw bytes in order).
// Pure functions over bytes, independent of the HTTP server.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "onnxkit/session.h"

namespace onnxkit::serve {

// An error a client caused or the server cannot serve right now: the HTTP status to answer
// with (400 bad request, 404 unknown model, 413 too large, 503 unavailable) and the message.
class RequestError : public Error {
 public:
  RequestError(int http_status, std::string message)
      : Error(std::move(message)), http_status_(http_status) {}
  int http_status() const { return http_status_; }

 private:
  int http_status_;
};

// The protocol's datatype names ("FP32", "INT64", "BYTES", ...); nullopt for element types
// it has no name for.
std::optional<std::string_view> protocol_datatype(DType dtype);
std::optional<DType> dtype_from_protocol(std::string_view datatype);

// The shape the metadata endpoint shows: declared dims, -1 where not fixed.
std::vector<int64_t> protocol_shape(const ValueInfo& info);

// Bytes of a region a request names (Triton's shared-memory extension). Copied in and out
// rather than handed out as a pointer: the client owns the memory and may shrink it at any
// time, which would make a mapped read fault.
class SharedMemoryView {
 public:
  virtual ~SharedMemoryView() = default;
  virtual uint64_t size() const = 0;
  // Copies the view's size() bytes to `out`; throws RequestError (400, naming `where`) when
  // they are no longer there.
  virtual void read(char* out, const std::string& where) const = 0;
  // Copies `bytes` (at most size()) to the view's start.
  virtual void write(std::string_view bytes, const std::string& where) const = 0;
};

// Resolves a tensor's shared-memory parameters to the bytes [offset, offset + byte_size) of
// region `name`; throws RequestError (400, naming `where`) when the region is unknown or too
// small. An empty resolver: the server takes no shared memory.
using SharedMemoryResolver = std::function<std::shared_ptr<const SharedMemoryView>(
    const std::string& name, uint64_t offset, uint64_t byte_size, const std::string& where)>;

// An output to be written into a client's shared memory instead of the response body.
struct SharedMemoryOutput {
  std::string region;
  std::shared_ptr<const SharedMemoryView> view;
};

struct RequestedOutput {
  std::string name;
  bool binary = false;
  // Triton's classification extension (the output's "classification" parameter): when > 0,
  // the output is answered as BYTES "<value>:<index>[:<label>]" strings of its `classification`
  // highest elements per row instead of the tensor.
  int64_t classification = 0;
  std::optional<SharedMemoryOutput> shared_memory = std::nullopt;
};

// Class labels per output name (line N of a model's label file names class N), for
// classification answers.
using OutputLabels = std::map<std::string, std::vector<std::string>, std::less<>>;

// The classification answer for `tensor`: its `count` highest elements (ties: the lower index
// first; NaN last) as "<value>:<index>[:<label>]" strings, with the value written as Triton
// writes it (std::to_string). A tensor of rank 2 or more is ranked row by row along its first
// (batch) dim: shape [rows, k]; a smaller one as a whole: shape [k]; k = min(count, elements
// per row). `labels` may be null. Throws RequestError (400) for a BYTES or BOOL tensor.
Tensor classify(const Tensor& tensor, int64_t count, const std::vector<std::string>* labels,
                const std::string& output_name);

// What a request asks for, with its inputs as tensors checked against the model.
struct InferRequest {
  std::string id;
  bool has_id = false;
  NamedValues inputs;  // in the request's order
  // The outputs asked for; empty: every output, in binary when binary_output_default.
  std::vector<RequestedOutput> outputs;
  bool binary_output_default = false;
};

struct ProtocolLimits {
  // Most elements in one input tensor.
  int64_t max_tensor_elements = int64_t{1} << 28;
};

// Parses an infer request body. `header_length` is the Inference-Header-Content-Length
// header's value when the request has one (the JSON part's size; the rest is binary tensor
// data). Inputs are checked against `model_inputs` (names, datatypes, declared dims) and the
// outputs asked for against `model_outputs`; inputs and outputs in shared memory
// ("shared_memory_region", "shared_memory_byte_size", "shared_memory_offset") go through
// `shared_memory`. Throws RequestError (400, naming the field).
InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length,
                                 const std::vector<ValueInfo>& model_inputs,
                                 const std::vector<ValueInfo>& model_outputs,
                                 const ProtocolLimits& limits = {},
                                 const SharedMemoryResolver& shared_memory = {});

// A response body; `header_length` set when it carries binary data (the JSON part's size).
struct EncodedResponse {
  std::string body;
  std::optional<size_t> header_length;
};

// Encodes the outputs the request asked for (all of `outputs` when it named none), those asked
// for as classifications through `classify` with their `labels` (may be null); those asked for
// in shared memory are written there (RequestError 400 when they do not fit) and answered
// without data.
EncodedResponse encode_infer_response(const std::string& model_name,
                                      const std::string& model_version, const InferRequest& request,
                                      const NamedValues& outputs,
                                      const OutputLabels* labels = nullptr);

// A request target's path, split at '/' into percent-decoded segments (the query dropped):
// "/v2/models/my%20model/infer" -> {"v2", "models", "my model", "infer"}. Throws RequestError
// (400, naming the path) on a malformed escape or one that decodes to a NUL byte.
std::vector<std::string> path_segments(std::string_view target);

// The Inference-Header-Content-Length header's value; throws RequestError (400) unless it
// is a decimal number.
size_t parse_header_length(std::string_view value);

// Standard base64 (RFC 4648 alphabet, '=' padding optional), as Triton's load requests carry
// files. Throws RequestError (400, naming `what`) on any other character or a bad length.
std::string decode_base64(std::string_view text, const std::string& what);

// `{"error": message}`.
std::string error_body(std::string_view message);

}  // namespace onnxkit::serve
