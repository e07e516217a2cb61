// Model inputs for `run` and `bench`: the --dim NAME=V and --input NAME=FILE flags and the
// data they name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "ir/graph.h"
#include "ir/model.h"
#include "onnxkit/runtime_value.h"

namespace onnxkit::cli {

// "NAME=VALUE" -> {NAME, VALUE}; fails naming `flag` when either side is empty.
std::pair<std::string, std::string> split_assignment(const std::string& text, const char* flag);

// --dim NAME=V values; fails on a value that is not a number.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& assignments);

// A .npy file, or a .pb (TensorProto, SequenceProto, ...) read as `input`'s type.
RuntimeValue read_input_file(const std::filesystem::path& path, const Value& input);

// The --input NAME=FILE data, read; fails on a name that is not an input of `graph`.
std::map<std::string, RuntimeValue> read_input_files(const Graph& graph,
                                                     const std::vector<std::string>& assignments);

}  // namespace onnxkit::cli
