#include "serve/response_cache.h"

#include <hiredis/hiredis.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace onnxkit::serve {
namespace {

void hash_bytes(XXH3_state_t* state, const void* data, size_t size) {
  XXH3_128bits_update(state, data, size);
}

void hash_string(XXH3_state_t* state, std::string_view text) {
  const uint64_t size = text.size();
  hash_bytes(state, &size, sizeof size);
  hash_bytes(state, text.data(), text.size());
}

template <typename T>
void put_pod(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

void put_string(std::string& out, std::string_view text) {
  put_pod<uint64_t>(out, text.size());
  out.append(text);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T pod() {
    T value;
    std::memcpy(&value, take(sizeof value).data(), sizeof value);
    return value;
  }
  std::string_view string() { return take(pod<uint64_t>()); }
  std::string_view take(uint64_t size) {
    if (size > bytes_.size() - offset_) throw Error("cached value is truncated");
    std::string_view part = bytes_.substr(offset_, size);
    offset_ += size;
    return part;
  }
  bool done() const { return offset_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

class LocalCache final : public ResponseCache {
 public:
  explicit LocalCache(size_t capacity) : capacity_(capacity) {}

  std::optional<std::string> get(const std::string& key) override {
    std::lock_guard guard(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    entries_.splice(entries_.begin(), entries_, it->second);
    return it->second->second;
  }

  void put(const std::string& key, const std::string& value) override {
    const size_t size = key.size() + value.size();
    if (size > capacity_) return;
    std::lock_guard guard(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      bytes_ -= it->first.size() + it->second->second.size();
      entries_.erase(it->second);
      index_.erase(it);
    }
    while (bytes_ + size > capacity_ && !entries_.empty()) {
      auto& oldest = entries_.back();
      bytes_ -= oldest.first.size() + oldest.second.size();
      index_.erase(oldest.first);
      entries_.pop_back();
    }
    entries_.emplace_front(key, value);
    index_[key] = entries_.begin();
    bytes_ += size;
  }

  std::string_view kind() const override { return "local"; }

 private:
  using Entry = std::pair<std::string, std::string>;
  size_t capacity_;
  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
};

class RedisCache final : public ResponseCache {
 public:
  explicit RedisCache(RedisCacheOptions options) : options_(std::move(options)) {}
  ~RedisCache() override {
    for (redisContext* context : idle_) redisFree(context);
  }

  std::optional<std::string> get(const std::string& key) override {
    std::optional<std::string> found;
    command([&](redisContext* context) {
      auto* reply = static_cast<redisReply*>(
          redisCommand(context, "GET %b", key.data(), static_cast<size_t>(key.size())));
      if (!reply) return false;
      bool ok = reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_NIL;
      if (reply->type == REDIS_REPLY_STRING) found.emplace(reply->str, reply->len);
      freeReplyObject(reply);
      return ok;
    });
    return found;
  }

  void put(const std::string& key, const std::string& value) override {
    command([&](redisContext* context) {
      redisReply* reply = nullptr;
      if (options_.ttl_seconds > 0) {
        reply = static_cast<redisReply*>(
            redisCommand(context, "SET %b %b EX %lld", key.data(), key.size(), value.data(),
                         value.size(), static_cast<long long>(options_.ttl_seconds)));
      } else {
        reply = static_cast<redisReply*>(
            redisCommand(context, "SET %b %b", key.data(), key.size(), value.data(), value.size()));
      }
      if (!reply) return false;
      bool ok = reply->type == REDIS_REPLY_STATUS;
      freeReplyObject(reply);
      return ok;
    });
  }

  std::string_view kind() const override { return "redis"; }

 private:
  using Clock = std::chrono::steady_clock;

  // Runs `body` on a pooled connection (made when none is idle). A failure drops the
  // connection, counts an error and skips Redis for retry_after.
  template <typename Body>
  void command(Body&& body) {
    redisContext* context = nullptr;
    {
      std::lock_guard guard(mutex_);
      if (Clock::now() < skip_until_) {
        ++errors_;
        return;
      }
      if (!idle_.empty()) {
        context = idle_.back();
        idle_.pop_back();
      }
    }
    if (!context) context = connect();
    if (context && body(context)) {
      std::lock_guard guard(mutex_);
      idle_.push_back(context);
      return;
    }
    if (context) redisFree(context);
    ++errors_;
    std::lock_guard guard(mutex_);
    skip_until_ = Clock::now() + options_.retry_after;
  }

  redisContext* connect() const {
    timeval timeout{};
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(options_.timeout).count();
    timeout.tv_sec = us / 1000000;
    timeout.tv_usec = us % 1000000;
    redisContext* context = redisConnectWithTimeout(options_.host.c_str(), options_.port, timeout);
    if (!context) return nullptr;
    if (context->err || redisSetTimeout(context, timeout) != REDIS_OK) {
      redisFree(context);
      return nullptr;
    }
    return context;
  }

  RedisCacheOptions options_;
  std::mutex mutex_;
  std::vector<redisContext*> idle_;
  Clock::time_point skip_until_{};
};

size_t parse_size(std::string_view text, std::string_view spec) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) throw Error("--cache " + std::string(spec) + ": no size in bytes");
  const size_t number = std::stoull(std::string(text.substr(0, digits)));
  std::string unit(text.substr(digits));
  std::transform(unit.begin(), unit.end(), unit.begin(), ::toupper);
  const std::pair<const char*, size_t> units[] = {{"", 1},
                                                  {"B", 1},
                                                  {"KB", 1000},
                                                  {"MB", 1000000},
                                                  {"GB", 1000000000},
                                                  {"KIB", size_t{1} << 10},
                                                  {"MIB", size_t{1} << 20},
                                                  {"GIB", size_t{1} << 30}};
  for (const auto& [name, scale] : units) {
    if (unit == name) return number * scale;
  }
  throw Error("--cache " + std::string(spec) + ": unknown size unit '" + unit + "'");
}

}  // namespace

std::string cache_key(std::string_view model, std::string_view version, const NamedValues& inputs) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  hash_string(state, model);
  hash_string(state, version);
  std::vector<const std::pair<std::string, RuntimeValue>*> sorted;
  for (const auto& input : inputs) sorted.push_back(&input);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (const auto* input : sorted) {
    hash_string(state, input->first);
    const Tensor& tensor = input->second.tensor();
    const int32_t dtype = static_cast<int32_t>(tensor.dtype());
    hash_bytes(state, &dtype, sizeof dtype);
    const uint64_t rank = tensor.rank();
    hash_bytes(state, &rank, sizeof rank);
    hash_bytes(state, tensor.shape().data(), rank * sizeof(int64_t));
    if (tensor.dtype() == DType::kString) {
      for (const std::string& item : tensor.strings()) hash_string(state, item);
    } else {
      hash_bytes(state, tensor.raw_data(), tensor.nbytes());
    }
  }
  const XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return std::string("onnxkit:") + text;
}

std::string encode_values(const NamedValues& values) {
  std::string out;
  put_pod<uint64_t>(out, values.size());
  for (const auto& [name, value] : values) {
    const Tensor& tensor = value.tensor();
    put_string(out, name);
    put_pod<int32_t>(out, static_cast<int32_t>(tensor.dtype()));
    put_pod<uint64_t>(out, tensor.rank());
    for (int64_t dim : tensor.shape()) put_pod<int64_t>(out, dim);
    if (tensor.dtype() == DType::kString) {
      for (const std::string& item : tensor.strings()) put_string(out, item);
    } else {
      put_string(out,
                 std::string_view(static_cast<const char*>(tensor.raw_data()), tensor.nbytes()));
    }
  }
  return out;
}

NamedValues decode_values(std::string_view bytes) {
  Reader reader(bytes);
  NamedValues values;
  const uint64_t count = reader.pod<uint64_t>();
  for (uint64_t i = 0; i < count; ++i) {
    std::string name(reader.string());
    const auto dtype = static_cast<DType>(reader.pod<int32_t>());
    if (!dtype_is_known(static_cast<int32_t>(dtype))) throw Error("cached value: bad dtype");
    const uint64_t rank = reader.pod<uint64_t>();
    if (rank > 64) throw Error("cached value: bad rank");
    Shape shape(rank);
    for (auto& dim : shape) dim = reader.pod<int64_t>();
    const int64_t count_elements = shape_numel(shape);
    if (dtype == DType::kString) {
      std::vector<std::string> strings;
      for (int64_t e = 0; e < count_elements; ++e) strings.emplace_back(reader.string());
      values.emplace_back(std::move(name),
                          Tensor::from_strings(std::move(shape), std::move(strings)));
      continue;
    }
    std::string_view data = reader.string();
    if (data.size() != static_cast<size_t>(count_elements) * dtype_size(dtype)) {
      throw Error("cached value: tensor size mismatch");
    }
    Tensor tensor(dtype, std::move(shape));
    if (!data.empty()) std::memcpy(tensor.mutable_raw_data(), data.data(), data.size());
    values.emplace_back(std::move(name), std::move(tensor));
  }
  if (!reader.done()) throw Error("cached value has trailing bytes");
  return values;
}

std::unique_ptr<ResponseCache> make_local_cache(size_t capacity_bytes) {
  return std::make_unique<LocalCache>(capacity_bytes);
}

std::unique_ptr<ResponseCache> make_redis_cache(const RedisCacheOptions& options) {
  return std::make_unique<RedisCache>(options);
}

std::unique_ptr<ResponseCache> make_cache(std::string_view spec) {
  if (spec.rfind("local:", 0) == 0) {
    return make_local_cache(parse_size(spec.substr(6), spec));
  }
  if (spec.rfind("redis://", 0) == 0) {
    std::string_view rest = spec.substr(8);
    RedisCacheOptions options;
    if (auto query = rest.find('?'); query != std::string_view::npos) {
      std::string_view parameters = rest.substr(query + 1);
      rest = rest.substr(0, query);
      if (parameters.rfind("ttl=", 0) != 0) {
        throw Error("--cache " + std::string(spec) + ": the only option is ?ttl=SECONDS");
      }
      options.ttl_seconds = static_cast<int64_t>(parse_size(parameters.substr(4), spec));
    }
    auto colon = rest.rfind(':');
    options.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      const size_t port = parse_size(rest.substr(colon + 1), spec);
      if (port == 0 || port > 65535) throw Error("--cache " + std::string(spec) + ": bad port");
      options.port = static_cast<int>(port);
    }
    if (options.host.empty()) throw Error("--cache " + std::string(spec) + ": no host");
    return make_redis_cache(options);
  }
  throw Error("--cache " + std::string(spec) +
              ": expected local:SIZE or redis://HOST:PORT[?ttl=SECONDS]");
}

}  // namespace onnxkit::serve
