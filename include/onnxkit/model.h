// Model: an ONNX model in memory, as load_model gives it and save_model, simplify and
// Session::create take it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxkit {

// The graph IR and model-local functions (ir/graph.h, ir/model.h): onnxkit's own code
// works on them; an embedding program passes a Model around whole.
class Graph;
struct Function;

// An operator set the model imports.
struct OpsetImport {
  std::string domain;  // "" is ai.onnx
  int64_t version = 0;
  bool operator==(const OpsetImport&) const = default;
};

// A whole model: the main graph plus what a ModelProto carries around it. Move-only.
class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  // What the ModelProto says about itself.
  int64_t ir_version = 0;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  std::vector<Function> functions;  // model-local functions
  // TrainingInfoProto entries, kept as serialized bytes: onnxkit does not interpret them.
  std::vector<std::string> training_info;

  // The main graph.
  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  void replace_graph(std::unique_ptr<Graph> graph);

  // The version of `domain` this model imports ("" and "ai.onnx" are the same), or -1.
  int64_t opset_version(std::string_view domain) const;

  // Where the model was loaded from (empty for a model built in memory).
  std::filesystem::path source_path;

 private:
  std::unique_ptr<Graph> graph_;
};

}  // namespace onnxkit
