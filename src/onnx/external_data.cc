#include "onnx/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/status.h"

namespace onnxkit::onnx_io {

namespace fs = std::filesystem;

std::shared_ptr<Buffer> ExternalDataFiles::view(const std::string& tensor_name,
                                                const std::string& location, uint64_t offset,
                                                uint64_t length) {
  if (model_dir_.empty()) {
    fail("tensor '{}': has external data but the model was not loaded from a file", tensor_name);
  }
  if (location.empty()) fail("tensor '{}': external data has no location", tensor_name);
  fs::path relative(location);
  if (relative.is_absolute()) {
    fail(
        "tensor '{}': external data location '{}' is an absolute path; only files inside the "
        "model's folder are read",
        tensor_name, location);
  }
  fs::path normal = relative.lexically_normal();
  if (normal.empty() || *normal.begin() == ".." || normal == ".") {
    fail("tensor '{}': external data location '{}' escapes the model's folder", tensor_name,
         location);
  }
  fs::path full = model_dir_ / normal;
  // A symbolic link inside the folder may still point out of it (at /etc/passwd, /dev/zero).
  std::error_code error;
  const fs::path real = fs::weakly_canonical(full, error);
  const fs::path real_dir = fs::weakly_canonical(model_dir_, error);
  if (error || std::mismatch(real_dir.begin(), real_dir.end(), real.begin(), real.end()).first !=
                   real_dir.end()) {
    fail("tensor '{}': external data location '{}' resolves to '{}', outside the model's folder",
         tensor_name, location, real.string());
  }
  auto& mapping = files_[full];
  if (!mapping) {
    try {
      mapping = FileMapping::open(full);
    } catch (const Error& e) {
      files_.erase(full);
      fail("tensor '{}': external data: {}", tensor_name, e.what());
    }
  }
  if (offset > mapping->size() || length > mapping->size() - offset) {
    fail("tensor '{}': external data range [{}, {}) lies past the end of '{}' ({} bytes)",
         tensor_name, offset, offset + length, location, mapping->size());
  }
  return Buffer::view(mapping, offset, length);
}

void write_all(int fd, const void* data, size_t length, uint64_t dest_offset,
               const fs::path& path) {
  const char* bytes = static_cast<const char*>(data);
  while (length > 0) {
    ssize_t written = ::pwrite(fd, bytes, std::min<size_t>(length, size_t{1} << 30),
                               static_cast<off_t>(dest_offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("{}: write failed: {}", path.string(), std::strerror(errno));
    }
    bytes += written;
    length -= static_cast<size_t>(written);
    dest_offset += static_cast<uint64_t>(written);
  }
}

void write_tensor_data(int fd, const Tensor& tensor, uint64_t dest_offset, const fs::path& path) {
  if (const FileRegion* region = tensor.file_region()) {
    copy_file_range_sparse(region->file->fd(), region->offset, tensor.nbytes(), fd, dest_offset);
  } else {
    write_all(fd, tensor.raw_data(), tensor.nbytes(), dest_offset, path);
  }
}

namespace {

void copy_dense(int source_fd, uint64_t offset, uint64_t length, int dest_fd,
                uint64_t dest_offset) {
  std::vector<char> chunk(std::min<uint64_t>(length, uint64_t{4} << 20));
  while (length > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(length, chunk.size()));
    ssize_t got = ::pread(source_fd, chunk.data(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail("reading tensor data failed: {}", got < 0 ? std::strerror(errno) : "EOF");
    write_all(dest_fd, chunk.data(), static_cast<size_t>(got), dest_offset, "external data");
    offset += static_cast<uint64_t>(got);
    dest_offset += static_cast<uint64_t>(got);
    length -= static_cast<uint64_t>(got);
  }
}

}  // namespace

void copy_file_range_sparse(int source_fd, uint64_t offset, uint64_t length, int dest_fd,
                            uint64_t dest_offset) {
  const uint64_t end = offset + length;
  uint64_t position = offset;
  while (position < end) {
    off_t data = ::lseek(source_fd, static_cast<off_t>(position), SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) return;  // only a hole is left
      copy_dense(source_fd, position, end - position, dest_fd, dest_offset + (position - offset));
      return;
    }
    if (static_cast<uint64_t>(data) >= end) return;
    off_t hole = ::lseek(source_fd, data, SEEK_HOLE);
    uint64_t stop = hole < 0 ? end : std::min<uint64_t>(static_cast<uint64_t>(hole), end);
    copy_dense(source_fd, static_cast<uint64_t>(data), stop - static_cast<uint64_t>(data), dest_fd,
               dest_offset + (static_cast<uint64_t>(data) - offset));
    position = stop;
  }
}

ExternalDataWriter::ExternalDataWriter(fs::path model_dir, std::string location)
    : location_(std::move(location)) {
  final_path_ = model_dir / location_;
  temp_path_ = final_path_;
  temp_path_ += ".tmp-" + std::to_string(::getpid());
  fd_ = ::open(temp_path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot create: {}", temp_path_.string(), std::strerror(errno));
}

ExternalDataWriter::~ExternalDataWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

ExternalRef ExternalDataWriter::append(const Tensor& tensor) {
  const uint64_t length = tensor.nbytes();
  // Page-align big tensors so that a later load can map them directly.
  const uint64_t alignment = length >= (uint64_t{1} << 20) ? 4096 : 64;
  const uint64_t offset = (size_ + alignment - 1) / alignment * alignment;
  write_tensor_data(fd_, tensor, offset, temp_path_);
  size_ = offset + length;
  return ExternalRef{location_, offset, length};
}

void ExternalDataWriter::commit() {
  if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    fail("{}: cannot set size: {}", temp_path_.string(), std::strerror(errno));
  }
  if (::close(fd_) != 0) fail("{}: close failed: {}", temp_path_.string(), std::strerror(errno));
  fd_ = -1;
  std::error_code error;
  fs::rename(temp_path_, final_path_, error);
  if (error) fail("{}: cannot rename into place: {}", final_path_.string(), error.message());
  committed_ = true;
}

}  // namespace onnxkit::onnx_io
