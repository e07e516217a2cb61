#include "serve/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace onnxkit::serve {

struct SharedMemoryRegions::Region {
  std::string name;
  std::string key;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
  void* mapping = MAP_FAILED;
  size_t mapping_length = 0;
  char* data = nullptr;  // the region's first byte, inside the mapping

  ~Region() {
    if (mapping != MAP_FAILED) munmap(mapping, mapping_length);
  }
};

namespace {

[[noreturn]] void bad_request(std::string message) {
  throw RequestError(400, std::move(message));
}

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
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    bad_request(where + ": cannot open shared memory object '" + key +
                "': " + std::strerror(errno));
  }
  auto region = std::make_shared<Region>();
  struct stat info {};
  const bool sized = fstat(fd, &info) == 0;
  const auto object_size = sized ? static_cast<uint64_t>(info.st_size) : 0;
  if (!sized || offset > object_size || byte_size > object_size - offset) {
    close(fd);
    bad_request(where + ": offset " + std::to_string(offset) + " and byte_size " +
                std::to_string(byte_size) + " run past the end of '" + key + "' (" +
                std::to_string(object_size) + " bytes)");
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  region->mapping_length = static_cast<size_t>(offset - start + byte_size);
  region->mapping = mmap(nullptr, region->mapping_length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                         static_cast<off_t>(start));
  const int map_error = errno;
  close(fd);
  if (region->mapping == MAP_FAILED) {
    bad_request(where + ": cannot map '" + key + "': " + std::strerror(map_error));
  }
  region->name = name;
  region->key = key;
  region->offset = offset;
  region->byte_size = byte_size;
  region->data = static_cast<char*>(region->mapping) + (offset - start);
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

SharedMemoryView SharedMemoryRegions::view(const std::string& name, uint64_t offset,
                                           uint64_t byte_size, const std::string& where) const {
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
  return {region, region->data + offset, byte_size};
}

}  // namespace onnxkit::serve
