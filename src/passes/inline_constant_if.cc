// Pass inline_constant_if: an If whose condition is a constant is replaced by the nodes of
// the branch it would take. Branch values are renamed where their names are taken in the
// enclosing graph (or would shadow a name of one of its subgraphs); values the branch reads
// from outer scopes stay wired; the If's graph outputs keep their names.
#include <set>
#include <string>
#include <unordered_map>

#include "ir/graph_clone.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// Every value name defined in `graph` and the subgraphs below it, except under `skip`.
void collect_names(const Graph& graph, const Node* skip, std::set<std::string>& names) {
  for (const Value* value : graph.inputs()) names.insert(value->name());
  for (const Value* value : graph.initializers()) names.insert(value->name());
  for (const Node* node : graph.nodes()) {
    for (const Value* output : node->outputs()) {
      if (output) names.insert(output->name());
    }
    if (node == skip) continue;
    for (const Graph* sub : node->subgraphs()) collect_names(*sub, skip, names);
  }
}

// Names for values moved into `graph`: the old name where it is free, else name_1, name_2...
// The same old name always gets the same new name (node names share the mapping, so a node
// and the value it produces stay alike; sibling subgraphs may reuse a name legally).
class Renamer {
 public:
  Renamer(const Graph& graph, const Node& replaced) : graph_(graph) {
    collect_names(graph, &replaced, taken_);
  }

  std::string operator()(const std::string& name) {
    auto it = renamed_.find(name);
    if (it != renamed_.end()) return it->second;
    std::string candidate = fresh(name);
    renamed_.emplace(name, candidate);
    return candidate;
  }

  // A name used nowhere yet.
  std::string fresh(const std::string& base) {
    std::string candidate = base;
    for (size_t suffix = 1; graph_.lookup(candidate) || taken_.count(candidate); ++suffix) {
      candidate = base + "_" + std::to_string(suffix);
    }
    taken_.insert(candidate);
    return candidate;
  }

 private:
  const Graph& graph_;
  std::set<std::string> taken_;
  std::unordered_map<std::string, std::string> renamed_;
};

// The branch an If with a constant condition takes, or nullptr when not sure.
Graph* chosen_branch(const Node& node, const PassContext& context) {
  if (!is_onnx_op(&node, "If") || node.inputs().size() != 1) return nullptr;
  const Tensor* condition = constant_value(node.input(0), context);
  if (!condition || condition->dtype() != DType::kBool || condition->numel() != 1) {
    return nullptr;
  }
  const bool taken = condition->data<bool>()[0];
  const Attribute* branch = node.find_attribute(taken ? "then_branch" : "else_branch");
  if (!branch || branch->type != AttrType::kGraph || !branch->g) return nullptr;
  Graph* graph = branch->g.get();
  // If branches take no inputs; sparse initializers would need their own move.
  if (!graph->inputs().empty() || !graph->sparse_initializers().empty()) return nullptr;
  if (graph->outputs().size() != node.outputs().size()) return nullptr;
  return graph;
}

void inline_branch(Graph& graph, Node& node, Graph& branch) {
  Renamer renamer(graph, node);
  std::unordered_map<const Value*, Value*> value_map;
  CloneOptions options;
  options.value_map = &value_map;
  options.rename = [&renamer](const std::string& name) { return renamer(name); };
  for (Value* value : branch.initializers()) {
    Value* copy = graph.add_initializer(renamer(value->name()), value->initializer());
    copy->set_type(value->type());
    copy->set_doc_string(value->doc_string());
    value_map[value] = copy;
  }
  clone_nodes_into(branch, graph, &node, options);

  for (size_t i = 0; i < node.outputs().size(); ++i) {
    Value* output = node.output(i);
    if (!output) continue;
    Value* source = branch.outputs()[i];
    auto it = value_map.find(source);
    // Not cloned: a value of an enclosing scope, read as it is.
    Value* result = it == value_map.end() ? source : it->second;
    if (!can_replace(output, result)) {
      // A graph output cannot take over an outer value's name (or a second output's):
      // an Identity carries it.
      Node* identity = graph.add_node("Identity", {result},
                                      {renamer.fresh(output->name() + "__if")}, "", "", &node);
      identity->output(0)->set_type(output->type());
      result = identity->output(0);
    }
    replace_value(graph, output, result);
  }
  graph.remove_node(&node);
}

size_t inline_constant_if(Graph& graph, Node* node, PassContext& context) {
  Graph* branch = chosen_branch(*node, context);
  if (!branch) return 0;
  inline_branch(graph, *node, *branch);
  return 1;
}

}  // namespace

std::unique_ptr<GraphPass> make_inline_constant_if_pass() {
  return make_rule_pass("inline_constant_if", {"If"}, inline_constant_if);
}

}  // namespace onnxkit
