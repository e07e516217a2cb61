#include "serve/inference_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <ranges>
#include <set>

#include <simdjson.h>

#include "core/buffer.h"
#include "core/dtype_dispatch.h"
#include "core/half.h"

namespace onnxkit::serve {
namespace {

using nlohmann::json;

[[noreturn]] void bad_request(std::string message) {
  throw RequestError(400, std::move(message));
}

struct DatatypeName {
  DType dtype;
  std::string_view name;
};

constexpr DatatypeName kDatatypes[] = {
    {DType::kBool, "BOOL"},     {DType::kUInt8, "UINT8"},   {DType::kUInt16, "UINT16"},
    {DType::kUInt32, "UINT32"}, {DType::kUInt64, "UINT64"}, {DType::kInt8, "INT8"},
    {DType::kInt16, "INT16"},   {DType::kInt32, "INT32"},   {DType::kInt64, "INT64"},
    {DType::kFloat16, "FP16"},  {DType::kFloat, "FP32"},    {DType::kDouble, "FP64"},
    {DType::kString, "BYTES"},  {DType::kBFloat16, "BF16"},
};

// Request bodies are read with simdjson's DOM (its tape, then straight into the tensor's
// buffer): a JSON ResNet-50 input is 150,528 numbers, which a tree of nlohmann::json values
// took about 190 ms to build.
using JsonElement = simdjson::dom::element;
using JsonObject = simdjson::dom::object;
using JsonType = simdjson::dom::element_type;

std::optional<JsonElement> find_member(const JsonObject& object, std::string_view key) {
  JsonElement value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS) return std::nullopt;
  return value;
}

std::optional<JsonObject> as_object(const JsonElement& value) {
  JsonObject object;
  if (value.get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
  return object;
}

bool is_string(const JsonElement& value) {
  return value.type() == JsonType::STRING;
}

std::string string_of(const JsonElement& value) {
  return std::string(std::string_view(value));
}

// The value as JSON text, for messages.
std::string json_text(const JsonElement& value) {
  return simdjson::to_string(value);
}

// The "parameters" object of a request, input or output; nullopt when it has none.
std::optional<JsonObject> parameters_of(const JsonObject& object, const std::string& where) {
  const auto parameters_json = find_member(object, "parameters");
  if (!parameters_json) return std::nullopt;
  const auto parameters = as_object(*parameters_json);
  if (!parameters) bad_request(where + ": 'parameters' must be an object");
  return parameters;
}

// A request-level or per-tensor parameter that must be a bool when present.
bool bool_parameter(const JsonObject& object, const char* key, bool fallback,
                    const std::string& where) {
  const auto parameters = parameters_of(object, where);
  if (!parameters) return fallback;
  const auto value = find_member(*parameters, key);
  if (!value) return fallback;
  if (value->type() != JsonType::BOOL) {
    bad_request(where + ": parameter '" + key + "' must be a bool");
  }
  return bool(*value);
}

// An output's "classification" parameter: 0 when absent, else the positive class count.
int64_t classification_parameter(const JsonObject& output, const std::string& where) {
  const auto parameters = parameters_of(output, where);
  if (!parameters) return 0;
  const auto value = find_member(*parameters, "classification");
  if (!value) return 0;
  if (value->type() == JsonType::UINT64) return std::numeric_limits<int64_t>::max();
  if (value->type() != JsonType::INT64 || int64_t(*value) < 1) {
    bad_request(where +
                ": parameter 'classification' must be a positive integer (the number "
                "of classes to answer), not " +
                json_text(*value));
  }
  return int64_t(*value);
}

// The element types a classification ranks: those the protocol carries, but BYTES and BOOL.
bool classifiable(DType dtype) {
  return protocol_datatype(dtype) && dtype != DType::kString && dtype != DType::kBool;
}

struct SharedMemoryParameters {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

uint64_t non_negative_parameter(const JsonElement& value, const std::string& where,
                                const char* key) {
  if (value.type() == JsonType::UINT64) return uint64_t(value);
  if (value.type() != JsonType::INT64 || int64_t(value) < 0) {
    bad_request(where + ": parameter '" + key + "' must be a non-negative integer");
  }
  return static_cast<uint64_t>(int64_t(value));
}

// A tensor's shared-memory parameters: region and byte size both or neither, offset optional.
std::optional<SharedMemoryParameters> shared_memory_parameters(const JsonObject& tensor,
                                                               const std::string& where) {
  const auto parameters = parameters_of(tensor, where);
  if (!parameters) return std::nullopt;
  const auto region = find_member(*parameters, "shared_memory_region");
  const auto byte_size = find_member(*parameters, "shared_memory_byte_size");
  const auto offset = find_member(*parameters, "shared_memory_offset");
  if (!region && !byte_size && !offset) return std::nullopt;
  if (!region || !byte_size) {
    bad_request(where +
                ": shared memory needs both 'shared_memory_region' and "
                "'shared_memory_byte_size'");
  }
  if (!is_string(*region)) bad_request(where + ": 'shared_memory_region' must be a string");
  SharedMemoryParameters result;
  result.region = string_of(*region);
  result.byte_size = non_negative_parameter(*byte_size, where, "shared_memory_byte_size");
  if (offset) result.offset = non_negative_parameter(*offset, where, "shared_memory_offset");
  return result;
}

std::shared_ptr<const SharedMemoryView> resolve_shared_memory(
    const SharedMemoryResolver& resolver, const SharedMemoryParameters& parameters,
    const std::string& where) {
  if (!resolver) {
    bad_request(where +
                ": shared memory is not enabled on this server (onnxkit serve "
                "--allow-shared-memory)");
  }
  auto view = resolver(parameters.region, parameters.offset, parameters.byte_size, where);
  if (!view || view->size() != parameters.byte_size) {
    throw Error(where + ": shared memory resolved to the wrong size");
  }
  return view;
}

// Writes the numbers of (nested) `data` into `out` in row-major order; `data` holds
// `capacity` of them (count_leaves), the bound is a second guard.
template <typename T>
class JsonFiller {
 public:
  JsonFiller(T* out, int64_t capacity, const std::string& name)
      : out_(out), capacity_(capacity), name_(name) {}

  void visit(const JsonElement& value) {
    if (value.type() == JsonType::ARRAY) {
      for (const JsonElement item : simdjson::dom::array(value)) visit(item);
      return;
    }
    if (count_ >= capacity_) bad_request("input '" + name_ + "': data has too many elements");
    out_[count_] = convert(value);
    ++count_;
  }

 private:
  T convert(const JsonElement& value) const {
    const JsonType type = value.type();
    if constexpr (std::is_same_v<T, bool>) {
      if (type == JsonType::BOOL) return bool(value);
      if (type == JsonType::INT64) return int64_t(value) != 0;
      if (type == JsonType::UINT64) return true;  // above int64's range, so not 0
      bad_request(where() + " is not a bool");
    } else if constexpr (std::is_integral_v<T>) {
      if (type == JsonType::UINT64) {
        const uint64_t number = uint64_t(value);
        if (number > static_cast<uint64_t>(std::numeric_limits<T>::max())) out_of_range(value);
        return static_cast<T>(number);
      }
      if (type == JsonType::INT64) {
        const int64_t number = int64_t(value);
        if (std::is_unsigned_v<T> && number < 0) out_of_range(value);
        if constexpr (std::is_signed_v<T>) {
          if (number < std::numeric_limits<T>::min() || number > std::numeric_limits<T>::max()) {
            out_of_range(value);
          }
        } else {
          if (static_cast<uint64_t>(number) > std::numeric_limits<T>::max()) out_of_range(value);
        }
        return static_cast<T>(number);
      }
      bad_request(where() + " is not an integer (" + json_text(value) + ")");
    } else {
      double number = 0;
      if (value.get_double().get(number) != simdjson::SUCCESS) {
        bad_request(where() + " is not a number (" + json_text(value) + ")");
      }
      return T(number);
    }
  }
  [[noreturn]] void out_of_range(const JsonElement& value) const {
    bad_request(where() + " = " + json_text(value) + " is out of the datatype's range");
  }
  std::string where() const { return "input '" + name_ + "': element " + std::to_string(count_); }

  T* out_;
  int64_t capacity_;
  int64_t count_ = 0;
  const std::string& name_;
};

// Counts up to `limit` + 1 strings, so a huge array is refused before it is copied.
void collect_strings(const JsonElement& value, std::vector<std::string>& out, size_t limit,
                     const std::string& name) {
  if (value.type() == JsonType::ARRAY) {
    for (const JsonElement item : simdjson::dom::array(value)) {
      collect_strings(item, out, limit, name);
    }
    return;
  }
  if (!is_string(value)) {
    bad_request("input '" + name + "': BYTES element " + std::to_string(out.size()) +
                " is not a string");
  }
  if (out.size() > limit) return;
  out.push_back(string_of(value));
}

// The scalars of (nested) `value`: 1 for a scalar, the sum over an array's items.
int64_t count_leaves(const JsonElement& value) {
  if (value.type() != JsonType::ARRAY) return 1;
  int64_t count = 0;
  for (const JsonElement item : simdjson::dom::array(value)) count += count_leaves(item);
  return count;
}

std::string shape_text(const Shape& shape) {
  return shape_to_string(shape);
}

Tensor tensor_from_json(const JsonElement& data, DType dtype, const Shape& shape, int64_t count,
                        const std::string& name) {
  if (dtype == DType::kString) {
    std::vector<std::string> strings;
    collect_strings(data, strings, static_cast<size_t>(count), name);
    if (static_cast<int64_t>(strings.size()) != count) {
      bad_request("input '" + name + "': data has " +
                  (static_cast<int64_t>(strings.size()) > count ? "more than " : "") +
                  std::to_string(std::min<int64_t>(static_cast<int64_t>(strings.size()), count)) +
                  " elements, shape " + shape_text(shape) + " needs " + std::to_string(count));
    }
    return Tensor::from_strings(shape, std::move(strings));
  }
  // Counted first, so that a few bytes of request cannot make the server allocate the
  // tensor a large shape asks for before its data turns out to be missing.
  const int64_t given = count_leaves(data);
  if (given != count) {
    bad_request("input '" + name + "': data has " + std::to_string(given) + " elements, shape " +
                shape_text(shape) + " needs " + std::to_string(count));
  }
  // Every element is written before the tensor is used (or the request is refused).
  Tensor tensor = Tensor::from_buffer(
      dtype, shape, Buffer::allocate_uninitialized(static_cast<size_t>(count) * dtype_size(dtype)));
  dispatch_numeric_bool(dtype, "input '" + name + "'", [&]<typename T>(TypeTag<T>) {
    JsonFiller<T> filler(count ? tensor.mutable_data<T>() : nullptr, count, name);
    filler.visit(data);
  });
  return tensor;
}

// BYTES in the binary extension: each element a 4-byte little-endian length, then its bytes.
Tensor strings_from_binary(std::string_view bytes, const Shape& shape, int64_t count,
                           const std::string& name) {
  std::vector<std::string> strings;
  size_t offset = 0;
  while (offset < bytes.size()) {
    if (bytes.size() - offset < 4) {
      bad_request("input '" + name + "': binary BYTES data ends inside an element's length");
    }
    uint32_t length = 0;
    std::memcpy(&length, bytes.data() + offset, 4);
    offset += 4;
    if (bytes.size() - offset < length) {
      bad_request("input '" + name + "': binary BYTES element " + std::to_string(strings.size()) +
                  " has length " + std::to_string(length) + " past the end of its data");
    }
    strings.emplace_back(bytes.substr(offset, length));
    offset += length;
  }
  if (static_cast<int64_t>(strings.size()) != count) {
    bad_request("input '" + name + "': binary data holds " + std::to_string(strings.size()) +
                " BYTES elements, shape " + shape_text(shape) + " needs " + std::to_string(count));
  }
  return Tensor::from_strings(shape, std::move(strings));
}

// An input's raw bytes (binary extension or shared memory; `size_field` names where their
// size came from) as a tensor of `shape`.
// The bytes a numeric input of `shape` takes; 400 unless `size` (from `size_field`) is that.
uint64_t check_byte_count(uint64_t size, DType dtype, const Shape& shape, int64_t count,
                          const std::string& name, const char* size_field) {
  const uint64_t expected = static_cast<uint64_t>(count) * dtype_size(dtype);
  if (size != expected) {
    bad_request("input '" + name + "': " + size_field + " " + std::to_string(size) + ", shape " +
                shape_text(shape) + " of " + std::string(protocol_datatype(dtype).value_or("?")) +
                " needs " + std::to_string(expected) + " bytes");
  }
  return expected;
}

// An input's binary extension bytes as a tensor of `shape`.
Tensor tensor_from_bytes(std::string_view bytes, DType dtype, const Shape& shape, int64_t count,
                         const std::string& name) {
  if (dtype == DType::kString) return strings_from_binary(bytes, shape, count, name);
  const uint64_t expected =
      check_byte_count(bytes.size(), dtype, shape, count, name, "binary_data_size");
  // Every byte is overwritten: no zero fill first.
  Tensor tensor = Tensor::from_buffer(dtype, shape, Buffer::allocate_uninitialized(expected));
  if (expected) std::memcpy(tensor.mutable_raw_data(), bytes.data(), expected);
  return tensor;
}

Tensor tensor_from_shared_memory(const SharedMemoryView& view, DType dtype, const Shape& shape,
                                 int64_t count, const std::string& name) {
  const std::string where = "input '" + name + "'";
  if (dtype == DType::kString) {
    std::string bytes(view.size(), '\0');
    view.read(bytes.data(), where);
    return strings_from_binary(bytes, shape, count, name);
  }
  const uint64_t expected =
      check_byte_count(view.size(), dtype, shape, count, name, "shared_memory_byte_size");
  // Read straight into the tensor: every byte is overwritten.
  Tensor tensor = Tensor::from_buffer(dtype, shape, Buffer::allocate_uninitialized(expected));
  if (expected) view.read(static_cast<char*>(tensor.mutable_raw_data()), where);
  return tensor;
}

void check_against_model(const std::string& name, DType dtype, const Shape& shape,
                         const ValueInfo& declared) {
  if (declared.dtype != DType::kUndefined && declared.dtype != dtype) {
    bad_request(
        "input '" + name + "': datatype " + std::string(protocol_datatype(dtype).value_or("?")) +
        ", the model expects " +
        std::string(protocol_datatype(declared.dtype).value_or(dtype_name(declared.dtype))));
  }
  if (!declared.shape) return;
  const auto& dims = *declared.shape;
  bool matches = dims.size() == shape.size();
  for (size_t i = 0; matches && i < dims.size(); ++i) {
    matches = !dims[i].is_known() || dims[i].value == shape[i];
  }
  if (!matches) {
    std::string expected = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
      if (i) expected += ',';
      expected += dims[i].is_known() ? std::to_string(dims[i].value)
                                     : (dims[i].param.empty() ? "?" : dims[i].param);
    }
    bad_request("input '" + name + "': shape " + shape_text(shape) + ", the model expects " +
                expected + "]");
  }
}

Shape parse_shape(const JsonObject& input, const std::string& name, int64_t max_elements,
                  int64_t& count) {
  const auto shape_json = find_member(input, "shape");
  if (!shape_json || shape_json->type() != JsonType::ARRAY) {
    bad_request("input '" + name + "': 'shape' is missing or not an array");
  }
  Shape shape;
  count = 1;
  for (const JsonElement dim : simdjson::dom::array(*shape_json)) {
    if (dim.type() != JsonType::INT64 || int64_t(dim) < 0) {
      bad_request("input '" + name + "': 'shape' holds " + json_text(dim) +
                  ", not a non-negative integer");
    }
    const int64_t value = int64_t(dim);
    shape.push_back(value);
    if (value && count > max_elements / value) {
      bad_request("input '" + name + "': shape " + shape_text(shape) + " has more than " +
                  std::to_string(max_elements) + " elements (the server's limit)");
    }
    count *= value;
  }
  if (count > max_elements) {
    bad_request("input '" + name + "': shape " + shape_text(shape) + " has more than " +
                std::to_string(max_elements) + " elements (the server's limit)");
  }
  return shape;
}

// Bodies up to this size keep their thread's parser (and its buffers, about 15 bytes per
// body byte) for the next request; larger ones get a parser of their own, freed after.
constexpr size_t kReusedParserBytes = size_t{4} << 20;

simdjson::dom::parser& parser_for(size_t bytes, std::unique_ptr<simdjson::dom::parser>& own) {
  thread_local simdjson::dom::parser reused;
  if (bytes <= kReusedParserBytes) return reused;
  own = std::make_unique<simdjson::dom::parser>();
  return *own;
}

JsonElement parse_json(simdjson::dom::parser& parser, std::string_view text, const char* what) {
  JsonElement root;
  // The copy gives simdjson the padding it reads past the end; it is a memcpy, small beside
  // the parse.
  if (const auto error = parser.parse(text.data(), text.size()).get(root)) {
    bad_request(std::string("malformed JSON in ") + what + ": " + simdjson::error_message(error));
  }
  return root;
}

template <typename T>
void append_json_values(json& data, const Tensor& tensor) {
  const T* values = tensor.data<T>();
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      data.push_back(static_cast<float>(values[i]));
    } else {
      data.push_back(values[i]);
    }
  }
}

