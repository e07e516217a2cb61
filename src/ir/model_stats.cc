#include "ir/model_stats.h"

namespace onnxkit {

ModelStats compute_model_stats(const Model& model) {
  ModelStats stats;
  const Graph& graph = model.graph();
  stats.nodes = graph.node_count();
  for_each_node_recursive(graph, [&](const Node* node) {
    ++stats.nodes_total;
    stats.subgraphs += node->subgraphs().size();
    std::string key =
        node->domain().empty() ? node->op_type() : node->domain() + "." + node->op_type();
    ++stats.op_histogram[key];
  });
  for (const Value* value : graph.initializers()) {
    const Tensor& tensor = value->initializer();
    ++stats.initializers;
    stats.parameters += static_cast<uint64_t>(tensor.numel());
    if (tensor.dtype() == DType::kString) {
      for (const auto& s : tensor.strings()) stats.initializer_bytes += s.size();
    } else {
      stats.initializer_bytes += tensor.nbytes();
    }
  }
  for (const auto& [value, sparse] : graph.sparse_initializers()) {
    ++stats.initializers;
    stats.parameters += static_cast<uint64_t>(sparse.values.numel());
    stats.initializer_bytes += sparse.values.nbytes() + sparse.indices.nbytes();
  }
  return stats;
}

}  // namespace onnxkit
