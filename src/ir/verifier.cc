#include "ir/verifier.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/resource_limits.h"
#include "ir/domain.h"
#include "ir/model.h"

namespace onnxkit {
namespace {

bool is_defined(const Value* value) {
  const Graph* graph = value->graph();
  if (value->producer() || value->has_initializer() || graph->is_input(value)) return true;
  const auto& sparse = graph->sparse_initializers();
  return std::any_of(sparse.begin(), sparse.end(),
                     [&](const auto& entry) { return entry.first == value; });
}

std::string graph_label(const Graph& graph) {
  return graph.name().empty() ? std::string("<unnamed graph>") : "graph '" + graph.name() + "'";
}

// Whether a value's use list holds (node, input): a scan of the list, or a lookup in a set built
// once per value for a value read many times (one node reading it 100,000 times made the scans
// quadratic).
class UseLookup {
 public:
  bool contains(const Value* value, const Node* node, size_t input) {
    const auto& uses = value->uses();
    const Use use{const_cast<Node*>(node), input};
    if (uses.size() < kScanUpTo) return std::find(uses.begin(), uses.end(), use) != uses.end();
    auto [entry, added] = sets_.try_emplace(value);
    if (added) {
      for (const Use& u : uses) entry->second.emplace(u.node, u.input);
    }
    return entry->second.contains({use.node, use.input});
  }

