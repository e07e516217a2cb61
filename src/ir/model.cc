#include "ir/model.h"

namespace onnxkit {

Model::Model() : graph_(std::make_unique<Graph>()) {}
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

void Model::replace_graph(std::unique_ptr<Graph> graph) {
  graph_ = std::move(graph);
}

int64_t Model::opset_version(std::string_view domain) const {
  auto canonical = [](std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; };
  for (const OpsetImport& opset : opset_imports) {
    if (canonical(opset.domain) == canonical(domain)) return opset.version;
  }
  return -1;
}

}  // namespace onnxkit
