// The response cache: keys, the in-process LRU's byte bound, and Redis (a real redis-server
// started on a free loopback port), including Redis going away under the cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "serve/response_cache.h"

namespace onnxkit::serve {
namespace {

NamedValues values(float first, Shape shape = {2}) {
  std::vector<float> data(static_cast<size_t>(shape_numel(shape)), 1.f);
  data[0] = first;
  return {{"x", Tensor::from_vector(DType::kFloat, shape, data)}};
}

TEST(ResponseCacheTest, KeysCoverModelVersionNameDtypeShapeAndBytes) {
  const std::string base = cache_key("m", "1", values(1));
  EXPECT_EQ(base, cache_key("m", "1", values(1)));
  EXPECT_NE(base, cache_key("n", "1", values(1)));
  EXPECT_NE(base, cache_key("m", "2", values(1)));
  EXPECT_NE(base, cache_key("m", "1", values(2)));
  EXPECT_NE(base, cache_key("m", "1", values(1, {2, 1})));
  NamedValues renamed{{"y", values(1)[0].second}};
  EXPECT_NE(base, cache_key("m", "1", renamed));
  NamedValues as_int{
      {"x", Tensor::from_vector(DType::kInt32, {2}, std::vector<int32_t>{0x3f800000, 0x3f800000})}};
  EXPECT_NE(base, cache_key("m", "1", as_int));
  // Input order does not matter.
  NamedValues two{{"a", values(1)[0].second}, {"b", values(2)[0].second}};
  NamedValues swapped{{"b", values(2)[0].second}, {"a", values(1)[0].second}};
  EXPECT_EQ(cache_key("m", "1", two), cache_key("m", "1", swapped));
}

TEST(ResponseCacheTest, ValuesRoundTripAndBadBytesAreErrors) {
  NamedValues mixed{{"x", values(3, {2, 2})[0].second},
                    {"s", Tensor::from_strings({2}, {"a", "bc"})}};
  NamedValues back = decode_values(encode_values(mixed));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].second.tensor().same_contents(mixed[0].second.tensor()));
  EXPECT_TRUE(back[1].second.tensor().same_contents(mixed[1].second.tensor()));
  const std::string bytes = encode_values(mixed);
  EXPECT_THROW(decode_values(bytes.substr(0, bytes.size() - 1)), Error);
  EXPECT_THROW(decode_values(bytes + "x"), Error);
}

TEST(ResponseCacheTest, LocalCacheEvictsLeastRecentlyUsedWithinItsBytes) {
  auto cache = make_cache("local:300");
  const std::string value(90, 'v');
  cache->put("a", value);  // 91 bytes each
  cache->put("b", value);
  cache->put("c", value);
  ASSERT_TRUE(cache->get("a"));  // a is now the most recent
  cache->put("d", value);        // evicts b
  EXPECT_TRUE(cache->get("a"));
  EXPECT_FALSE(cache->get("b"));
  EXPECT_TRUE(cache->get("c"));
  EXPECT_TRUE(cache->get("d"));
  cache->put("huge", std::string(400, 'h'));  // larger than the cache: not stored
  EXPECT_FALSE(cache->get("huge"));
  EXPECT_TRUE(cache->get("d"));
}

TEST(ResponseCacheTest, BadSpecsAreErrors) {
  EXPECT_THROW(make_cache("memory:1"), Error);
  EXPECT_THROW(make_cache("local:"), Error);
  EXPECT_THROW(make_cache("local:12XB"), Error);
  EXPECT_THROW(make_cache("redis://:80"), Error);
  EXPECT_THROW(make_cache("redis://h:99999"), Error);
  EXPECT_THROW(make_cache("redis://h:1?size=3"), Error);
  EXPECT_NO_THROW(make_cache("local:64MiB"));
  EXPECT_NO_THROW(make_cache("redis://127.0.0.1:6390?ttl=5"));
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t size = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

// A redis-server of its own on a free loopback port, killed at the end.
class RedisServer {
 public:
  RedisServer() : port_(free_port()) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      const std::string port = std::to_string(port_);
      ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--loglevel", "warning", nullptr);
      ::_exit(127);
    }
  }
  ~RedisServer() { stop(); }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = -1;
};

TEST(ResponseCacheTest, RedisStoresAndExpiresAndSurvivesRedisGoingAway) {
  RedisServer redis;
  RedisCacheOptions options;
  options.port = redis.port();
  options.ttl_seconds = 1;
  options.retry_after = std::chrono::milliseconds(100);
  auto cache = make_redis_cache(options);
  // redis-server needs a moment to listen; until then the cache answers misses.
  const std::string value = encode_values(values(5));
  bool stored = false;
  for (int attempt = 0; attempt < 100 && !stored; ++attempt) {
    cache->put("k", value);
    stored = cache->get("k").has_value();
    if (!stored) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(stored) << "redis-server on port " << redis.port() << " never answered";
  EXPECT_EQ(*cache->get("k"), value);
  EXPECT_FALSE(cache->get("other"));
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // ttl=1 s
  EXPECT_FALSE(cache->get("k")) << "the key outlived its TTL";

  const uint64_t errors_before = cache->errors();
  redis.stop();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    cache->put("k", value);
    EXPECT_FALSE(cache->get("k"));
  }
  // Each failed call is bounded by the timeout, and most skip Redis altogether.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_GE(cache->errors(), errors_before + 100);
}

}  // namespace
}  // namespace onnxkit::serve