void append_binary(std::string& out, const Tensor& tensor) {
  if (tensor.dtype() == DType::kString) {
    for (const std::string& item : tensor.strings()) {
      const auto length = static_cast<uint32_t>(item.size());
      out.append(reinterpret_cast<const char*>(&length), 4);
      out.append(item);
    }
    return;
  }
  if (tensor.nbytes()) out.append(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
}

}  // namespace

std::optional<std::string_view> protocol_datatype(DType dtype) {
  for (const auto& entry : kDatatypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_protocol(std::string_view datatype) {
  for (const auto& entry : kDatatypes) {
    if (entry.name == datatype) return entry.dtype;
  }
  return std::nullopt;
}

std::vector<int64_t> protocol_shape(const ValueInfo& info) {
  std::vector<int64_t> shape;
  if (info.shape) {
    for (const Dim& dim : *info.shape) shape.push_back(dim.is_known() ? dim.value : -1);
  }
  return shape;
}

InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length,
                                 const std::vector<ValueInfo>& model_inputs,
                                 const std::vector<ValueInfo>& model_outputs,
                                 const ProtocolLimits& limits,
                                 const SharedMemoryResolver& shared_memory) {
  std::string_view json_part = body;
  std::string_view binary_part;
  if (header_length) {
    if (*header_length > body.size()) {
      bad_request("Inference-Header-Content-Length " + std::to_string(*header_length) +
                  " is larger than the body (" + std::to_string(body.size()) + " bytes)");
    }
    json_part = body.substr(0, *header_length);
    binary_part = body.substr(*header_length);
  }
  std::unique_ptr<simdjson::dom::parser> own_parser;
  simdjson::dom::parser& parser = parser_for(json_part.size(), own_parser);
  const JsonElement root = parse_json(parser, json_part, "the request");
  const auto request = as_object(root);
  if (!request) bad_request("the request body must be a JSON object");

  InferRequest parsed;
  if (const auto id = find_member(*request, "id")) {
    if (!is_string(*id)) bad_request("'id' must be a string");
    parsed.id = string_of(*id);
    parsed.has_id = true;
  }
  parsed.binary_output_default = bool_parameter(*request, "binary_data_output", false, "request");

  const auto inputs = find_member(*request, "inputs");
  if (!inputs || inputs->type() != JsonType::ARRAY) {
    bad_request("'inputs' is missing or not an array");
  }
  std::set<std::string> seen;
  size_t binary_offset = 0;
  for (const JsonElement input_json : simdjson::dom::array(*inputs)) {
    const auto input = as_object(input_json);
    if (!input) bad_request("each of 'inputs' must be an object");
    const auto name_json = find_member(*input, "name");
    if (!name_json || !is_string(*name_json)) bad_request("an input has no string 'name'");
    const std::string name = string_of(*name_json);
    if (!seen.insert(name).second) bad_request("input '" + name + "' is given twice");
    auto declared = std::find_if(model_inputs.begin(), model_inputs.end(),
                                 [&](const ValueInfo& info) { return info.name == name; });
    if (declared == model_inputs.end()) {
      std::string known;
      for (const ValueInfo& info : model_inputs) known += (known.empty() ? "" : ", ") + info.name;
      bad_request("unknown input '" + name + "' (the model's inputs: " + known + ")");
    }
    const auto datatype_json = find_member(*input, "datatype");
    if (!datatype_json || !is_string(*datatype_json)) {
      bad_request("input '" + name + "': 'datatype' is missing or not a string");
    }
    const std::string datatype = string_of(*datatype_json);
    const auto dtype = dtype_from_protocol(datatype);
    if (!dtype) bad_request("input '" + name + "': unknown datatype '" + datatype + "'");
    int64_t count = 0;
    const Shape shape = parse_shape(*input, name, limits.max_tensor_elements, count);
    check_against_model(name, *dtype, shape, *declared);

    std::optional<uint64_t> binary_size;
    if (const auto parameters = parameters_of(*input, "input '" + name + "'")) {
      if (const auto size = find_member(*parameters, "binary_data_size")) {
        binary_size = non_negative_parameter(*size, "input '" + name + "'", "binary_data_size");
      }
    }
    const auto data = find_member(*input, "data");
    if (binary_size && data) bad_request("input '" + name + "' has both 'data' and binary data");
    if (const auto shared = shared_memory_parameters(*input, "input '" + name + "'")) {
      if (binary_size || data) {
        bad_request("input '" + name + "' has shared memory and also 'data' or binary data");
      }
      const auto view = resolve_shared_memory(shared_memory, *shared, "input '" + name + "'");
      parsed.inputs.emplace_back(name,
                                 tensor_from_shared_memory(*view, *dtype, shape, count, name));
      continue;
    }
    if (binary_size) {
      if (!header_length) {
        bad_request(
            "input '" + name +
            "' has binary_data_size but the request has no Inference-Header-Content-Length");
      }
      if (*binary_size > binary_part.size() - binary_offset) {
        bad_request("input '" + name + "': binary_data_size " + std::to_string(*binary_size) +
                    " runs past the end of the body (" +
                    std::to_string(binary_part.size() - binary_offset) + " bytes left)");
      }
      std::string_view bytes = binary_part.substr(binary_offset, *binary_size);
      binary_offset += *binary_size;
      parsed.inputs.emplace_back(name, tensor_from_bytes(bytes, *dtype, shape, count, name));
      continue;
    }
    if (!data) bad_request("input '" + name + "' has neither 'data' nor binary_data_size");
    parsed.inputs.emplace_back(name, tensor_from_json(*data, *dtype, shape, count, name));
  }
  if (binary_offset != binary_part.size()) {
    bad_request("the body has " + std::to_string(binary_part.size() - binary_offset) +
                " bytes of binary data beyond what the inputs' binary_data_size account for");
  }
  for (const ValueInfo& info : model_inputs) {
    if (!seen.count(info.name)) bad_request("missing input '" + info.name + "'");
  }

  if (const auto outputs = find_member(*request, "outputs")) {
    if (outputs->type() != JsonType::ARRAY) bad_request("'outputs' must be an array");
    std::set<std::string> asked;
    for (const JsonElement output_json : simdjson::dom::array(*outputs)) {
      const auto output = as_object(output_json);
      if (!output) bad_request("each of 'outputs' must be an object");
      const auto name_json = find_member(*output, "name");
      if (!name_json || !is_string(*name_json)) bad_request("an output has no string 'name'");
      const std::string name = string_of(*name_json);
      auto declared = std::find_if(model_outputs.begin(), model_outputs.end(),
                                   [&](const ValueInfo& info) { return info.name == name; });
      if (declared == model_outputs.end()) bad_request("unknown output '" + name + "'");
      if (!asked.insert(name).second) bad_request("output '" + name + "' is asked for twice");
      const std::string where = "output '" + name + "'";
      RequestedOutput requested{
          name, bool_parameter(*output, "binary_data", parsed.binary_output_default, where)};
      requested.classification = classification_parameter(*output, where);
      if (const auto shared = shared_memory_parameters(*output, where)) {
        requested.shared_memory = SharedMemoryOutput{
            shared->region, resolve_shared_memory(shared_memory, *shared, where)};
      }
      if (requested.classification && declared->dtype != DType::kUndefined &&
          !classifiable(declared->dtype)) {
        bad_request(where + " is " + declared->type + "; classification needs a numeric output");
      }
      parsed.outputs.push_back(std::move(requested));
    }
  }
  return parsed;
}

Tensor classify(const Tensor& tensor, int64_t count, const std::vector<std::string>* labels,
                const std::string& output_name) {
  if (!classifiable(tensor.dtype())) {
    bad_request("output '" + output_name + "' is " + std::string(dtype_name(tensor.dtype())) +
                "; classification needs a numeric output");
  }
  const bool by_row = tensor.rank() >= 2;
  const int64_t rows = by_row ? tensor.shape()[0] : 1;
  int64_t per_row = 1;
  for (size_t axis = by_row ? 1 : 0; axis < tensor.shape().size(); ++axis) {
    per_row *= tensor.shape()[axis];
  }
  const int64_t k = std::min(count, per_row);
  std::vector<std::string> classes;
  classes.reserve(static_cast<size_t>(rows * k));
  dispatch_numeric(tensor.dtype(), output_name, [&]<typename T>(TypeTag<T>) {
    // Half types are ranked and written as the float they hold.
    using Value =
        std::conditional_t<std::is_floating_point_v<T> || std::is_integral_v<T>, T, float>;
    // The k best indices only (a heap of k as the row streams by), not a sort of the row.
    std::vector<int64_t> order(static_cast<size_t>(k));
    for (int64_t row = 0; row < rows; ++row) {
      const T* values = tensor.data<T>() + row * per_row;
      auto value = [&](int64_t i) { return static_cast<Value>(values[i]); };
      std::ranges::partial_sort_copy(
          std::views::iota(int64_t{0}, per_row), order, [&](int64_t a, int64_t b) {
            const Value x = value(a), y = value(b);
            if constexpr (std::is_floating_point_v<Value>) {
              if (std::isnan(x) || std::isnan(y)) {
                return std::isnan(x) == std::isnan(y) ? a < b : std::isnan(y);
              }
            }
            return x != y ? x > y : a < b;
          });
      for (int64_t i = 0; i < k; ++i) {
        const int64_t index = order[static_cast<size_t>(i)];
        std::string text = std::to_string(value(index)) + ":" + std::to_string(index);
        if (labels && index < static_cast<int64_t>(labels->size())) {
          text += ":" + (*labels)[static_cast<size_t>(index)];
        }
        classes.push_back(std::move(text));
      }
    }
  });
  Shape shape = by_row ? Shape{rows, k} : Shape{k};
  return Tensor::from_strings(std::move(shape), std::move(classes));
}

EncodedResponse encode_infer_response(const std::string& model_name,
                                      const std::string& model_version, const InferRequest& request,
                                      const NamedValues& outputs, const OutputLabels* labels) {
  std::vector<RequestedOutput> wanted = request.outputs;
  if (wanted.empty()) {
    for (const auto& [name, value] : outputs) {
      wanted.push_back({name, request.binary_output_default});
    }
  }
  json response = {{"model_name", model_name}, {"model_version", model_version}};
  if (request.has_id) response["id"] = request.id;
  json encoded_outputs = json::array();
  std::string binary;
  for (const RequestedOutput& output : wanted) {
    auto it = std::find_if(outputs.begin(), outputs.end(),
                           [&](const auto& named) { return named.first == output.name; });
    if (it == outputs.end()) throw Error("the model produced no output '" + output.name + "'");
    if (!it->second.is_tensor()) {
      throw Error("output '" + output.name + "' is " + it->second.describe() +
                  ", not a tensor the protocol can carry");
    }
    std::optional<Tensor> classes;
    if (output.classification > 0) {
      const std::vector<std::string>* output_labels = nullptr;
      if (labels) {
        if (auto found = labels->find(output.name); found != labels->end()) {
          output_labels = &found->second;
        }
      }
      classes = classify(it->second.tensor(), output.classification, output_labels, output.name);
    }
    const Tensor& tensor = classes ? *classes : it->second.tensor();
    const auto datatype = protocol_datatype(tensor.dtype());
    if (!datatype) {
      throw Error("output '" + output.name + "' has element type " +
                  std::string(dtype_name(tensor.dtype())) + ", which the protocol cannot carry");
    }
    json entry = {{"name", output.name}, {"datatype", *datatype}, {"shape", tensor.shape()}};
    if (output.shared_memory) {
      std::string bytes;
      append_binary(bytes, tensor);
      const SharedMemoryOutput& shared = *output.shared_memory;
      if (bytes.size() > shared.view->size()) {
        bad_request("output '" + output.name + "' is " + std::to_string(bytes.size()) +
                    " bytes, more than its shared_memory_byte_size " +
                    std::to_string(shared.view->size()));
      }
      // Name, datatype and shape only, as Triton answers: its clients read "parameters" as
      // binary data (perf_analyzer fails on parameters without binary_data_size).
      shared.view->write(bytes, "output '" + output.name + "'");
    } else if (output.binary) {
      const size_t before = binary.size();
      append_binary(binary, tensor);
      entry["parameters"] = {{"binary_data_size", binary.size() - before}};
    } else {
      json data = json::array();
      if (tensor.dtype() == DType::kString) {
        for (const std::string& item : tensor.strings()) data.push_back(item);
      } else {
        dispatch_numeric_bool(tensor.dtype(), output.name,
                              [&]<typename T>(TypeTag<T>) { append_json_values<T>(data, tensor); });
      }
      entry["data"] = std::move(data);
    }
    encoded_outputs.push_back(std::move(entry));
  }
  response["outputs"] = std::move(encoded_outputs);
  EncodedResponse encoded;
  encoded.body = response.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!binary.empty() || std::any_of(wanted.begin(), wanted.end(),
                                     [](const auto& o) { return o.binary && !o.shared_memory; })) {
    encoded.header_length = encoded.body.size();
    encoded.body += binary;
  }
  return encoded;
}

