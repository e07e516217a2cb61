#include "serve/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <iostream>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "serve/content_encoding.h"
#include "serve/server_metrics.h"
#include "serve/shared_memory.h"

namespace onnxkit::serve {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

constexpr std::string_view kHeaderLength = "Inference-Header-Content-Length";
// Outputs up to this size are encoded on the batcher's worker rather than the handler pool.
constexpr size_t kEncodeOnWorkerBytes = 64 * 1024;
// The most one read of a request body asks the socket for.
constexpr size_t kBodyReadBytes = 64 * 1024;

int64_t ns_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

Response make_response(http::status status, std::string body,
                       std::string_view content_type = "application/json") {
  Response response{status, 11};
  response.set(http::field::server, "onnxkit");
  response.set(http::field::content_type, content_type);
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

Response error_response(int status, std::string_view message) {
  return make_response(static_cast<http::status>(status), error_body(message));
}

// Responses smaller than this go out uncompressed even to clients that accept gzip.
constexpr size_t kGzipMinBytes = 1024;

bool tokens_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// The JSON object a `what` request's body holds (the repository and shared-memory
// extensions' requests); an empty body is an empty object.
json body_object(std::string_view body, const std::string& what) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::object();
  json object = json::parse(body, nullptr, false);
  if (!object.is_object()) {
    throw RequestError(400, "the " + what + " request's body must be a JSON object");
  }
  return object;
}

// The "parameters" object of a repository load or unload request body (`what`).
json repository_request_parameters(std::string_view body, const std::string& what) {
  const json request = body_object(body, what);
  auto parameters = request.find("parameters");
  if (parameters == request.end()) return json::object();
  if (!parameters->is_object()) {
    throw RequestError(400, "the " + what + " request's 'parameters' must be an object");
  }
  return *parameters;
}

// A load request's parameters (Triton's, as tritonclient's load_model sends them): "config",
// config.json's fields as JSON text (or an object), and "file:PATH", a file of the model's
// folder in base64.
LoadOverride parse_load_request(std::string_view body) {
  LoadOverride override;
  bool has_files = false;
  const json parameters = repository_request_parameters(body, "load");
  for (const auto& [key, value] : parameters.items()) {
    if (key == "config") {
      if (value.is_object()) {
        override.config = value;
        continue;
      }
      if (!value.is_string()) {
        throw RequestError(400, "load request: 'config' must be JSON text or an object");
      }
      json config = json::parse(value.get_ref<const std::string&>(), nullptr, false);
      if (config.is_discarded()) throw RequestError(400, "load request: 'config' is not JSON");
      override.config = std::move(config);
    } else if (key.starts_with("file:")) {
      if (!value.is_string()) {
        throw RequestError(400, "load request: '" + key + "' must be base64 text");
      }
      has_files = true;
      override.files[key.substr(5)] =
          decode_base64(value.get_ref<const std::string&>(), "load request: '" + key + "'");
    } else {
      throw RequestError(
          400, "load request: unknown parameter '" + key + "' (the parameters: config, file:PATH)");
    }
  }
  if (has_files && std::none_of(override.files.begin(), override.files.end(), [](const auto& file) {
        return file.first.ends_with("/model.onnx");
      })) {
    throw RequestError(400,
                       "load request: the files hold no VERSION/model.onnx (e.g. "
                       "'file:1/model.onnx')");
  }
  return override;
}

void check_unload_request(std::string_view body) {
  const json parameters = repository_request_parameters(body, "unload");
  for (const auto& [key, value] : parameters.items()) {
    // A model here has no dependents (no ensembles): the flag changes nothing.
    if (key == "unload_dependents" && value.is_boolean()) continue;
    throw RequestError(400, "unload request: unknown parameter '" + key +
                                "' (the parameters: unload_dependents, a bool)");
  }
}

}  // namespace

class Connection;

