#include "report/graph_svg.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <fmt/format.h>
#include <chrono>
#include <memory>
#include <set>
#include <unordered_map>

#include "ir/value_type.h"

namespace onnxkit::report {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// cgraph's API takes char* for names and values it does not modify.
char* c_str(const std::string& text) {
  return const_cast<char*>(text.c_str());
}
char* c_str(const char* text) {
  return const_cast<char*>(text);
}

// Graphviz's record of plain labels reads backslash escapes (\n, \N, \G, ...): a name's own
// backslashes must stay literal.
std::string label_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string shorten(std::string_view text, size_t limit = 48) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit / 2 - 1)) + "…" +
         std::string(text.substr(text.size() - (limit / 2 - 1)));
}

// Constant nodes are initializers written as nodes: folded into their readers' boxes like
// initializers (BERT's export has 397 of them, a quarter of its nodes).
bool is_folded_constant(const Node& node) {
  return node.domain().empty() && node.op_type() == "Constant" && node.inputs().empty();
}

// A weight-like input: an initializer or a Constant node's output.
bool is_weight(const Value* value) {
  return value->has_initializer() || (value->producer() && is_folded_constant(*value->producer()));
}

struct GvcDeleter {
  void operator()(GVC_t* gvc) const { gvFreeContext(gvc); }
};
struct GraphDeleter {
  void operator()(Agraph_t* graph) const { agclose(graph); }
};

// Builds the Graphviz graph of one IR graph (recursively for subgraphs).
class DotBuilder {
 public:
  DotBuilder(Agraph_t* root, const GraphSvgOptions& options, bool large)
      : root_(root), options_(options), large_(large) {}

  void add_graph(const Graph& graph, Agraph_t* into, std::string_view cluster_label) {
    for (const Value* input : graph.inputs()) {
      if (input->has_initializer()) continue;
      add_io_node(into, *input, cluster_label.empty() ? "input" : "in");
    }
    for (const Node* node : graph.nodes()) {
      if (!is_folded_constant(*node)) add_op_node(*node, into);
    }
    for (const Node* node : graph.nodes()) {
      if (is_folded_constant(*node)) continue;
      for (const Value* input : node->inputs()) {
        if (input == nullptr || is_weight(input)) continue;
        add_edge(*input, *node);
      }
      const auto subgraphs = node->subgraphs();
      for (size_t k = 0; k < subgraphs.size(); ++k) add_subgraph(*node, *subgraphs[k], into, k);
    }
    if (cluster_label.empty()) {
      for (const Value* output : graph.outputs()) {
        Agnode_t* sink = add_io_node(into, *output, "output");
        if (Agnode_t* source = source_of(*output)) {
          add_edge_between(source, sink, output, "");
        }
      }
    }
  }

  size_t op_nodes() const { return op_nodes_; }
  size_t edges() const { return edges_; }
  const std::map<NodeMark, size_t>& marked() const { return marked_; }

 private:
  std::string next_id() { return fmt::format("{}{}", options_.id_prefix, ++counter_); }

  Agnode_t* new_node(Agraph_t* into, const std::string& id) {
    Agnode_t* n = agnode(into, c_str(id), 1);
    agsafeset(n, c_str("id"), c_str(id), c_str(""));
    return n;
  }

  Agnode_t* add_io_node(Agraph_t* into, const Value& value, const char* role) {
    auto found = value_nodes_.find(&value);
    if (found != value_nodes_.end()) return found->second;
    const std::string id = next_id();
    Agnode_t* n = new_node(into, id);
    agsafeset(n, c_str("shape"), c_str("ellipse"), c_str(""));
    agsafeset(n, c_str("class"), c_str(fmt::format("io {}", role)), c_str(""));
    agsafeset(n, c_str("label"),
              c_str(label_text(fmt::format("{}\n{}", shorten(value.name()), edge_label(value)))),
              c_str(""));
    value_nodes_[&value] = n;
    return n;
  }

