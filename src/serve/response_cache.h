// The response cache: outputs of a model version for identical inputs. In process (an LRU
// bounded in bytes) or in Redis (shared by replicas). A cache that is down or slow never
// fails a request: a lookup that cannot be answered is a miss, a store that cannot be made is
// dropped, and both are counted as errors.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "onnxkit/session.h"

namespace onnxkit::serve {

// The key of a request: a 128-bit hash (hex) of model name, version and every input's name,
// datatype, shape and bytes, in name order.
std::string cache_key(std::string_view model, std::string_view version, const NamedValues& inputs);

// Tensors to bytes and back, for storing outputs; decode throws Error on malformed bytes.
std::string encode_values(const NamedValues& values);
NamedValues decode_values(std::string_view bytes);

class ResponseCache {
 public:
  virtual ~ResponseCache() = default;
  // The stored value, or nullopt (not stored, or the cache could not answer).
  virtual std::optional<std::string> get(const std::string& key) = 0;
  virtual void put(const std::string& key, const std::string& value) = 0;
  // "local" or "redis", for metrics and logs.
  virtual std::string_view kind() const = 0;
  // Lookups or stores the cache could not do (Redis down, slow or erroring).
  uint64_t errors() const { return errors_.load(); }

 protected:
  std::atomic<uint64_t> errors_{0};
};

// An in-process LRU holding at most `capacity_bytes` of keys and values.
std::unique_ptr<ResponseCache> make_local_cache(size_t capacity_bytes);

struct RedisCacheOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  int64_t ttl_seconds = 0;  // 0: keys do not expire
  // Connecting and each command give up after this long.
  std::chrono::milliseconds timeout{50};
  // After a failure, the cache is skipped for this long before Redis is tried again, so a
  // dead Redis costs one timeout per interval rather than one per request.
  std::chrono::milliseconds retry_after{1000};
};

// Redis through hiredis; connects lazily (a Redis that is down at start is no error).
std::unique_ptr<ResponseCache> make_redis_cache(const RedisCacheOptions& options);

// `--cache` values: "local:SIZE" (SIZE in bytes, or with KB/MB/GB/KiB/MiB/GiB) or
// "redis://HOST:PORT[?ttl=S]". Throws Error naming the value.
std::unique_ptr<ResponseCache> make_cache(std::string_view spec);

}  // namespace onnxkit::serve
