// Shared byte storage for tensors: owned 64-byte-aligned memory, or a read-only view
// into a memory-mapped file (initializers and external data are never copied on load).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace onnxkit {

inline constexpr size_t kTensorAlignment = 64;

// A read-only, private memory mapping of a whole file. Views keep it alive.
class FileMapping {
 public:
  // Maps `path`; throws Error naming the file if it cannot be opened or mapped.
  static std::shared_ptr<const FileMapping> open(const std::filesystem::path& path);
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  int fd() const { return fd_; }

 private:
  FileMapping() = default;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  std::filesystem::path path_;
};

// Where a view's bytes live in a file; lets writers copy ranges sparsely.
struct FileRegion {
  std::shared_ptr<const FileMapping> file;
  size_t offset = 0;
};

class Buffer {
 public:
  // Owned, 64-byte-aligned, zero-filled storage.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  // A read-only view of `bytes` bytes at `offset` in `file`.
  static std::shared_ptr<Buffer> view(std::shared_ptr<const FileMapping> file, size_t offset,
                                      size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const std::byte* data() const { return data_; }
  // Throws if the buffer is a read-only view; Tensor copies before writing.
  std::byte* mutable_data();
  size_t size() const { return size_; }
  bool writable() const { return owned_; }
  // Set when the bytes are a view into a mapped file.
  const FileRegion* file_region() const { return region_.file ? &region_ : nullptr; }

 private:
  Buffer() = default;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = false;
  FileRegion region_;
};

}  // namespace onnxkit
