// Pass remove_unused_initializers: initializers nothing reads are removed.
//
// Unread means: it has no uses (Value::uses() covers nodes of nested subgraphs and nested
// subgraphs that return it), it is not a graph output and not named in keep_values.
// Graph inputs are never removed, with or without an initializer: they are the interface.
// Unread sparse initializers go too.
#include <unordered_set>

#include "passes/passes.h"

namespace onnxkit {
namespace {

class RemoveUnusedInitializersPass : public GraphPass {
 public:
  std::string_view name() const override { return "remove_unused_initializers"; }

  size_t run(Graph& graph, PassContext& context) override {
    auto unread = [&](const Value* value) {
      return value->uses().empty() && !value->producer() && !graph.is_input(value) &&
             !graph.is_output(value) && !context.keep_values.count(value->name());
    };
    std::vector<Value*> doomed;
    for (Value* value : graph.initializers()) {
      if (unread(value)) doomed.push_back(value);
    }
    for (const auto& [value, sparse] : graph.sparse_initializers()) {
      if (unread(value)) doomed.push_back(value);
    }
    std::unordered_set<Value*> removed;
    for (Value* value : doomed) {
      if (removed.insert(value).second) graph.remove_value(value);
    }
    return removed.size();
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_remove_unused_initializers_pass() {
  return std::make_unique<RemoveUnusedInitializersPass>();
}

}  // namespace onnxkit
