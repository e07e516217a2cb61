#include "passes/inline_functions.h"

#include <unordered_map>

#include "core/resource_limits.h"
#include "ir/graph_clone.h"
#include "onnx/schema_functions.h"

namespace onnxkit {
namespace {

// Nested calls can expand into more calls, a round per level of nesting (load refuses deeper
// chains of model-local functions, and recursive ones).
constexpr int kMaxRounds = kMaxFunctionCallDepth;

// Replaces `call` in its graph by the nodes of `function`.
void inline_call(Node* call, const Function& function, size_t call_index) {
  Graph& graph = *call->graph();
  const Graph& body = *function.body;
  if (call->inputs().size() > body.inputs().size() ||
      call->outputs().size() > body.outputs().size()) {
    fail("{}: has {} inputs / {} outputs, function '{}' takes {} / {}", call->describe(),
         call->inputs().size(), call->outputs().size(), function.name, body.inputs().size(),
         body.outputs().size());
  }
  std::unordered_map<const Value*, Value*> map;
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    map[body.inputs()[i]] = call->input(i);  // nullptr: an omitted optional input
  }
  const std::string prefix = (call->name().empty() ? function.name : call->name()) + "__" +
                             std::to_string(call_index) + "__";
  CloneOptions options;
  options.value_map = &map;
  options.rename = [&](const std::string& name) { return graph.unique_name(prefix + name); };
  options.resolve_reference = [&](const std::string& ref) { return call->find_attribute(ref); };
  clone_nodes_into(body, graph, call, options);

  // Rewire the call's outputs to the body's, keeping the call's output names.
  std::vector<std::pair<Value*, std::string>> renames;
  for (size_t i = 0; i < call->outputs().size(); ++i) {
    Value* old_output = call->output(i);
    if (!old_output) continue;
    Value* formal = body.outputs()[i];
    auto found = map.find(formal);
    Value* produced = found == map.end() ? formal : found->second;
    if (!produced)
      fail("{}: output {} of function '{}' is an input the call omits", call->describe(), i,
           function.name);
    if (!(formal->graph() == &body && formal->producer())) {
      // The body returns an input (or nothing it computes): materialize a copy.
      Node* identity =
          graph.add_node("Identity", {produced}, {graph.unique_name(prefix + "out")}, "", "", call);
      produced = identity->output(0);
    }
    produced->set_type(old_output->type());
    graph.replace_all_uses(old_output, produced);
    renames.emplace_back(produced, old_output->name());
  }
  graph.remove_node(call);
  for (auto& [value, name] : renames) graph.rename_value(value, name);
}

size_t inline_in_graph(Model& model, Graph& graph, const InlineOptions& options, size_t& counter) {
  size_t inlined = 0;
  for (Node* node : graph.nodes()) {
    for (Graph* sub : node->subgraphs()) inlined += inline_in_graph(model, *sub, options, counter);
    if (const Function* local = find_local_function(model, *node)) {
      inline_call(node, *local, counter++);
      ++inlined;
      continue;
    }
    if (!options.expand_schema_functions || !options.has_kernel || options.has_kernel(*node)) {
      continue;
    }
    const int64_t opset = model.opset_version(node->domain());
    if (opset < 0) continue;
    std::optional<Function> body = schema_function_body(*node, opset);
    if (!body) continue;
    inline_call(node, *body, counter++);
    ++inlined;
  }
  return inlined;
}

}  // namespace

const Function* find_local_function(const Model& model, const Node& node) {
  for (const Function& function : model.functions) {
    if (function.name == node.op_type() && function.domain == node.domain()) return &function;
  }
  return nullptr;
}

Result<size_t> inline_functions(Model& model, const InlineOptions& options) {
  return capture([&] {
    size_t total = 0;
    size_t counter = 0;
    for (int round = 0; round < kMaxRounds; ++round) {
      size_t inlined = inline_in_graph(model, model.graph(), options, counter);
      total += inlined;
      if (inlined == 0) return total;
    }
    fail("function calls still remain after {} rounds of inlining (a recursive function?)",
         kMaxRounds);
  });
}

}  // namespace onnxkit
