#include "quantize/weight_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/buffer.h"
#include "core/status.h"

namespace onnxkit::quant {
namespace {

// Page-aligned offsets: a weight's pages are its own, so dropping them drops nothing else.
constexpr size_t kPage = 4096;

size_t round_up(size_t n) {
  return (n + kPage - 1) / kPage * kPage;
}

// The file descriptor of a new file in the temporary directory, and the file's path.
int create_temporary(std::string& path) {
  path = (std::filesystem::temp_directory_path() / "onnxkit-weights-XXXXXX").string();
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  path.assign(name.data());
  if (fd < 0) fail("{}: cannot create: {}", path, std::strerror(errno));
  return fd;
}

void write_all(int fd, const std::string& path, const std::byte* data, size_t bytes,
               size_t offset) {
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, data, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("{}: cannot write: {}", path, std::strerror(n < 0 ? errno : ENOSPC));
    data += n;
    offset += static_cast<size_t>(n);
    bytes -= static_cast<size_t>(n);
  }
}

}  // namespace

MappedWeights map_anonymous_weights(Graph& graph, size_t min_bytes) {
  std::vector<Value*> chosen;
  MappedWeights moved;
  for (Value* value : graph.initializers()) {
    const Tensor& tensor = value->initializer();
    if (tensor.dtype() == DType::kString || tensor.file_region() || tensor.nbytes() < min_bytes)
      continue;
    chosen.push_back(value);
  }
  if (chosen.empty()) return moved;
  std::string path;
  const int fd = create_temporary(path);
  std::vector<size_t> offsets;
  size_t end = 0;
  try {
    for (Value* value : chosen) {
      const Tensor& tensor = value->initializer();
      offsets.push_back(end);
      write_all(fd, path, static_cast<const std::byte*>(tensor.raw_data()), tensor.nbytes(), end);
      end = round_up(end + tensor.nbytes());
    }
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  ::close(fd);
  std::shared_ptr<const FileMapping> file;
  try {
    file = FileMapping::open(path);
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
  // The mapping holds the file open: its blocks are freed with the last view.
  ::unlink(path.c_str());
  for (size_t i = 0; i < chosen.size(); ++i) {
    const Tensor& old = chosen[i]->initializer();
    Tensor view =
        Tensor::from_buffer(old.dtype(), old.shape(), Buffer::view(file, offsets[i], old.nbytes()));
    view.set_name(old.name());
    moved.bytes += old.nbytes();
    ++moved.tensors;
    graph.set_initializer(chosen[i], std::move(view));
  }
  // Written pages are not yet resident in this process: nothing to drop.
  return moved;
}

}  // namespace onnxkit::quant
