#include "report/graph_diff.h"

#include <set>
#include <string>
#include <vector>

namespace onnxkit::report {
namespace {

void collect_nodes(const Graph& graph, std::vector<const Node*>& out) {
  for (const Node* node : graph.nodes()) {
    out.push_back(node);
    for (const Graph* body : node->subgraphs()) collect_nodes(*body, out);
  }
}

std::vector<const Value*> weights(const Node& node) {
  std::vector<const Value*> out;
  for (const Value* input : node.inputs()) {
    if (input && input->has_initializer()) out.push_back(input);
  }
  return out;
}

// A node gone from the result whose work went into its producer: the producer is still
// there (one counterpart) but with other weights, and every reader of the gone node's output
// now reads the producer's output (Conv + BatchNormalization -> Conv with folded weights).
// An eliminated Identity leaves its producer's weights as they were, so it stays "removed".
const Node* absorbed_into(
    const Node& gone, const std::unordered_map<const Node*, std::set<const Node*>>& counterparts) {
  const Node* producer = nullptr;
  for (const Value* input : gone.inputs()) {
    if (input == nullptr || input->has_initializer()) continue;
    if (producer != nullptr || input->producer() == nullptr) return nullptr;
    producer = input->producer();
  }
  if (producer == nullptr) return nullptr;
  auto found = counterparts.find(producer);
  if (found == counterparts.end() || found->second.size() != 1) return nullptr;
  const Node* result = *found->second.begin();
  auto names = [](const std::vector<const Value*>& values) {
    std::vector<std::string> out;
    for (const Value* v : values) out.push_back(v->name());
    return out;
  };
  if (names(weights(*producer)) == names(weights(*result))) return nullptr;
  for (const Value* output : gone.outputs()) {
    if (output == nullptr) continue;
    for (const Use& use : output->uses()) {
      auto reader = counterparts.find(use.node);
      if (reader == counterparts.end() || reader->second.size() != 1) return nullptr;
      const Node* new_reader = *reader->second.begin();
      bool reads_result = false;
      for (const Value* input : new_reader->inputs()) {
        reads_result = reads_result || (input && input->producer() == result);
      }
      if (!reads_result) return nullptr;
    }
  }
  return producer;
}

}  // namespace

GraphDiff diff_graphs(const Graph& before, const Graph& after) {
  std::vector<const Node*> old_nodes, new_nodes;
  collect_nodes(before, old_nodes);
  collect_nodes(after, new_nodes);

  std::unordered_map<std::string, const Node*> by_name, by_output;
  for (const Node* node : new_nodes) {
    if (!node->name().empty()) by_name.emplace(node->name(), node);
    for (const Value* output : node->outputs()) {
      if (output) by_output.emplace(output->name(), node);
    }
  }
  // Each new node's sources, and each old node's counterparts.
  std::unordered_map<const Node*, std::vector<const Node*>> sources;
  std::unordered_map<const Node*, std::set<const Node*>> counterparts;
  for (const Node* node : old_nodes) {
    std::set<const Node*>& found = counterparts[node];
    if (!node->name().empty()) {
      if (auto it = by_name.find(node->name()); it != by_name.end()) found.insert(it->second);
    }
    for (const Value* output : node->outputs()) {
      if (!output) continue;
      if (auto it = by_output.find(output->name()); it != by_output.end()) found.insert(it->second);
    }
    for (const Node* match : found) sources[match].push_back(node);
  }

  GraphDiff diff;
  for (const Node* node : new_nodes) {
    auto it = sources.find(node);
    if (it == sources.end()) {
      diff.after[node] = NodeMark::kAdded;
      ++diff.added;
    } else if (it->second.size() > 1) {
      diff.after[node] = NodeMark::kFused;
      ++diff.fused;
      for (const Node* source : it->second) diff.before[source] = NodeMark::kFused;
    } else if (it->second[0]->op_type() != node->op_type() ||
               it->second[0]->domain() != node->domain()) {
      diff.after[node] = NodeMark::kChanged;
      ++diff.changed;
      if (!diff.before.count(it->second[0])) diff.before[it->second[0]] = NodeMark::kChanged;
    }
  }
  for (const Node* node : old_nodes) {
    if (!counterparts[node].empty()) continue;
    if (const Node* into = absorbed_into(*node, counterparts)) {
      diff.before[node] = NodeMark::kFused;
      diff.before[into] = NodeMark::kFused;
      const Node* result = *counterparts[into].begin();
      if (diff.after[result] != NodeMark::kFused) {
        if (diff.after[result] == NodeMark::kChanged) --diff.changed;
        diff.after[result] = NodeMark::kFused;
        ++diff.fused;
      }
      continue;
    }
    diff.before[node] = NodeMark::kRemoved;
    ++diff.removed;
  }
  for (auto it = diff.after.begin(); it != diff.after.end();) {
    it = it->second == NodeMark::kSame ? diff.after.erase(it) : std::next(it);
  }
  return diff;
}

}  // namespace onnxkit::report
