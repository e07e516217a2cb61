// Triton's system shared-memory extension: regions of POSIX shared memory objects that a
// client on the same machine registers, then names in infer requests instead of sending
// tensor bytes. Off unless `onnxkit serve --allow-shared-memory`, as Triton's
// --allow-client-shm: a client may then have the server read and write any /dev/shm object
// the server's user can open, so allow it only where every client is trusted that far.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "serve/inference_protocol.h"

namespace onnxkit::serve {

class SharedMemoryRegions {
 public:
  SharedMemoryRegions() = default;
  SharedMemoryRegions(const SharedMemoryRegions&) = delete;
  SharedMemoryRegions& operator=(const SharedMemoryRegions&) = delete;

  // Maps [offset, offset + byte_size) of the shared memory object `key` ("/name", as
  // shm_open takes it) as region `name`. Throws RequestError (400) when the name is taken,
  // the key is malformed or names no object, or the object is smaller than the region.
  void register_region(const std::string& name, const std::string& key, uint64_t offset,
                       uint64_t byte_size);
  // Forgets `name` (every region when empty); requests in flight keep their mappings until
  // they are answered. Throws RequestError (400) for a name that is not registered.
  void unregister(const std::string& name);
  // Triton's status answer: [{"name", "key", "offset", "byte_size"}] of `name` (every region
  // when empty; RequestError 400 for a name that is not registered).
  nlohmann::json status(const std::string& name) const;
  // The bytes [offset, offset + byte_size) of region `name`, for parse_infer_request; they
  // stay readable while the view lives, also after the region is unregistered.
  std::shared_ptr<const SharedMemoryView> view(const std::string& name, uint64_t offset,
                                               uint64_t byte_size, const std::string& where) const;

  struct Region;  // shared_memory.cc

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Region>> regions_;
};

}  // namespace onnxkit::serve