  void add_op_node(const Node& node, Agraph_t* into) {
    const std::string id = next_id();
    Agnode_t* n = new_node(into, id);
    ++op_nodes_;
    std::string op = node.domain().empty() ? node.op_type() : node.domain() + "::" + node.op_type();
    std::string label = op;
    const std::string& name = node.name().empty() && !node.outputs().empty() && node.outputs()[0]
                                  ? node.outputs()[0]->name()
                                  : node.name();
    if (!name.empty()) {
      label += '\n';
      label += shorten(name);
    }
    // Initializers are folded into their reader's box: weights are not worth a node each.
    std::string weights;
    size_t folded = 0;
    for (const Value* input : node.inputs()) {
      if (input == nullptr || !is_weight(input)) continue;
      if (++folded > 3) continue;
      if (!weights.empty()) weights += " ";
      weights += input->has_initializer() ? shape_to_string(input->initializer().shape())
                                          : symbolic_shape_to_string(input->type().shape);
    }
    if (folded > 3) weights += fmt::format(" +{}", folded - 3);
    if (!weights.empty()) label += "\n" + weights;
    agsafeset(n, c_str("label"), c_str(label_text(label)), c_str(""));
    std::string classes = "op";
    if (options_.marks) {
      auto mark = options_.marks->find(&node);
      if (mark != options_.marks->end() && mark->second != NodeMark::kSame) {
        ++marked_[mark->second];
        classes += " ";
        classes += mark_class(mark->second);
      }
    }
    agsafeset(n, c_str("class"), c_str(classes), c_str(""));
    node_ids_[&node] = n;
  }

  void add_subgraph(const Node& owner, const Graph& body, Agraph_t* parent, size_t index) {
    const std::string name = fmt::format("cluster_{}{}", options_.id_prefix, ++counter_);
    Agraph_t* cluster = agsubg(parent, c_str(name), 1);
    std::string attribute = body.name().empty() ? fmt::format("body {}", index) : body.name();
    agsafeset(cluster, c_str("label"),
              c_str(label_text(fmt::format("{} '{}': {}", owner.op_type(),
                                           shorten(owner.name(), 32), shorten(attribute, 32)))),
              c_str(""));
    agsafeset(cluster, c_str("class"), c_str("subgraph"), c_str(""));
    agsafeset(cluster, c_str("id"), c_str(name), c_str(""));
    add_graph(body, cluster, name);
    // The body's results flow into the node that owns it.
    Agnode_t* owner_node = node_ids_.at(&owner);
    for (const Value* output : body.outputs()) {
      if (output == nullptr) continue;
      if (Agnode_t* source = source_of(*output)) {
        Agedge_t* e = add_edge_between(source, owner_node, output, "result");
        if (e) agsafeset(e, c_str("style"), c_str("dashed"), c_str(""));
      }
    }
  }

  Agnode_t* source_of(const Value& value) {
    if (const Node* producer = value.producer()) {
      auto found = node_ids_.find(producer);
      return found == node_ids_.end() ? nullptr : found->second;
    }
    auto found = value_nodes_.find(&value);
    return found == value_nodes_.end() ? nullptr : found->second;
  }

  void add_edge(const Value& value, const Node& reader) {
    Agnode_t* source = source_of(value);
    auto target = node_ids_.find(&reader);
    if (source == nullptr || target == node_ids_.end()) return;
    add_edge_between(source, target->second, &value, "");
  }

  Agedge_t* add_edge_between(Agnode_t* source, Agnode_t* target, const Value* value,
                             const char* extra_class) {
    // A node reading one value twice (Mul(x, x)) gets one edge.
    if (!drawn_.insert({source, target, value}).second) return nullptr;
    Agedge_t* e = agedge(root_, source, target, nullptr, 1);
    ++edges_;
    if (value) {
      // A large graph's edge labels are placed after the layout (xlabel): as `label` each
      // would be a node of the layout's own, which doubles the ranks dot works on.
      agsafeset(e, c_str(large_ ? "xlabel" : "label"), c_str(label_text(edge_label(*value))),
                c_str(""));
      std::string classes = "flow";
      if (*extra_class) classes += std::string(" ") + extra_class;
      agsafeset(e, c_str("class"), c_str(classes), c_str(""));
    }
    return e;
  }

  Agraph_t* root_;
  const GraphSvgOptions& options_;
  bool large_;
  size_t counter_ = 0;
  size_t op_nodes_ = 0;
  size_t edges_ = 0;
  std::map<NodeMark, size_t> marked_;
  std::unordered_map<const Node*, Agnode_t*> node_ids_;
  std::unordered_map<const Value*, Agnode_t*> value_nodes_;
  std::set<std::tuple<Agnode_t*, Agnode_t*, const Value*>> drawn_;
};

size_t count_nodes(const Graph& graph) {
  size_t total = 0;
  for (const Node* node : graph.nodes()) {
    total += !is_folded_constant(*node);
    for (const Graph* body : node->subgraphs()) total += count_nodes(*body);
  }
  return total;
}

