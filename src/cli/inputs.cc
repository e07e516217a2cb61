#include "cli/inputs.h"

#include "core/buffer.h"
#include "core/status.h"
#include "ir/npy.h"
#include "onnx/tensor_io.h"

namespace onnxkit::cli {

namespace fs = std::filesystem;

std::pair<std::string, std::string> split_assignment(const std::string& text, const char* flag) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    fail("{} expects NAME=VALUE, got '{}'", flag, text);
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& assignments) {
  std::map<std::string, int64_t> dims;
  for (const auto& text : assignments) {
    auto [name, value] = split_assignment(text, "--dim");
    size_t used = 0;
    try {
      dims[name] = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || dims[name] < 0) {
      fail("--dim {}: '{}' is not a dimension", name, value);
    }
  }
  return dims;
}

RuntimeValue read_input_file(const fs::path& path, const Value& input) {
  if (path.extension() == ".npy") {
    auto tensor = read_npy(path);
    if (!tensor) fail("{}", tensor.error());
    return RuntimeValue(std::move(tensor).value());
  }
  auto value = read_value_pb(path, input.type());
  if (!value) fail("{}", value.error());
  return std::move(value).value();
}

std::map<std::string, RuntimeValue> read_input_files(const Graph& graph,
                                                     const std::vector<std::string>& assignments) {
  std::map<std::string, RuntimeValue> values;
  for (const auto& text : assignments) {
    auto [name, path] = split_assignment(text, "--input");
    const Value* input = nullptr;
    for (const Value* candidate : graph.inputs()) {
      if (candidate->name() == name) input = candidate;
    }
    if (!input) fail("--input names '{}', which is not an input of the model", name);
    values.insert_or_assign(name, read_input_file(path, *input));
  }
  return values;
}

}  // namespace onnxkit::cli
