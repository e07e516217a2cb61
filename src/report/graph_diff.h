// Which nodes a rewrite removed, added, fused or changed: nodes of the graph before and after
// are matched by name and by the names of their outputs (a fusion keeps the first node's
// name and the last node's outputs, so both of its sources match the fused node).
#pragma once

#include <cstddef>
#include <unordered_map>

#include "ir/graph.h"
#include "report/graph_svg.h"

namespace onnxkit::report {

struct GraphDiff {
  std::unordered_map<const Node*, NodeMark> before;  // marks on the graph before
  std::unordered_map<const Node*, NodeMark> after;   // marks on the graph after
  size_t removed = 0;                                // before-only nodes
  size_t added = 0;                                  // after-only nodes
  size_t fused = 0;                                  // after nodes that several before nodes became
  size_t changed = 0;  // after nodes that kept a before node's name or outputs, not its op
};

// Compares the two graphs and their subgraphs.
GraphDiff diff_graphs(const Graph& before, const Graph& after);

}  // namespace onnxkit::report