std::vector<std::string> path_segments(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  auto hex_value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  auto bad_path = [&](std::string why) {
    std::string shown(path.substr(0, 256));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    bad_request("malformed path '" + shown + (path.size() > 256 ? "...'" : "'") + ": " + why);
  };
  std::vector<std::string> segments;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) {
      std::string segment;
      for (size_t i = start; i < end; ++i) {
        if (path[i] != '%') {
          segment += path[i];
          continue;
        }
        const int high = i + 2 < end ? hex_value(path[i + 1]) : -1;
        const int low = i + 2 < end ? hex_value(path[i + 2]) : -1;
        if (high < 0 || low < 0) {
          bad_path("'%' at offset " + std::to_string(i) + " is not followed by two hex digits");
        }
        if (high == 0 && low == 0) bad_path("'%00' (a NUL byte) at offset " + std::to_string(i));
        segment += static_cast<char>(high * 16 + low);
        i += 2;
      }
      segments.push_back(std::move(segment));
    }
    start = end + 1;
  }
  return segments;
}

size_t parse_header_length(std::string_view value) {
  const auto bad = [&] {
    bad_request("Inference-Header-Content-Length '" + std::string(value.substr(0, 64)) +
                "' is not a number");
  };
  if (value.empty() || value.size() > 19) bad();
  size_t length = 0;
  for (char c : value) {
    if (c < '0' || c > '9') bad();
    length = length * 10 + static_cast<size_t>(c - '0');
  }
  return length;
}