 private:
  static constexpr size_t kScanUpTo = 32;
  std::unordered_map<const Value*, std::set<std::pair<const Node*, size_t>>> sets_;
};

void check_value_visible(const Graph& graph, const Node* node, size_t index, const Value* value,
                         UseLookup& lookup) {
  if (!graph.is_within(value->graph())) {
    fail("{}: {} input {} '{}' belongs to a graph that does not enclose it", graph_label(graph),
         node->describe(), index, value->name());
  }
  if (!is_defined(value)) {
    fail("{}: {} input {} '{}' is not produced by any node, graph input or initializer",
         graph_label(graph), node->describe(), index, value->name());
  }
  if (!lookup.contains(value, node, index)) {
    fail("{}: use list of '{}' misses {} input {}", graph_label(graph), value->name(),
         node->describe(), index);
  }
}

void verify_recursive(const Graph& graph) {
  UseLookup lookup;
  for (const Node* node : graph.nodes()) {
    if (node->graph() != &graph)
      fail("{}: {} has a wrong owner", graph_label(graph), node->describe());
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      if (const Value* value = node->inputs()[i]) {
        check_value_visible(graph, node, i, value, lookup);
      }
    }
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      const Value* value = node->outputs()[i];
      if (!value) continue;
      if (value->graph() != &graph || value->producer() != node || value->producer_output() != i) {
        fail("{}: {} output {} '{}' has an inconsistent producer link", graph_label(graph),
             node->describe(), i, value->name());
      }
      if (graph.parent() && graph.parent()->lookup(value->name())) {
        fail("{}: {} output '{}' shadows a value of an enclosing graph", graph_label(graph),
             node->describe(), value->name());
      }
    }
    for (const Graph* sub : node->subgraphs()) {
      if (sub->parent() != &graph) {
        fail("{}: subgraph of {} has a wrong parent", graph_label(graph), node->describe());
      }
      verify_recursive(*sub);
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const Value* output = graph.outputs()[i];
    if (!output) fail("{}: output {} is empty", graph_label(graph), i);
    if (!graph.is_within(output->graph()) || !is_defined(output)) {
      fail("{}: output '{}' is not produced by any node, graph input or initializer",
           graph_label(graph), output->name());
    }
    // An output naming a value of an enclosing graph is a use of it (graph.h).
    const bool listed = lookup.contains(output, graph.return_node(), i);
    if (listed != (output->graph() != &graph)) {
      fail("{}: use list of '{}' {} output {}", graph_label(graph), output->name(),
           listed ? "wrongly lists" : "misses", i);
    }
  }
  for (const Value* value : graph.inputs()) {
    if (value->producer()) {
      fail("{}: input '{}' is also computed by {}", graph_label(graph), value->name(),
           value->producer()->describe());
    }
  }
  // Every use recorded on our values must point back at a node input (or a subgraph's
  // output: an input of its return node) that reads it.
  auto check_uses = [&](const Value* value) {
    if (!value) return;
    for (const Use& use : value->uses()) {
      if (use.node->input(use.input) != value) {
        fail("{}: '{}' lists a stale use by {}", graph_label(graph), value->name(),
             use.node->describe());
      }
    }
  };
  for (const Value* value : graph.inputs()) check_uses(value);
  for (const Value* value : graph.initializers()) check_uses(value);
  for (const Node* node : graph.nodes()) {
    for (const Value* value : node->outputs()) check_uses(value);
  }
  graph.topological_order();  // throws on a cycle, naming a node on it
}

// Model-local functions must not call themselves, directly or through others (inlining would
// never end, and libonnx's inference of a call recurses until the stack overflows), nor nest
// calls deeper than kMaxFunctionCallDepth. A depth-first walk of the call graph with its own
// stack: a file may chain thousands of functions.
void check_functions_not_recursive(const Model& model) {
  const auto key = [](std::string_view domain, std::string_view name) {
    return std::string(canonical_domain(domain)) + "." + std::string(name);
  };
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < model.functions.size(); ++i) {
    const Function& function = model.functions[i];
    index_of[key(function.domain, function.name)] = i;
  }
  std::vector<std::vector<size_t>> callees(model.functions.size());
  for (size_t i = 0; i < model.functions.size(); ++i) {
    for_each_node_recursive(*model.functions[i].body, [&](const Node* node) {
      auto callee = index_of.find(key(node->domain(), node->op_type()));
      if (callee != index_of.end()) callees[i].push_back(callee->second);
    });
  }
  enum class Mark { kNew, kOnPath, kDone };
  std::vector<Mark> marks(model.functions.size(), Mark::kNew);
  std::vector<int> depth(model.functions.size(), 1);  // the longest chain of calls from each
  std::vector<std::pair<size_t, size_t>> path;        // (function, next callee to visit)
  for (size_t root = 0; root < model.functions.size(); ++root) {
    if (marks[root] != Mark::kNew) continue;
    marks[root] = Mark::kOnPath;
    path.emplace_back(root, 0);
    while (!path.empty()) {
      auto& [function, next] = path.back();
      if (next == callees[function].size()) {
        for (size_t callee : callees[function]) {
          depth[function] = std::max(depth[function], depth[callee] + 1);
        }
        if (depth[function] > kMaxFunctionCallDepth) {
          fail("function '{}' starts a chain of {} nested function calls, more than {}",
               model.functions[function].name, depth[function], kMaxFunctionCallDepth);
        }
        marks[function] = Mark::kDone;
        path.pop_back();
        continue;
      }
      const size_t callee = callees[function][next++];
      if (marks[callee] == Mark::kOnPath) {
        std::string cycle;
        for (auto at = std::find_if(path.begin(), path.end(),
                                    [&](const auto& entry) { return entry.first == callee; });
             at != path.end(); ++at) {
          cycle += model.functions[at->first].name + " -> ";
        }
        fail("function '{}' calls itself ({}{}): functions cannot be recursive",
             model.functions[callee].name, cycle, model.functions[callee].name);
      }
      if (marks[callee] == Mark::kNew) {
        marks[callee] = Mark::kOnPath;
        path.emplace_back(callee, 0);
      }
    }
  }
}

}  // namespace

Status verify_graph(const Graph& graph) {
  return capture([&] { verify_recursive(graph); });
}

Status verify_model(const Model& model) {
  return capture([&] {
    verify_recursive(model.graph());
    for (const Function& function : model.functions) {
      Status status = verify_graph(*function.body);
      if (!status.ok()) fail("function '{}': {}", function.name, status.message());
    }
    check_functions_not_recursive(model);
  });
}

}  // namespace onnxkit
