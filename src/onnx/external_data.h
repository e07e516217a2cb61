// External data: tensors stored in side files next to the model (ONNX's
// external_data location / offset / length), read as mmapped views and written
// sparsely (holes in the source stay holes in the copy).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "core/buffer.h"
#include "onnxkit/tensor.h"

namespace onnxkit::onnx_io {

// Opens each external data file once and hands out views into it.
class ExternalDataFiles {
 public:
  explicit ExternalDataFiles(std::filesystem::path model_dir) : model_dir_(std::move(model_dir)) {}
  // A view of `length` bytes at `offset` of `location`; throws Error naming `tensor_name`
  // when the location escapes the model's folder or the range lies past the end.
  std::shared_ptr<Buffer> view(const std::string& tensor_name, const std::string& location,
                               uint64_t offset, uint64_t length);

 private:
  std::filesystem::path model_dir_;
  std::map<std::filesystem::path, std::shared_ptr<const FileMapping>> files_;
};

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Appends tensors to one data file, written under a temporary name until commit().
class ExternalDataWriter {
 public:
  // `location` is relative to `model_dir`.
  ExternalDataWriter(std::filesystem::path model_dir, std::string location);
  ~ExternalDataWriter();
  ExternalDataWriter(const ExternalDataWriter&) = delete;
  ExternalDataWriter& operator=(const ExternalDataWriter&) = delete;

  ExternalRef append(const Tensor& tensor);
  // Renames the temporary file into place.
  void commit();
  const std::string& location() const { return location_; }

 private:
  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;
  std::string location_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
};

// Writes `length` bytes of `source` at `offset` into `fd` at `dest_offset`, skipping holes.
void copy_file_range_sparse(int source_fd, uint64_t offset, uint64_t length, int dest_fd,
                            uint64_t dest_offset);
// Writes `tensor`'s bytes at `dest_offset` of `fd`: copied file to file (holes kept, no page
// of it mapped into this process) when it is a view of a mapped file, else from memory.
void write_tensor_data(int fd, const Tensor& tensor, uint64_t dest_offset,
                       const std::filesystem::path& path);
// Writes all of `data` at `dest_offset` of `fd`; throws Error naming `path` on failure.
void write_all(int fd, const void* data, size_t length, uint64_t dest_offset,
               const std::filesystem::path& path);

}  // namespace onnxkit::onnx_io
