// A model's graph as an SVG picture, laid out by Graphviz's dot (linked as a library): one box
// per node (op type and name, initializer inputs folded into the box), one ellipse per graph
// input and output, an edge per value read (dtype and shape, symbolic dims by name), and each
// subgraph of If / Loop / Scan as a cluster. Elements carry CSS classes (`node`, `edge`,
// `io`, and a node's mark) and ids, for the report page's styles and script.
#pragma once

#include <map>
#include <string>
#include <unordered_map>

#include "core/status.h"
#include "ir/graph.h"

namespace onnxkit::report {

// How a node differs from the other side of a before/after comparison.
enum class NodeMark {
  kSame,
  kRemoved,  // before only: gone from the result
  kAdded,    // after only: a node that has no counterpart before
  kFused,    // several nodes before that became one after (marked on both sides)
  kChanged,  // the same node (by name or outputs) with another op type
};

// The CSS class of a mark ("" for kSame).
const char* mark_class(NodeMark mark);

struct GraphSvgOptions {
  // Prefix of every element id, so two pictures can share a page ("b" and "a").
  std::string id_prefix = "g";
  // Nodes without an entry are kSame.
  const std::unordered_map<const Node*, NodeMark>* marks = nullptr;
  // Graphs above this many nodes get dot's cheaper settings (see graph_svg.cc).
  size_t large_graph_nodes = 200;
  // Larger graphs are refused: dot's layout time grows faster than linearly (BERT-base's
  // 1,136 drawn nodes take about 2 s of CPU), and a page of more would not render quickly.
  size_t max_nodes = 5000;
};

struct GraphSvg {
  std::string svg;   // one <svg> element, without XML prolog or doctype
  size_t nodes = 0;  // op nodes drawn, subgraphs included
  size_t edges = 0;
  std::map<NodeMark, size_t> marked;  // drawn nodes per mark other than kSame
  double layout_seconds = 0;
  double render_seconds = 0;
};

// Lays out and draws `graph` (and its subgraphs). Fails when it has more than
// `options.max_nodes` nodes to draw, or when Graphviz fails.
Result<GraphSvg> render_graph_svg(const Graph& graph, const GraphSvgOptions& options = {});

// "float[batch,3,224,224]" for a tensor, the type's text otherwise.
std::string edge_label(const Value& value);

}  // namespace onnxkit::report
