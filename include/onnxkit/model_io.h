// Loading and saving .onnx files (implemented in src/onnx, the only code that sees protobuf).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "onnxkit/model.h"
#include "onnxkit/status.h"

namespace onnxkit {

// How load_model reads a file.
struct LoadOptions {
  // Initializer payloads at least this big stay in the mapped file instead of being copied.
  size_t map_threshold_bytes = 256;
  // Run the IR verifier after loading (dangling inputs, cycles, shadowed names).
  bool verify = true;
};

// Loads `path`. Errors name the file and what is wrong with it (missing, truncated,
// not protobuf, not a model, bad external data, a node input that names nothing).
Result<Model> load_model(const std::filesystem::path& path, const LoadOptions& options = {});

// Where save_model puts tensor data: inline in the .onnx file or in a data file beside it.
enum class ExternalDataMode {
  kAuto,    // external only when the model would not fit a 2 GiB protobuf file
  kNever,   // everything inline; fails for models over the protobuf limit
  kAlways,  // every tensor of at least external_threshold_bytes goes to the data file
};

// How save_model writes a file.
struct SaveOptions {
  ExternalDataMode external_data = ExternalDataMode::kAuto;
  size_t external_threshold_bytes = 1024;
  // File name of the data file, relative to the model's folder; default "<model file>.data".
  std::string external_location;
};

// Writes `model` to `path` atomically (a temporary file renamed into place), so a model
// whose tensors still view the old file can be saved over it safely.
Status save_model(const Model& model, const std::filesystem::path& path,
                  const SaveOptions& options = {});

// Fails as save_model(model, path, options) would before it writes anything because its
// external data file would replace a file a model on disk reads: the file `model` was loaded
// from, or one its tensors are read from (saving a model over its own file is allowed; its
// file and data are replaced together). With ExternalDataMode::kAuto the check assumes the
// data goes to a data file. Lets a program refuse before minutes of work.
Status check_save_path(const Model& model, const std::filesystem::path& path,
                       const SaveOptions& options = {});

// The serialized ModelProto with all tensor data inline (for tests and small models).
Result<std::string> serialize_model(const Model& model);
// Parses a serialized ModelProto held in memory (no external data), checked as load_model
// checks a file.
Result<Model> parse_model(const std::string& bytes);

// Bytes of tensor data a model holds (initializers, sparse initializers and tensor
// attributes, in all subgraphs).
uint64_t model_tensor_bytes(const Model& model);

}  // namespace onnxkit
