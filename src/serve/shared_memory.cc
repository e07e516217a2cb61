#include "serve/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxkit::serve {
namespace {

[[noreturn]] void bad_request(std::string message) {
  throw RequestError(400, std::move(message));
}

}  // namespace

// The object stays open, not mapped: a mapping read after the client shrank the object would
// end the server with SIGBUS, where pread comes back short.
struct SharedMemoryRegions::Region {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
  int fd = -1;

  ~Region() {
    if (fd >= 0) close(fd);
  }
};

namespace {

class RegionView : public SharedMemoryView {
 public:
  RegionView(std::shared_ptr<const SharedMemoryRegions::Region> region, uint64_t offset,
             uint64_t size)
      : region_(std::move(region)), offset_(offset), size_(size) {}

  uint64_t size() const override { return size_; }

  void read(char* out, const std::string& where) const override {
    uint64_t done = 0;
    while (done < size_) {
      const ssize_t got = pread(region_->fd, out + done, size_ - done,
                                static_cast<off_t>(region_->offset + offset_ + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        bad_request(where + ": shared memory region '" + region_->name + "' ends early ('" +
                    region_->key + "' shrank or cannot be read" +
                    (got < 0 ? std::string(": ") + std::strerror(errno) : std::string()) + ")");
      }
      done += static_cast<uint64_t>(got);
    }
  }

  void write(std::string_view bytes, const std::string& where) const override {
    uint64_t done = 0;
    while (done < bytes.size()) {
      const ssize_t put = pwrite(region_->fd, bytes.data() + done, bytes.size() - done,
                                 static_cast<off_t>(region_->offset + offset_ + done));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) {
        bad_request(where + ": cannot write shared memory region '" + region_->name + "'" +
                    (put < 0 ? std::string(": ") + std::strerror(errno) : std::string()));
      }
      done += static_cast<uint64_t>(put);
    }
  }

 private:
  std::shared_ptr<const SharedMemoryRegions::Region> region_;
  uint64_t offset_;
  uint64_t size_;
};

}  // namespace

void SharedMemoryRegions::register_region(const std::string& name, const std::string& key,
                                          uint64_t offset, uint64_t byte_size) {
  const std::string where = "shared memory region '" + name + "'";
  // One path component after the slash: shm_open's portable form, an object of /dev/shm.
  if (key.size() < 2 || key[0] != '/' || key.find('/', 1) != std::string::npos ||
      key.find('\0') != std::string::npos || key.size() > 255) {
    bad_request(where + ": key '" + key + "' is not a shared memory object name like '/name'");
  }
  if (byte_size == 0) bad_request(where + ": byte_size is 0");
  {
    std::lock_guard guard(mutex_);
    if (regions_.count(name)) bad_request(where + " is registered already");
  }
  auto region = std::make_shared<Region>();
  region->fd = shm_open(key.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (region->fd < 0) {
    bad_request(where + ": cannot open shared memory object '" + key +
                "': " + std::strerror(errno));
  }
  struct stat info {};
  const bool sized = fstat(region->fd, &info) == 0;
  const auto object_size = sized ? static_cast<uint64_t>(info.st_size) : 0;
  if (!sized || offset > object_size || byte_size > object_size - offset) {
    bad_request(where + ": offset " + std::to_string(offset) + " and byte_size " +
                std::to_string(byte_size) + " run past the end of '" + key + "' (" +
                std::to_string(object_size) + " bytes)");
  }
  region->name = name;
  region->key = key;
  region->offset = offset;
  region->byte_size = byte_size;
  std::lock_guard guard(mutex_);
  if (!regions_.emplace(name, std::move(region)).second) {
    bad_request(where + " is registered already");
  }
}

void SharedMemoryRegions::unregister(const std::string& name) {
  std::lock_guard guard(mutex_);
  if (name.empty()) {
    regions_.clear();
    return;
  }
  if (!regions_.erase(name)) bad_request("no shared memory region '" + name + "'");
}

nlohmann::json SharedMemoryRegions::status(const std::string& name) const {
  std::lock_guard guard(mutex_);
  nlohmann::json answer = nlohmann::json::array();
  for (const auto& [region_name, region] : regions_) {
    if (!name.empty() && region_name != name) continue;
    answer.push_back({{"name", region->name},
                      {"key", region->key},
                      {"offset", region->offset},
                      {"byte_size", region->byte_size}});
  }
  if (!name.empty() && answer.empty()) bad_request("no shared memory region '" + name + "'");
  return answer;
}

std::shared_ptr<const SharedMemoryView> SharedMemoryRegions::view(const std::string& name,
                                                                  uint64_t offset,
                                                                  uint64_t byte_size,
                                                                  const std::string& where) const {
  std::shared_ptr<const Region> region;
  {
    std::lock_guard guard(mutex_);
    auto it = regions_.find(name);
    if (it == regions_.end()) bad_request(where + ": no shared memory region '" + name + "'");
    region = it->second;
  }
  if (offset > region->byte_size || byte_size > region->byte_size - offset) {
    bad_request(where + ": shared_memory_offset " + std::to_string(offset) +
                " and shared_memory_byte_size " + std::to_string(byte_size) +
                " run past the end of region '" + name + "' (" + std::to_string(region->byte_size) +
                " bytes)");
  }
  return std::make_shared<RegionView>(std::move(region), offset, byte_size);
}

}  // namespace onnxkit::serve
