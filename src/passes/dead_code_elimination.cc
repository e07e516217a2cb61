// Pass dead_code_elimination: nodes whose outputs nothing reads are removed.
//
// Liveness flows back from the roots, the graph's outputs and values named in keep_values:
// a live node makes live the producers of its inputs and of every value of this graph its
// subgraphs read or return. Everything else goes, nodes
// with subgraphs and nodes of any domain included: ONNX ops have no side effects.
#include <unordered_set>
#include <vector>

#include "passes/passes.h"

namespace onnxkit {
namespace {

class DeadCodeEliminationPass : public GraphPass {
 public:
  std::string_view name() const override { return "dead_code_elimination"; }

  size_t run(Graph& graph, PassContext& context) override {
    std::vector<const Value*> pending(graph.outputs().begin(), graph.outputs().end());
    for (const std::string& name : context.keep_values) {
      if (const Value* value = graph.find_value(name)) pending.push_back(value);
    }
    std::unordered_set<const Node*> live;
    while (!pending.empty()) {
      const Value* value = pending.back();
      pending.pop_back();
      if (!value || value->graph() != &graph) continue;
      const Node* producer = value->producer();
      if (!producer || !live.insert(producer).second) continue;
      for (const Value* input : producer->inputs()) pending.push_back(input);
      for (const Graph* sub : producer->subgraphs()) collect_captures(*sub, graph, pending);
    }
    if (live.size() == graph.node_count()) return 0;

    // Consumers before producers, so every removed node's outputs are unused by then.
    std::vector<Node*> order = graph.topological_order();
    size_t removed = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (live.count(*it)) continue;
      graph.remove_node(*it);
      ++removed;
    }
    return removed;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_dead_code_elimination_pass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

}  // namespace onnxkit
