// Shared byte storage for tensors: owned 64-byte-aligned memory (from the heap or from a
// MemoryPool), a read-only view into a memory-mapped file (initializers and external data
// are never copied on load), or a caller's memory (IO binding).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace onnxkit {

inline constexpr size_t kTensorAlignment = 64;

// Takes blocks back when their last Buffer dies (MemoryPool, an arena run).
class BlockOwner {
 public:
  virtual ~BlockOwner() = default;
  virtual void give_back(std::byte* data, size_t capacity) = 0;
};

// True when `a` and `b` name one file: the same path once resolved, or (both existing) the
// same inode through a link. What a writer asks before it writes, so that nothing is ever
// written over a file still read.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

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
  // Drops the file's pages from this process's memory (they are read back from the page
  // cache or the file if touched again). The mapping is read-only, so nothing is lost.
  void release_pages() const { release_pages(0, size_); }
  // The same for the whole pages inside [offset, offset + bytes).
  void release_pages(size_t offset, size_t bytes) const;
  // Maps the whole pages inside [offset, offset + bytes) in one call (MADV_POPULATE_READ)
  // rather than a fault per page, for a reader about to go through all of them (a kernel
  // packing a weight). False where the kernel cannot (before Linux 5.14): then the reader's
  // own faults map them.
  bool populate_pages(size_t offset, size_t bytes) const;

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
  // Owned, 64-byte-aligned storage with unspecified contents (the writer fills it all).
  static std::shared_ptr<Buffer> allocate_uninitialized(size_t bytes);
  // Memory the caller owns and keeps alive while the buffer exists (IO binding).
  // Writable unless `read_only`.
  static std::shared_ptr<Buffer> external(void* data, size_t bytes, bool read_only);
  // Writable memory lent by an allocator: `owner` gets it back when the buffer dies.
  static std::shared_ptr<Buffer> lent(std::byte* data, size_t bytes, size_t capacity,
                                      std::shared_ptr<BlockOwner> owner);
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
  // True for memory the caller owns (Buffer::external).
  bool is_external() const { return external_; }

 private:
  Buffer() = default;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = false;                 // writable memory (heap, pool, or caller's)
  bool external_ = false;              // the caller's: not freed here
  size_t capacity_ = 0;                // bytes reserved (pool blocks may be larger than size_)
  std::shared_ptr<BlockOwner> owner_;  // set: the block goes back to its allocator
  FileRegion region_;
};

}  // namespace onnxkit
