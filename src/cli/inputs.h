// Model inputs for `run` and `bench`: the --dim NAME=V and --input NAME=FILE flags and the
// data they name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/model.h"
#include "onnxkit/runtime_value.h"

namespace onnxkit::cli {

// True when `a` and `b` name one file: the same path once resolved, or (both existing) the
// same inode through a link. What every command asks before it writes an output, so that
// nothing is ever written over its input.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// Fails when saving a model to `output` could replace a file `input` reads its tensors from:
// OUT.data, where its external data goes, being the input's own external data file (the input
// model on disk would then read the output's weights).
void check_output_spares_input_data(const Model& input, const std::filesystem::path& input_path,
                                    const std::filesystem::path& output);

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
