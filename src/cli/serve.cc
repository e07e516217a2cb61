// `onnxkit serve MODEL... | --model-repository DIR [--host H] [--port P] [--threads N]
//  [--max-batch-size N] [--max-queue-delay-us N] [--max-queue-size N] [--cache SPEC]
//  [--auth-token-file F] ...`: an Open Inference Protocol (KServe v2) REST server. Prints
// "listening on http://HOST:PORT" once it accepts connections; SIGTERM or SIGINT drains the
// requests in flight and exits 0.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "serve/http_server.h"
#include "serve/model_repository.h"
#include "serve/response_cache.h"

namespace onnxkit::cli {
namespace {

namespace fs = std::filesystem;

struct ServeArgs {
  std::vector<std::string> models;
  std::string repository;
  std::string host = "127.0.0.1";
  int port = -1;  // -1: $PORT (as KServe sets it), else 8000
  std::string cache;
  std::string auth_token_file;
  std::string spin = "default";
  serve::ModelConfig config;
  serve::ServerOptions server;
  int64_t read_timeout_ms = 30000;
  int64_t drain_timeout_ms = 30000;
};

int port_from_environment() {
  const char* value = std::getenv("PORT");
  if (!value || !*value) return 8000;
  try {
    size_t used = 0;
    const int port = std::stoi(value, &used);
    if (used == std::string(value).size() && port >= 0 && port <= 65535) return port;
  } catch (const std::exception&) {
  }
  throw CLI::ValidationError(
      "PORT", std::string("environment variable PORT='") + value + "' is not a port number");
}

std::string read_token(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw Error("--auth-token-file " + file + ": cannot read");
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) throw Error("--auth-token-file " + file + ": the first line is empty");
  return token;
}

int serve_models(ServeArgs& args) {
  if (args.models.empty() && args.repository.empty()) {
    throw CLI::ValidationError("MODEL", "give model files or --model-repository DIR");
  }
  for (const std::string& model : args.models) {
    if (!fs::is_regular_file(model)) throw Error(model + ": no such file");
  }
  if (!args.repository.empty() && !fs::is_directory(args.repository)) {
    throw Error("--model-repository " + args.repository + ": not a folder");
  }
  if (!parse_optimization_level(args.config.level)) {
    throw CLI::ValidationError("--level", "unknown level '" + args.config.level + "'");
  }
  args.server.host = args.host;
  args.server.port = static_cast<uint16_t>(args.port >= 0 ? args.port : port_from_environment());
  args.server.read_timeout = std::chrono::milliseconds(args.read_timeout_ms);
  args.server.drain_timeout = std::chrono::milliseconds(args.drain_timeout_ms);
  if (!args.auth_token_file.empty()) args.server.auth_token = read_token(args.auth_token_file);
  std::unique_ptr<serve::ResponseCache> cache;
  if (!args.cache.empty()) cache = serve::make_cache(args.cache);

  std::vector<fs::path> files(args.models.begin(), args.models.end());
  serve::ModelRepository repository(args.repository, files, args.config);
  const std::vector<std::string> errors = repository.load_all();
  for (const std::string& error : errors) std::cerr << "onnxkit serve: " << error << "\n";
  if (!errors.empty() && args.repository.empty()) return kExitFailure;

  serve::InferenceServer server(repository, cache.get(), args.server);
  server.listen();
  std::cout << "onnxkit serve: listening on http://" << args.server.host << ":" << server.port()
            << std::endl;
  server.run();
  std::cout << "onnxkit serve: stopped" << std::endl;
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& root) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* command = root.add_subcommand(
      "serve", "Serve models over the Open Inference Protocol (KServe v2 REST)");
  command->add_option("models", args->models, "Model files, each served as its file name's stem");
  command->add_option("--model-repository", args->repository,
                      "A folder of NAME/VERSION/model.onnx (optional NAME/config.json)");
  command->add_option("--host", args->host, "Address to listen on")->capture_default_str();
  command->add_option("--port", args->port, "Port (0: any free one); default $PORT, else 8000");
  command->add_option("--threads", args->config.threads,
                      "Threads per model run (0: every core available)");
  command->add_option("--level", args->config.level, "Optimization level")->capture_default_str();
  // main() applies it (libgomp reads its wait policy before main); parsed here for --help
  // and to reject an unknown value.
  command
      ->add_option("--spin", args->spin,
                   "Idle intra-op threads: on (spin), off (sleep at once) or default (spin "
                   "briefly, then sleep); off suits a machine whose cores other work shares")
      ->check(CLI::IsMember({"default", "on", "off"}))
      ->capture_default_str();
  command->add_option("--custom-op-lib", args->config.custom_op_libraries,
                      "A custom op library (include/onnxkit/custom_op.h) the models' sessions "
                      "load; repeatable");
  command
      ->add_option("--max-batch-size", args->config.max_batch_size,
                   "Merge requests up to this batch size (0: no batching)")
      ->capture_default_str();
  command
      ->add_option("--max-queue-delay-us", args->config.max_queue_delay_us,
                   "How long a request may wait for its batch to fill")
      ->capture_default_str();
  command
      ->add_option("--max-queue-size", args->config.max_queue_size,
                   "Requests queued per model at most; more are answered 503")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--instances", args->config.instances,
                   "Runs of one model that may execute at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_flag("--warmup", args->config.warmup,
                    "Run each model when it loads, at each batch size its batches can have "
                    "(up to 16 sizes; beyond, the powers of two, preferred sizes and the max)");
  command->add_flag("--pad-batches,!--no-pad-batches", args->config.pad_batches,
                    "Pad merged batches with zero rows to a power of two or --max-batch-size "
                    "(fewer shapes to warm up; padded rows cost compute on every batch)");
  command->add_option(
      "--cache", args->cache,
      "Response cache: local:SIZE (e.g. local:256MiB) or redis://HOST:PORT[?ttl=S]");
  command->add_option("--auth-token-file", args->auth_token_file,
                      "Require 'Authorization: Bearer TOKEN' (the file's first line) except on "
                      "/v2/health");
  command->add_flag("--allow-shared-memory", args->server.allow_shared_memory,
                    "Take tensors in clients' system shared memory (Triton's extension; the "
                    "server then reads and writes /dev/shm objects clients name)");
  command->add_option("--io-threads", args->server.io_threads, "Threads doing network I/O")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--handler-threads", args->server.handler_threads,
                   "Threads parsing requests and encoding responses")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--max-header-bytes", args->server.max_header_bytes,
                   "Larger request headers are answered 431")
      ->capture_default_str();
  command
      ->add_option("--max-body-bytes", args->server.max_body_bytes,
                   "Larger request bodies (gzip/deflate ones once inflated) are answered 413")
      ->capture_default_str();
  command
      ->add_option("--max-connections", args->server.max_connections,
                   "Past this many open connections a request is answered 503 (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--max-tensor-elements", args->server.limits.max_tensor_elements,
                   "Larger input tensors are answered 400")
      ->capture_default_str();
  command
      ->add_option("--read-timeout-ms", args->read_timeout_ms,
                   "A request must arrive within this long; also the keep-alive idle limit")
      ->capture_default_str();
  command
      ->add_option("--drain-timeout-ms", args->drain_timeout_ms,
                   "After SIGTERM, how long in-flight requests may take")
      ->capture_default_str();
  return {command, [args] { return serve_models(*args); }};
}

}  // namespace onnxkit::cli