struct InferenceServer::Impl : std::enable_shared_from_this<InferenceServer::Impl> {
  ModelRepository& repository;
  ResponseCache* cache;
  ServerOptions options;
  ServerMetrics metrics;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::thread_pool handlers;
  asio::signal_set signals{io, SIGINT, SIGTERM};
  std::atomic<int64_t> in_flight{0};
  std::atomic<bool> draining{false};
  std::atomic<int64_t> connections{0};
  // Accept fails at once, again and again, while the process is out of file descriptors
  // (EMFILE/ENFILE) with a connection pending: retrying after a pause instead of at once
  // keeps an I/O thread from spinning until connections close.
  asio::steady_timer accept_retry{io};
  bool accept_failing = false;
  uint16_t bound_port = 0;
  SharedMemoryRegions shared_memory;
  // Resolves requests' shared-memory parameters; empty when shared memory is off.
  SharedMemoryResolver shared_memory_resolver;

  Impl(ModelRepository& repository, ResponseCache* cache, ServerOptions options)
      : repository(repository),
        cache(cache),
        options(std::move(options)),
        handlers(static_cast<size_t>(std::max(1, this->options.handler_threads))) {
    if (this->options.allow_shared_memory) {
      shared_memory_resolver = [this](const std::string& name, uint64_t offset, uint64_t byte_size,
                                      const std::string& where) {
        return shared_memory.view(name, offset, byte_size, where);
      };
    }
  }

  Response shared_memory_route(const Request& request, const std::vector<std::string>& path);

  void accept();
  void begin_drain();
  void wait_for_drain(std::shared_ptr<asio::steady_timer> timer, Clock::time_point deadline);

  // Answers `request` through `reply` (called exactly once, from any thread).
  void handle(Request request, std::function<void(Response)> reply, Clock::time_point received);
  Response route(const Request& request, const std::vector<std::string>& path);
  void infer(const Request& request, const std::string& model, const std::string& version,
             const std::function<void(Response)>& reply, Clock::time_point received);
  json statistics(const std::string& model, const std::string& version) const;
};