// Graph-wide attributes. Large graphs get dot's cheaper settings: one network-simplex
// iteration budget per node for ranking and x positions (nslimit, nslimit1), a twentieth of
// the crossing-minimization passes (mclimit), no final crossing pass, polyline edges instead
// of splines routed around every box, and edge labels placed after the layout (xlabel, in
// DotBuilder). BERT-base as exported (1,136 nodes drawn, 1,363 edges), CPU time of the layout
// on this project's machines: default settings with labels > 60 s; polyline + xlabel 3.1 s;
// these settings 1.7 s. (Graphviz 2.42 crashed in dot_layout on BERT with low nslimit and
// `label` edge labels; with xlabel it does not.)
void set_graph_attributes(Agraph_t* graph, bool large) {
  auto set = [&](const char* key, const char* value) {
    agattr(graph, AGRAPH, c_str(key), c_str(value));
  };
  set("rankdir", "TB");
  set("fontname", "Helvetica");
  set("fontsize", "10");
  set("nodesep", "0.25");
  set("ranksep", "0.3");
  if (large) {
    set("splines", "polyline");
    set("mclimit", "0.05");
    set("nslimit", "1");
    set("nslimit1", "1");
    set("searchsize", "5");
    set("remincross", "false");
  }
  agattr(graph, AGNODE, c_str("shape"), c_str("box"));
  agattr(graph, AGNODE, c_str("style"), c_str("rounded,filled"));
  agattr(graph, AGNODE, c_str("fillcolor"), c_str("white"));
  agattr(graph, AGNODE, c_str("fontname"), c_str("Helvetica"));
  agattr(graph, AGNODE, c_str("fontsize"), c_str("10"));
  agattr(graph, AGNODE, c_str("height"), c_str("0.3"));
  agattr(graph, AGNODE, c_str("margin"), c_str("0.08,0.03"));
  agattr(graph, AGEDGE, c_str("fontname"), c_str("Helvetica"));
  agattr(graph, AGEDGE, c_str("fontsize"), c_str("8"));
  agattr(graph, AGEDGE, c_str("arrowsize"), c_str("0.5"));
}

}  // namespace

const char* mark_class(NodeMark mark) {
  switch (mark) {
    case NodeMark::kSame:
      return "";
    case NodeMark::kRemoved:
      return "removed";
    case NodeMark::kAdded:
      return "added";
    case NodeMark::kFused:
      return "fused";
    case NodeMark::kChanged:
      return "changed";
  }
  return "";
}

std::string edge_label(const Value& value) {
  const ValueType& type = value.type();
  if (type.kind == ValueType::Kind::kNone) return "?";
  return value_type_to_string(type);
}

Result<GraphSvg> render_graph_svg(const Graph& graph, const GraphSvgOptions& options) {
  return capture([&]() -> GraphSvg {
    GraphSvg result;
    std::unique_ptr<GVC_t, GvcDeleter> gvc(gvContext());
    if (!gvc) fail("graphviz: could not create a context");
    std::unique_ptr<Agraph_t, GraphDeleter> dot(
        agopen(c_str(options.id_prefix + "graph"), Agdirected, nullptr));
    const size_t nodes = count_nodes(graph);
    if (nodes > options.max_nodes) {
      fail("the graph has {} nodes to draw; pictures are drawn up to {}", nodes, options.max_nodes);
    }
    const bool large = nodes > options.large_graph_nodes;
    set_graph_attributes(dot.get(), large);
    DotBuilder builder(dot.get(), options, large);
    builder.add_graph(graph, dot.get(), "");
    result.nodes = builder.op_nodes();
    result.edges = builder.edges();
    result.marked = builder.marked();

    auto start = Clock::now();
    if (gvLayout(gvc.get(), dot.get(), "dot") != 0) fail("graphviz: dot layout failed");
    result.layout_seconds = seconds_since(start);
    start = Clock::now();
    char* data = nullptr;
    unsigned int length = 0;
    const int rendered = gvRenderData(gvc.get(), dot.get(), "svg", &data, &length);
    std::string svg = data ? std::string(data, length) : std::string();
    if (data) gvFreeRenderData(data);
    gvFreeLayout(gvc.get(), dot.get());
    if (rendered != 0 || svg.empty()) fail("graphviz: svg rendering failed");
    result.render_seconds = seconds_since(start);
    // Inline SVG needs neither the XML prolog nor the doctype.
    const size_t begin = svg.find("<svg");
    if (begin == std::string::npos) fail("graphviz: no <svg> element in its output");
    result.svg = svg.substr(begin);
    return result;
  });
}

}  // namespace onnxkit::report
