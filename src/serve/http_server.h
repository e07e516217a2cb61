// The Open Inference Protocol (KServe v2) REST server on Boost.Beast: a few I/O threads
// running asynchronous connections (keep-alive, header/body limits, timeouts), a handler
// pool that parses requests and consults the cache, and each model's DynamicBatcher running
// inference off both. Request bodies may be gzip or deflate; answers are gzipped for clients
// that accept it. SIGTERM/SIGINT stop accepting, answer what is in flight, then return.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "serve/inference_protocol.h"
#include "serve/model_repository.h"
#include "serve/response_cache.h"

namespace onnxkit::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port (InferenceServer::port() says which)
  int io_threads = 1;
  int handler_threads = 2;
  size_t max_header_bytes = 16 * 1024;
  // Also the bound on a gzip/deflate body once inflated.
  size_t max_body_bytes = size_t{256} << 20;
  // Connections open at once; past it a request is answered 503 and its connection closed.
  // 0: no limit.
  int64_t max_connections = 0;
  // A request must arrive whole within this long (slow clients are cut off); also how
  // long an idle keep-alive connection stays open.
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  // In-flight requests get this long to finish after a stop signal.
  std::chrono::milliseconds drain_timeout{30000};
  // Required as "Authorization: Bearer TOKEN" on everything but /v2/health/*; empty: none.
  std::string auth_token;
  ProtocolLimits limits;
  // Triton's system shared-memory extension (shared_memory.h); off by default.
  bool allow_shared_memory = false;
};

class InferenceServer {
 public:
  // `cache` may be null (no response cache). Both must outlive the server.
  InferenceServer(ModelRepository& repository, ResponseCache* cache, ServerOptions options);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds and listens; throws Error naming the address when it cannot.
  void listen();
  uint16_t port() const;
  // Serves until SIGTERM or SIGINT (or stop()), then drains: new connections are refused,
  // readiness turns false, in-flight requests are answered, the batchers finish.
  void run();
  // Starts the same drain from another thread.
  void stop();

  // The server's state, shared with its connections (http_server.cc).
  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace onnxkit::serve
