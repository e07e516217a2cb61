#include "onnxkit/model_io.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "core/buffer.h"
#include "ir/verifier.h"
#include "onnx/external_data.h"
#include "onnx/onnx_checks.h"
#include "onnx/proto_convert.h"
#include "onnx/wire_split.h"

namespace onnxkit {

namespace fs = std::filesystem;
using onnx_io::ReadContext;
using onnx_io::WriteContext;

namespace {

// A single protobuf message cannot exceed 2 GiB; leave room for the graph itself.
constexpr uint64_t kInlineLimitBytes = (uint64_t{2} << 30) - (uint64_t{64} << 20);

bool parse_proto(const void* data, size_t size, onnx::ModelProto& proto) {
  if (size > static_cast<size_t>(INT_MAX)) return false;
  google::protobuf::io::ArrayInputStream stream(data, static_cast<int>(size));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(1024);  // deeply nested subgraphs are legal
  return proto.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

void check_is_model(const onnx::ModelProto& proto, const std::string& label) {
  if (!proto.has_graph() || proto.ir_version() <= 0) {
    fail("{}: not an ONNX model ({})", label, !proto.has_graph() ? "no graph" : "no IR version");
  }
}

Model load_checked(const fs::path& path, const LoadOptions& options) {
  const std::string label = path.string();
  std::error_code error;
  if (!fs::exists(path, error)) fail("{}: no such file", label);
  if (fs::is_directory(path, error)) fail("{}: is a directory, not an .onnx file", label);
  auto file = FileMapping::open(path);
  if (file->size() == 0) fail("{}: file is empty", label);

  onnx_io::SplitModel split;
  try {
    split = onnx_io::split_model_bytes({file->data(), file->size()}, options.map_threshold_bytes);
  } catch (const Error& e) {
    fail("{}: not a valid ONNX file (truncated or corrupt protobuf: {})", label, e.what());
  }
  onnx::ModelProto proto;
  if (!parse_proto(split.stripped.data(), split.stripped.size(), proto)) {
    fail("{}: not a valid ONNX file (protobuf parse failed: truncated or corrupt)", label);
  }
  split.stripped.clear();
  split.stripped.shrink_to_fit();
  check_is_model(proto, label);

  ReadContext context;
  context.model_dir = fs::absolute(path).parent_path();
  onnx_io::ExternalDataFiles external(context.model_dir);
  context.external_files = &external;
  for (const auto& payload : split.payloads) {
    context.initializer_payloads[payload.initializer_index] =
        Buffer::view(file, payload.offset, payload.length);
  }
  Model model;
  try {
    model = onnx_io::model_from_proto(proto, context);
  } catch (const Error& e) {
    fail("{}: {}", label, e.what());
  }
  model.source_path = path;
  if (options.verify) {
    Status status = verify_model(model);
    if (status.ok()) status = check_node_schemas(model);
    if (!status.ok()) fail("{}: {}", label, status.message());
  }
  return model;
}

// Calls `visit(tensor, name)` with every tensor `graph` holds and the name of what holds it:
// initializers, sparse initializers' values and indices, tensor attributes (named after
// their node), and those of its subgraphs.
template <typename Visit>
void for_each_tensor(const Graph& graph, const Visit& visit) {
  for (const Value* value : graph.initializers()) visit(value->initializer(), value->name());
  for (const auto& [value, sparse] : graph.sparse_initializers()) {
    visit(sparse.values, value->name());
    visit(sparse.indices, value->name());
  }
  for (const Node* node : graph.nodes()) {
    for (const Attribute& attribute : node->attributes()) {
      if (attribute.t.defined()) visit(attribute.t, node->name());
      for (const auto& t : attribute.tensors) visit(t, node->name());
      if (attribute.g) for_each_tensor(*attribute.g, visit);
      for (const auto& g : attribute.graphs) for_each_tensor(*g, visit);
    }
  }
}

template <typename Visit>
void for_each_tensor(const Model& model, const Visit& visit) {
  for_each_tensor(model.graph(), visit);
  for (const Function& function : model.functions) for_each_tensor(*function.body, visit);
}

// Saving `model` with its tensors in `data_path` must not replace a file that a model on disk
// reads: the file `model` was loaded from, or a data file one of its tensors views (that model
// would then read the new file's bytes as its weights). Saving the model over its own file
// replaces both together and is allowed.
void check_data_file_spares_sources(const Model& model, const fs::path& path,
                                    const fs::path& data_path) {
  const bool has_source = !model.source_path.empty();
  if (has_source && same_file(data_path, model.source_path)) {
    fail(
        "{}: refusing to write its external data over {}, the input model: choose another "
        "output path or data location",
        path.string(), data_path.string());
  }
  if (has_source && same_file(path, model.source_path)) return;
  for_each_tensor(model, [&](const Tensor& tensor, const std::string& name) {
    const FileRegion* region = tensor.file_region();
    if (region && same_file(data_path, region->file->path())) {
      fail(
          "{}: refusing to write its external data over {}: the input model reads its tensor "
          "'{}' from it; choose another output path or data location",
          path.string(), data_path.string(), name);
    }
  });
}

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

size_t varint_size(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

std::string serialize_deterministic(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// Writes `proto` (whose main-graph initializers lack their inline raw data) to `path`,
// streaming each initializer's bytes straight from `graph`'s tensors: no copy of the
// weights is made in memory. The graph's initializer fields come after its other fields,
// which protobuf parsers accept in any order.
void write_model_file(onnx::ModelProto& proto, const Graph& graph, const fs::path& path) {
  onnx::GraphProto graph_proto = std::move(*proto.mutable_graph());
  proto.clear_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  initializers.Swap(graph_proto.mutable_initializer());
  const std::string head = serialize_deterministic(proto);
  const std::string graph_head = serialize_deterministic(graph_proto);

  struct Entry {
    std::string header;  // the TensorProto without raw_data
    const Tensor* payload = nullptr;
    uint64_t size = 0;  // bytes of the whole TensorProto
  };
  std::vector<Entry> entries(static_cast<size_t>(initializers.size()));
  uint64_t graph_size = graph_head.size();
  for (int i = 0; i < initializers.size(); ++i) {
    Entry& entry = entries[static_cast<size_t>(i)];
    entry.header = serialize_deterministic(initializers.Get(i));
    const Tensor& tensor = graph.initializers()[static_cast<size_t>(i)]->initializer();
    const auto& tensor_proto = initializers.Get(i);
    entry.size = entry.header.size();
    if (tensor.dtype() != DType::kString && tensor.nbytes() > 0 &&
        tensor_proto.data_location() != onnx::TensorProto::EXTERNAL &&
        !tensor_proto.has_raw_data()) {
      entry.payload = &tensor;
      entry.size += 1 + varint_size(tensor.nbytes()) + tensor.nbytes();
    }
    graph_size += 1 + varint_size(entry.size) + entry.size;
  }
  if (head.size() + 1 + varint_size(graph_size) + graph_size > static_cast<uint64_t>(INT_MAX)) {
    fail("{}: the serialized model exceeds protobuf's 2 GiB limit; save with external data",
         path.string());
  }

  fs::path temp = path;
  temp += ".tmp-" + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) fail("{}: cannot create: {}", temp.string(), std::strerror(errno));
  try {
    uint64_t offset = 0;
    std::string pending = head;
    auto flush = [&] {
      onnx_io::write_all(fd, pending.data(), pending.size(), offset, temp);
      offset += pending.size();
      pending.clear();
    };
    pending.push_back(static_cast<char>((7 << 3) | 2));  // ModelProto.graph
    append_varint(pending, graph_size);
    pending += graph_head;
    for (const Entry& entry : entries) {
      pending.push_back(static_cast<char>((5 << 3) | 2));  // GraphProto.initializer
      append_varint(pending, entry.size);
      pending += entry.header;
      if (entry.payload) {
        pending.push_back(static_cast<char>((9 << 3) | 2));  // TensorProto.raw_data
        append_varint(pending, entry.payload->nbytes());
        flush();
        // A weight still in the mapped input file is copied file to file: no page of it
        // faults into this process (4 KiB at a time where a just-written file sits in large
        // page-cache folios), and none stays resident.
        onnx_io::write_tensor_data(fd, *entry.payload, offset, temp);
        offset += entry.payload->nbytes();
      } else if (pending.size() > (1u << 20)) {
        flush();
      }
    }
    flush();
    // A copied weight that ends in a hole of a sparse input leaves the file short of it.
    if (::ftruncate(fd, static_cast<off_t>(offset)) != 0) {
      fail("{}: cannot set its size: {}", temp.string(), std::strerror(errno));
    }
    if (::close(fd) != 0) fail("{}: close failed: {}", temp.string(), std::strerror(errno));
    fd = -1;
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  std::error_code error;
  fs::rename(temp, path, error);
  if (error) {
    ::unlink(temp.c_str());
    fail("{}: cannot rename into place: {}", path.string(), error.message());
  }
}

// The folder of `path` and the data file's name in it where save_model puts external data.
std::pair<fs::path, std::string> external_data_location(const fs::path& path,
                                                        const SaveOptions& options) {
  std::string location = options.external_location.empty() ? path.filename().string() + ".data"
                                                           : options.external_location;
  fs::path normal = fs::path(location).lexically_normal();
  if (normal.is_absolute() || normal.empty() || *normal.begin() == "..") {
    fail("{}: external data location '{}' must be a file inside the model's folder", path.string(),
         location);
  }
  return {fs::absolute(path).parent_path(), location};
}

}  // namespace

Status check_save_path(const Model& model, const fs::path& path, const SaveOptions& options) {
  return capture([&] {
    if (options.external_data == ExternalDataMode::kNever) return;
    const auto [dir, location] = external_data_location(path, options);
    check_data_file_spares_sources(model, path, dir / location);
  });
}

uint64_t model_tensor_bytes(const Model& model) {
  uint64_t total = 0;
  for_each_tensor(model,
                  [&](const Tensor& tensor, const std::string&) { total += tensor.nbytes(); });
  return total;
}

Result<Model> load_model(const fs::path& path, const LoadOptions& options) {
  return capture([&] { return load_checked(path, options); });
}

Status save_model(const Model& model, const fs::path& path, const SaveOptions& options) {
  return capture([&] {
    const uint64_t tensor_bytes = model_tensor_bytes(model);
    bool external =
        options.external_data == ExternalDataMode::kAlways ||
        (options.external_data == ExternalDataMode::kAuto && tensor_bytes > kInlineLimitBytes);
    if (!external && tensor_bytes > kInlineLimitBytes) {
      fail(
          "{}: the model holds {:.2f} GiB of tensors, more than one protobuf file can hold "
          "(2 GiB); save it with external data",
          path.string(), static_cast<double>(tensor_bytes) / (1 << 30));
    }
    std::unique_ptr<onnx_io::ExternalDataWriter> writer;
    WriteContext context;
    if (external) {
      const auto [dir, location] = external_data_location(path, options);
      check_data_file_spares_sources(model, path, dir / location);
      writer = std::make_unique<onnx_io::ExternalDataWriter>(dir, location);
      context.external = writer.get();
      context.external_threshold = options.external_threshold_bytes;
    }
    onnx::ModelProto proto;
    context.stream_payloads_of = &model.graph();
    onnx_io::model_to_proto(model, proto, context);
    if (writer) writer->commit();
    write_model_file(proto, model.graph(), path);
  });
}

Result<std::string> serialize_model(const Model& model) {
  return capture([&] {
    onnx::ModelProto proto;
    WriteContext context;
    onnx_io::model_to_proto(model, proto, context);
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      if (!proto.SerializeToCodedStream(&coded)) fail("serializing the model failed");
    }
    return bytes;
  });
}

Result<Model> parse_model(const std::string& bytes) {
  return capture([&] {
    onnx::ModelProto proto;
    if (!parse_proto(bytes.data(), bytes.size(), proto)) {
      fail("<memory>: not a valid ONNX model (protobuf parse failed)");
    }
    check_is_model(proto, "<memory>");
    ReadContext context;
    Model model = onnx_io::model_from_proto(proto, context);
    Status status = verify_model(model);
    if (status.ok()) status = check_node_schemas(model);
    if (!status.ok()) fail("<memory>: {}", status.message());
    return model;
  });
}

}  // namespace onnxkit
