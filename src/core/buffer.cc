#include "core/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/memory_pool.h"
#include "core/status.h"

namespace onnxkit {

std::shared_ptr<const FileMapping> FileMapping::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path.string(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("{}: cannot stat: {}", path.string(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path.string());
  }
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->fd_ = fd;
  mapping->path_ = path;
  mapping->size_ = static_cast<size_t>(st.st_size);
  if (mapping->size_ > 0) {
    void* addr = ::mmap(nullptr, mapping->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) fail("{}: cannot map: {}", path.string(), std::strerror(errno));
    mapping->data_ = static_cast<const std::byte*>(addr);
  }
  return mapping;
}

FileMapping::~FileMapping() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<Buffer> Buffer::allocate_uninitialized(size_t bytes) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  // aligned_alloc needs a size that is a multiple of the alignment; never zero.
  size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded == 0) rounded = kTensorAlignment;
  void* memory = std::aligned_alloc(kTensorAlignment, rounded);
  if (!memory) throw std::bad_alloc();
  buffer->data_ = static_cast<std::byte*>(memory);
  buffer->size_ = bytes;
  buffer->capacity_ = rounded;
  buffer->owned_ = true;
  return buffer;
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  auto buffer = allocate_uninitialized(bytes);
  std::memset(buffer->data_, 0, buffer->capacity_);
  return buffer;
}

std::shared_ptr<Buffer> Buffer::external(void* data, size_t bytes, bool read_only) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->data_ = static_cast<std::byte*>(data);
  buffer->size_ = bytes;
  buffer->capacity_ = bytes;
  buffer->owned_ = !read_only;
  buffer->external_ = true;
  return buffer;
}

std::shared_ptr<Buffer> Buffer::view(std::shared_ptr<const FileMapping> file, size_t offset,
                                     size_t bytes) {
  if (offset > file->size() || bytes > file->size() - offset) {
    fail("{}: range [{}, {}) lies past the end of the file ({} bytes)", file->path().string(),
         offset, offset + bytes, file->size());
  }
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->data_ = const_cast<std::byte*>(file->data()) + offset;
  buffer->size_ = bytes;
  buffer->region_ = FileRegion{std::move(file), offset};
  return buffer;
}

Buffer::~Buffer() {
  if (pool_) {
    pool_->give_back(data_, capacity_);
  } else if (owned_ && !external_) {
    std::free(data_);
  }
}

std::byte* Buffer::mutable_data() {
  if (!owned_) fail("internal: write to a read-only file view");
  return data_;
}

}  // namespace onnxkit