std::string decode_base64(std::string_view text, const std::string& what) {
  while (!text.empty() && text.back() == '=' && text.size() % 4 != 1) {
    text.remove_suffix(1);
    if (text.size() % 4 == 2) break;  // "xx==": both pads gone
  }
  if (text.size() % 4 == 1) bad_request(what + ": base64 text of a length no bytes encode");
  auto sextet = [&](char c, size_t at) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    bad_request(what + ": not base64 (character " + std::to_string(static_cast<unsigned char>(c)) +
                " at offset " + std::to_string(at) + ")");
  };
  std::string bytes;
  bytes.reserve(text.size() / 4 * 3 + 2);
  for (size_t i = 0; i < text.size(); i += 4) {
    const size_t chars = std::min<size_t>(4, text.size() - i);
    uint32_t group = 0;
    for (size_t j = 0; j < 4; ++j)
      group = group << 6 | (j < chars ? sextet(text[i + j], i + j) : 0);
    bytes.push_back(static_cast<char>(group >> 16));
    if (chars > 2) bytes.push_back(static_cast<char>(group >> 8 & 0xff));
    if (chars > 3) bytes.push_back(static_cast<char>(group & 0xff));
  }
  return bytes;
}

std::string error_body(std::string_view message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace onnxkit::serve
