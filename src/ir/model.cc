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
  return onnxkit::opset_version(opset_imports, domain);
}

int64_t opset_version(const std::vector<OpsetImport>& opsets, std::string_view domain) {
  for (const OpsetImport& opset : opsets) {
    if (canonical_domain(opset.domain) == canonical_domain(domain)) return opset.version;
  }
  return -1;
}

}  // namespace onnxkit