// One client connection: reads a request, hands it to the server, writes the answer, and
// reads the next one while the client keeps the connection alive.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<InferenceServer::Impl> server)
      : stream_(std::move(socket)), server_(std::move(server)) {
    const int64_t open = ++server_->connections;
    over_limit_ = server_->options.max_connections > 0 && open > server_->options.max_connections;
  }
  ~Connection() { --server_->connections; }

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    parser_->body_limit(server_->options.max_body_bytes);
    stream_.expires_after(server_->options.read_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Connection::on_header, shared_from_this()));
  }

  // A flat_buffer grows only as much as one read needs, and the parser empties it into the
  // body after each read, so a body would otherwise arrive 512 bytes per read (a 600 KB
  // tensor: ~1,200 reads, each with an epoll wake-up and a timer re-arm, ~3 ms of an I/O
  // thread). Room for kBodyReadBytes makes each read take up to that much.
  void on_header(beast::error_code error, size_t bytes) {
    if (error) {
      on_read(error, bytes);
      return;
    }
    const auto length = parser_->content_length();
    if (length && *length > buffer_.capacity()) {
      buffer_.reserve(static_cast<size_t>(std::min<uint64_t>(*length, kBodyReadBytes)));
    }
    // A client that sends "Expect: 100-continue" (curl, .NET, Java clients for large bodies)
    // waits for an interim "100 Continue" before the body, or for its own timeout: a second
    // per request with curl. A body over the limit is refused before it is sent.
    const auto& header = parser_->get();
    if (header.version() >= 11 && !parser_->is_done() &&
        beast::iequals(header[http::field::expect], "100-continue")) {
      if (length && *length > server_->options.max_body_bytes) {
        fail_body_too_large();
        return;
      }
      continue_response_ = {http::status::continue_, header.version()};
      stream_.expires_after(server_->options.write_timeout);
      http::async_write(stream_, continue_response_,
                        [self = shared_from_this()](beast::error_code error, size_t) {
                          if (error) {
                            self->close();
                            return;
                          }
                          // The body gets the read timeout the header had before the write.
                          self->stream_.expires_after(self->server_->options.read_timeout);
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Connection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code error, size_t) {
    if (error == http::error::end_of_stream || error == beast::error::timeout ||
        error == asio::error::operation_aborted) {
      close();
      return;
    }
    if (error == http::error::body_limit) {
      fail_body_too_large();
      return;
    }
    if (error == http::error::header_limit) {
      fail_and_close(431, "request headers larger than the server's limit of " +
                              std::to_string(server_->options.max_header_bytes) + " bytes");
      return;
    }
    if (error && error.category() == http::make_error_code(http::error::bad_target).category()) {
      fail_and_close(400, "malformed HTTP request: " + error.message());
      return;
    }
    if (error) {
      close();
      return;
    }
    if (over_limit_) {
      // Read first, so the client sees the answer rather than a reset connection.
      fail_and_close(503, "the server has its limit of " +
                              std::to_string(server_->options.max_connections) +
                              " connections open; try again later");
      return;
    }
    keep_alive_ = parser_->keep_alive();
    ++server_->in_flight;
    Request request = parser_->release();
    auto self = shared_from_this();
    server_->handle(
        std::move(request),
        [self](Response response) {
          asio::post(self->stream_.get_executor(),
                     [self, response = std::move(response)]() mutable {
                       self->write(std::move(response), true);
                     });
        },
        Clock::now());
  }

  void fail_body_too_large() {
    fail_and_close(413, "request body larger than the server's limit of " +
                            std::to_string(server_->options.max_body_bytes) + " bytes");
  }

  void fail_and_close(int status, const std::string& message) {
    keep_alive_ = false;
    ++server_->in_flight;
    write(error_response(status, message), true);
  }

  void write(Response response, bool counted) {
    const bool keep = keep_alive_ && !server_->draining;
    response.keep_alive(keep);
    response_ = std::move(response);
    stream_.expires_after(server_->options.write_timeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this(), keep, counted](beast::error_code error, size_t) {
                        if (counted) --self->server_->in_flight;
                        if (error || !keep) {
                          self->close();
                          return;
                        }
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::empty_body> continue_response_;
  Response response_;
  bool keep_alive_ = true;
  bool over_limit_ = false;
  std::shared_ptr<InferenceServer::Impl> server_;
};

void InferenceServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [self = shared_from_this()](beast::error_code error,
                                                                           tcp::socket socket) {
    if (error) {
      if (error == asio::error::operation_aborted || !self->acceptor.is_open()) return;
      if (!self->accept_failing)
        std::cerr << "onnxkit serve: accepting a connection failed (" << error.message()
                  << "); retrying every 50 ms\n";
      self->accept_failing = true;
      self->accept_retry.expires_after(std::chrono::milliseconds(50));
      self->accept_retry.async_wait([self](beast::error_code wait_error) {
        if (!wait_error && self->acceptor.is_open()) self->accept();
      });
      return;
    }
    self->accept_failing = false;
    std::make_shared<Connection>(std::move(socket), self)->start();
    self->accept();
  });
}

void InferenceServer::Impl::begin_drain() {
  if (draining.exchange(true)) return;
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  signals.cancel(ignored);
  auto timer = std::make_shared<asio::steady_timer>(io);
  wait_for_drain(timer, Clock::now() + options.drain_timeout);
}

void InferenceServer::Impl::wait_for_drain(std::shared_ptr<asio::steady_timer> timer,
                                           Clock::time_point deadline) {
  if (in_flight.load() == 0 || Clock::now() >= deadline) {
    if (in_flight.load() != 0) {
      std::cerr << "onnxkit serve: " << in_flight.load()
                << " requests still in flight after the drain timeout\n";
    }
    io.stop();
    return;
  }
  timer->expires_after(std::chrono::milliseconds(5));
  timer->async_wait([self = shared_from_this(), timer, deadline](beast::error_code) {
    self->wait_for_drain(timer, deadline);
  });
}

void InferenceServer::Impl::handle(Request request, std::function<void(Response)> reply,
                                   Clock::time_point received) {
  // HEAD is GET without the body (load balancers' and some probes' check): the same headers,
  // Content-Length included, and no body.
  if (request.method() == http::verb::head) {
    reply = [reply = std::move(reply)](Response response) {
      const size_t length = response.body().size();
      response.body().clear();
      response.content_length(length);
      reply(std::move(response));
    };
  }
  // Large answers are gzipped for clients that accept it.
  if (accepts_gzip(request[http::field::accept_encoding])) {
    reply = [reply = std::move(reply)](Response response) {
      if (response.body().size() >= kGzipMinBytes) {
        response.body() = gzip(response.body());
        response.set(http::field::content_encoding, "gzip");
        response.prepare_payload();
      }
      response.set(http::field::vary, "Accept-Encoding");
      reply(std::move(response));
    };
  }
  asio::post(handlers, [self = shared_from_this(), request = std::move(request),
                        reply = std::move(reply), received]() mutable {
    std::vector<std::string> path;
    try {
      path = path_segments(request.target());
    } catch (const RequestError& e) {
      reply(error_response(e.http_status(), e.what()));
      return;
    }
    const bool health = path.size() >= 2 && path[0] == "v2" && path[1] == "health";
    if (!self->options.auth_token.empty() && !health) {
      const std::string_view authorization = request[http::field::authorization];
      if (authorization.rfind("Bearer ", 0) != 0 ||
          !tokens_equal(authorization.substr(7), self->options.auth_token)) {
        Response response = error_response(401, "missing or wrong bearer token");
        response.set(http::field::www_authenticate, "Bearer");
        reply(std::move(response));
        return;
      }
    }
    try {
      // POST /v2/models/M[/versions/V]/infer: answered later, by the batcher's callback.
      if (path.size() >= 4 && path[0] == "v2" && path[1] == "models" && path.back() == "infer" &&
          (path.size() == 4 || (path.size() == 6 && path[3] == "versions"))) {
        if (request.method() != http::verb::post) {
          reply(error_response(405, "infer takes POST"));
          return;
        }
        // `reply` stays here for the catch blocks below when infer throws before queuing.
        self->infer(request, path[2], path.size() == 6 ? path[4] : "", reply, received);
        return;
      }
      reply(self->route(request, path));
    } catch (const RequestError& e) {
      reply(error_response(e.http_status(), e.what()));
    } catch (const std::exception& e) {
      reply(error_response(500, e.what()));
    }
  });
}

Response InferenceServer::Impl::route(const Request& request,
                                      const std::vector<std::string>& path) {
  const bool get = request.method() == http::verb::get || request.method() == http::verb::head;
  const bool post = request.method() == http::verb::post;
  auto ok_json = [](const json& body) {
    return make_response(http::status::ok,
                         body.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  auto method_not_allowed = [&](const char* allowed) {
    Response response = error_response(405, std::string("use ") + allowed);
    response.set(http::field::allow, allowed);
    return response;
  };
  if (path.size() == 1 && path[0] == "metrics") {
    if (!get) return method_not_allowed("GET");
    if (cache) metrics.set_cache_errors(cache->errors());
    return make_response(http::status::ok, metrics.render(), "text/plain; version=0.0.4");
  }
  if (path.empty() || path[0] != "v2") throw RequestError(404, "no such endpoint");
  if (path.size() == 1) {
    if (!get) return method_not_allowed("GET");
    json extensions = {"binary_tensor_data", "classification", "model_repository", "statistics"};
    if (options.allow_shared_memory) extensions.push_back("system_shared_memory");
    return ok_json({{"name", "onnxkit"}, {"version", "0.1.0"}, {"extensions", extensions}});
  }
  if (path[1] == "systemsharedmemory" || path[1] == "cudasharedmemory") {
    return shared_memory_route(request, path);
  }
  if (path[1] == "health" && path.size() == 3) {
    if (!get) return method_not_allowed("GET");
    if (path[2] == "live") return ok_json({{"live", true}});
    if (path[2] == "ready") {
      const bool ready = !draining && repository.all_ready();
      if (!ready) return error_response(503, draining ? "shutting down" : "a model failed to load");
      return ok_json({{"ready", true}});
    }
  }
  if (path[1] == "repository") {
    if (!post) return method_not_allowed("POST");
    if (path.size() == 3 && path[2] == "index") {
      // {"ready": true} lists the models ready for inference only, as Triton does.
      bool ready_only = false;
      const json body = body_object(request.body(), "index");
      for (const auto& [key, value] : body.items()) {
        if (key != "ready") {
          throw RequestError(400, "index request: unknown field '" + key + "' (the fields: ready)");
        }
        if (!value.is_boolean()) throw RequestError(400, "index request: 'ready' must be a bool");
        ready_only = value.get<bool>();
      }
      json index = json::array();
      for (const ModelState& state : repository.index()) {
        if (ready_only && state.state != "READY") continue;
        json entry = {{"name", state.name}, {"state", state.state}, {"reason", state.reason}};
        if (!state.version.empty()) entry["version"] = state.version;
        index.push_back(std::move(entry));
      }
      return ok_json(index);
    }
    if (path.size() == 5 && path[2] == "models" && (path[4] == "load" || path[4] == "unload")) {
      if (draining) throw RequestError(503, "shutting down");
      const std::string_view encoding = request[http::field::content_encoding];
      std::string inflated;
      std::string_view body = request.body();
      if (!encoding.empty()) {
        inflated = decode_content(request.body(), encoding, options.max_body_bytes);
        body = inflated;
      }
      if (path[4] == "load") {
        repository.load(path[3], parse_load_request(body));
      } else {
        check_unload_request(body);
        repository.unload(path[3]);
      }
      return make_response(http::status::ok, "");
    }
  }
  if (path[1] == "models") {
    if (path.size() == 3 && path[2] == "stats") {
      if (!get) return method_not_allowed("GET");
      return ok_json(statistics("", ""));
    }
    if (path.size() < 3) throw RequestError(404, "no such endpoint");
    const std::string& model = path[2];
    std::string version;
    size_t rest = 3;
    if (path.size() >= 5 && path[3] == "versions") {
      version = path[4];
      rest = 5;
    }
    if (!get) return method_not_allowed("GET");
    if (path.size() == rest) return ok_json(repository.find(model, version)->metadata());
    if (path.size() == rest + 1 && path[rest] == "ready") {
      repository.find(model, version);
      if (draining) return error_response(503, "shutting down");
      return ok_json({{"name", model}, {"ready", true}});
    }
    if (path.size() == rest + 1 && path[rest] == "stats") {
      return ok_json(statistics(model, version));
    }
    if (path.size() == rest + 1 && path[rest] == "config") {
      auto instance = repository.find(model, version);
      const ModelConfig& config = instance->config;
      // Triton's model configuration fields where they apply (what tritonclient's
      // get_model_config and perf_analyzer read): tensors with TYPE_ names and dims without
      // the batch dim when the model batches.
      auto tensors = [&](const std::vector<ValueInfo>& infos, bool outputs) {
        json list = json::array();
        for (const ValueInfo& info : infos) {
          std::vector<int64_t> dims = protocol_shape(info);
          if (config.max_batch_size > 0 && !dims.empty()) dims.erase(dims.begin());
          const auto datatype = protocol_datatype(info.dtype);
          json entry = {{"name", info.name},
                        {"data_type", !datatype              ? "TYPE_INVALID"
                                      : *datatype == "BYTES" ? "TYPE_STRING"
                                                             : "TYPE_" + std::string(*datatype)},
                        {"dims", dims}};
          if (!outputs) entry["format"] = "FORMAT_NONE";
          if (auto labels = config.label_files.find(info.name);
              outputs && labels != config.label_files.end()) {
            entry["label_filename"] = labels->second.filename().string();
          }
          list.push_back(std::move(entry));
        }
        return list;
      };
      return ok_json({{"name", model},
                      {"platform", "onnx"},
                      {"backend", "onnxkit"},
                      {"input", tensors(instance->inputs, false)},
                      {"output", tensors(instance->outputs, true)},
                      {"instance_group", {{{"kind", "KIND_CPU"}, {"count", config.instances}}}},
                      {"max_batch_size", config.max_batch_size},
                      {"dynamic_batching",
                       {{"max_queue_delay_microseconds", config.max_queue_delay_us},
                        {"preferred_batch_size", config.preferred_batch_sizes},
                        {"max_queue_size", config.max_queue_size}}},
                      {"instances", config.instances},
                      {"threads", config.threads},
                      {"level", config.level}});
    }
  }
  throw RequestError(404, "no such endpoint");
}

// GET v2/systemsharedmemory[/region/R]/status, POST v2/systemsharedmemory/region/R/register,
// POST v2/systemsharedmemory[/region/R]/unregister; the CUDA ones answer that there is none.
Response InferenceServer::Impl::shared_memory_route(const Request& request,
                                                    const std::vector<std::string>& path) {
  const bool get = request.method() == http::verb::get || request.method() == http::verb::head;
  const bool post = request.method() == http::verb::post;
  const std::string action = path.back();
  std::string region;
  if (path.size() == 5 && path[2] == "region") {
    region = path[3];
  } else if (path.size() != 3) {
    throw RequestError(404, "no such endpoint");
  }
  if (action != "status" && action != "register" && action != "unregister") {
    throw RequestError(404, "no such endpoint");
  }
  if (action == "register" && region.empty()) throw RequestError(404, "no such endpoint");
  if (action == "status" ? !get : !post) {
    Response response = error_response(405, action == "status" ? "use GET" : "use POST");
    response.set(http::field::allow, action == "status" ? "GET" : "POST");
    return response;
  }
  if (path[1] == "cudasharedmemory") {
    // None is ever registered: the status is empty and unregistering them all succeeds (as
    // clients do when they clean up).
    if (action == "status" && region.empty()) return make_response(http::status::ok, "[]");
    if (action == "unregister" && region.empty()) return make_response(http::status::ok, "");
    throw RequestError(400,
                       "CUDA shared memory: onnxkit serves on the CPU (use system shared memory)");
  }
  if (!options.allow_shared_memory) {
    throw RequestError(400,
                       "shared memory is not enabled on this server (onnxkit serve "
                       "--allow-shared-memory)");
  }
  if (action == "status") {
    return make_response(http::status::ok, shared_memory.status(region).dump(
                                               -1, ' ', false, json::error_handler_t::replace));
  }
  if (action == "unregister") {
    shared_memory.unregister(region);
    return make_response(http::status::ok, "");
  }
  const json body = body_object(request.body(), "register");
  auto key = body.find("key");
  auto byte_size = body.find("byte_size");
  auto offset = body.find("offset");
  if (key == body.end() || !key->is_string()) {
    throw RequestError(400, "register request: 'key' must be a string");
  }
  auto unsigned_field = [&](json::const_iterator field, const char* name) -> uint64_t {
    if (field == body.end()) return 0;
    if (!field->is_number_unsigned()) {
      throw RequestError(
          400, std::string("register request: '") + name + "' must be a non-negative integer");
    }
    return field->get<uint64_t>();
  };
  if (byte_size == body.end()) throw RequestError(400, "register request: 'byte_size' is missing");
  shared_memory.register_region(region, key->get<std::string>(), unsigned_field(offset, "offset"),
                                unsigned_field(byte_size, "byte_size"));
  return make_response(http::status::ok, "");
}

json InferenceServer::Impl::statistics(const std::string& model, const std::string& version) const {
  json stats = json::array();
  if (model.empty()) {
    for (const auto& instance : repository.loaded()) {
      stats.push_back(instance->statistics->to_json(instance->name, instance->version));
    }
  } else if (version.empty()) {
    repository.find(model, "");  // 404 when unknown
    for (const auto& instance : repository.loaded()) {
      if (instance->name == model) {
        stats.push_back(instance->statistics->to_json(instance->name, instance->version));
      }
    }
  } else {
    auto instance = repository.find(model, version);
    stats.push_back(instance->statistics->to_json(instance->name, instance->version));
  }
  return {{"model_stats", stats}};
}

void InferenceServer::Impl::infer(const Request& request, const std::string& model,
                                  const std::string& version,
                                  const std::function<void(Response)>& reply,
                                  Clock::time_point received) {
  std::shared_ptr<ModelInstance> instance = repository.find(model, version);
  ModelMetrics& model_metrics = metrics.model(instance->name, instance->version);
  std::shared_ptr<ModelStatistics> statistics = instance->statistics;
  auto fail = [&](int status, const std::string& message, FailureReason reason) {
    model_metrics.record_failure(reason);
    statistics->record_failure(ns_since(received));
    reply(error_response(status, message));
  };
  // A request read before or during the drain is in flight and is answered; during the
  // drain each answer closes its connection, so no client can keep the drain going.
  auto parsed = std::make_shared<InferRequest>();
  try {
    std::optional<size_t> header_length;
    if (auto field = request.find(kHeaderLength); field != request.end()) {
      header_length = parse_header_length(field->value());
    }
    const std::string_view encoding = request[http::field::content_encoding];
    if (encoding.empty()) {
      *parsed = parse_infer_request(request.body(), header_length, instance->inputs,
                                    instance->outputs, options.limits, shared_memory_resolver);
    } else {
      // Inflated under the same limit an uncompressed body has (a zip bomb gets 413).
      const std::string body = decode_content(request.body(), encoding, options.max_body_bytes);
      *parsed = parse_infer_request(body, header_length, instance->inputs, instance->outputs,
                                    options.limits, shared_memory_resolver);
    }
  } catch (const RequestError& e) {
    fail(e.http_status(), e.what(), FailureReason::kOther);
    return;
  }
  const std::string name = instance->name;
  const std::string resolved_version = instance->version;
  auto respond = [name, resolved_version, parsed, instance](const NamedValues& outputs) {
    EncodedResponse encoded =
        encode_infer_response(name, resolved_version, *parsed, outputs, &instance->labels);
    Response response =
        make_response(http::status::ok, std::move(encoded.body),
                      encoded.header_length ? "application/octet-stream" : "application/json");
    if (encoded.header_length) {
      response.set(kHeaderLength, std::to_string(*encoded.header_length));
    }
    return response;
  };

  // The request's batch rows: inference counts count them (Triton's inference_count).
  const int64_t rows = [&] {
    for (const ValueInfo& info : instance->inputs) {
      if (!instance->batcher->merges_batches()) break;
      for (const auto& [input, value] : parsed->inputs) {
        if (input == info.name && value.tensor().rank() > 0) return value.tensor().shape()[0];
      }
    }
    return int64_t{1};
  }();
  std::string key;
  if (cache) {
    const auto lookup_start = Clock::now();
    key = cache_key(name, resolved_version, parsed->inputs);
    std::optional<std::string> cached = cache->get(key);
    if (cached) {
      try {
        NamedValues outputs = decode_values(*cached);
        Response response = respond(outputs);
        model_metrics.cache_hits->Increment();
        model_metrics.success->Increment();
        model_metrics.inference_count->Increment(static_cast<double>(rows));
        model_metrics.request_us->Increment(ns_since(received) / 1e3);
        model_metrics.request_seconds->Observe(ns_since(received) / 1e9);
        statistics->record_cache_hit(rows, ns_since(lookup_start), ns_since(received));
        reply(std::move(response));
        return;
      } catch (const std::exception&) {
        // A value this server cannot read (another version wrote it): run the model.
      }
    }
    model_metrics.cache_misses->Increment();
    statistics->record_cache_miss(ns_since(lookup_start));
  }

  model_metrics.pending->Increment();
  auto self = shared_from_this();
  auto finish = [self, reply, respond, statistics, &model_metrics, received, rows, key](
                    Result<NamedValues>& outputs, const BatchTiming& timing) {
    if (timing.first_of_batch) statistics->record_execution(timing);
    if (!outputs.ok()) {
      model_metrics.record_failure(FailureReason::kBackend);
      statistics->record_failure(ns_since(received));
      reply(error_response(400, outputs.error()));
      return;
    }
    try {
      const NamedValues& values = outputs.value();
      Response response = respond(values);
      if (self->cache) self->cache->put(key, encode_values(values));
      model_metrics.record_success(timing, rows, ns_since(received));
      statistics->record_success(timing, rows, ns_since(received));
      reply(std::move(response));
    } catch (const RequestError& e) {
      // An answer the request asked for that these outputs cannot give (a classification of
      // an output whose type the model left undeclared).
      model_metrics.record_failure(FailureReason::kOther);
      statistics->record_failure(ns_since(received));
      reply(error_response(e.http_status(), e.what()));
    } catch (const std::exception& e) {
      model_metrics.record_failure(FailureReason::kBackend);
      statistics->record_failure(ns_since(received));
      reply(error_response(500, e.what()));
    }
  };
  const bool cached = cache != nullptr;
  auto done = [self, finish, &model_metrics, cached](Result<NamedValues> outputs,
                                                     const BatchTiming& timing) {
    model_metrics.pending->Decrement();
    // Small outputs are encoded right here (microseconds; one thread hand-off less per
    // request). Large ones, and cache stores (Redis may be slow), go to the handler pool so
    // the worker starts its next batch.
    size_t bytes = 0;
    if (outputs.ok()) {
      for (const auto& [name, value] : outputs.value()) {
        if (value.is_tensor()) bytes += value.tensor().nbytes();
      }
    }
    if (!cached && bytes <= kEncodeOnWorkerBytes) {
      finish(outputs, timing);
      return;
    }
    asio::post(self->handlers, [finish, timing, outputs = std::move(outputs)]() mutable {
      finish(outputs, timing);
    });
  };
  Status accepted = instance->batcher->submit(std::move(parsed->inputs), std::move(done));
  if (!accepted.ok()) {
    model_metrics.pending->Decrement();
    fail(503, "model '" + name + "': " + accepted.message(), FailureReason::kRejected);
  }
}

InferenceServer::InferenceServer(ModelRepository& repository, ResponseCache* cache,
                                 ServerOptions options)
    : impl_(std::make_shared<Impl>(repository, cache, std::move(options))) {}

InferenceServer::~InferenceServer() {
  impl_->handlers.join();
}

void InferenceServer::listen() {
  Impl& impl = *impl_;
  beast::error_code error;
  const auto address = asio::ip::make_address(impl.options.host, error);
  if (error) throw Error("--host '" + impl.options.host + "': " + error.message());
  const tcp::endpoint endpoint(address, impl.options.port);
  auto check = [&](const char* what) {
    if (error) {
      throw Error("cannot " + std::string(what) + " " + impl.options.host + ":" +
                  std::to_string(impl.options.port) + ": " + error.message());
    }
  };
  impl.acceptor.open(endpoint.protocol(), error);
  check("open");
  impl.acceptor.set_option(asio::socket_base::reuse_address(true), error);
  impl.acceptor.bind(endpoint, error);
  check("bind");
  impl.acceptor.listen(asio::socket_base::max_listen_connections, error);
  check("listen on");
  impl.bound_port = impl.acceptor.local_endpoint().port();
}

uint16_t InferenceServer::port() const {
  return impl_->bound_port;
}

void InferenceServer::run() {
  auto impl = impl_;
  impl->signals.async_wait([impl](beast::error_code error, int) {
    if (!error) impl->begin_drain();
  });
  impl->accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < std::max(1, impl->options.io_threads); ++i) {
    threads.emplace_back([impl] { impl->io.run(); });
  }
  impl->io.run();
  for (std::thread& thread : threads) thread.join();
  impl->repository.stop_all();
  impl->handlers.join();
}

void InferenceServer::stop() {
  asio::post(impl_->io, [impl = impl_] { impl->begin_drain(); });
}

}  // namespace onnxkit::serve
