// A whole model: the main graph plus what a ModelProto carries around it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace onnxkit {

struct OpsetImport {
  std::string domain;  // "" is ai.onnx (ir/domain.h)
  int64_t version = 0;
  bool operator==(const OpsetImport&) const = default;
};

// The version of `domain` that `opsets` import ("" and "ai.onnx" are the same), or -1.
int64_t opset_version(const std::vector<OpsetImport>& opsets, std::string_view domain);

// A model-local function (FunctionProto). Its body is a Graph whose inputs and
// outputs are the function's formal parameters (untyped).
struct Function {
  std::string name;
  std::string domain;
  std::string doc_string;
  std::vector<std::string> attributes;  // names of the attributes it accepts
  std::vector<OpsetImport> opset_imports;
  std::unique_ptr<Graph> body;
};

class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::vector<Function> functions;
  // TrainingInfoProto entries, kept as serialized bytes: onnxkit does not interpret them.
  std::vector<std::string> training_info;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  void replace_graph(std::unique_ptr<Graph> graph) { graph_ = std::move(graph); }

  // The version of `domain` this model imports ("" and "ai.onnx" are the same), or -1.
  int64_t opset_version(std::string_view domain) const;

  // Where the model was loaded from (empty for a model built in memory).
  std::filesystem::path source_path;

 private:
  std::unique_ptr<Graph> graph_;
};

}  // namespace onnxkit
