// The graph IR: Values know their producer and their uses; Nodes own their attributes
// (and through them any subgraphs); a Graph owns its nodes and values.
//
// All edits go through Graph's methods so that producer/use links stay right; Node and
// Value expose only read access to their wiring.
//
// A value's uses are every place that reads it: node inputs in its own graph and in nested
// subgraphs, and the outputs of nested subgraphs that return it as it is (an If branch whose
// output is an outer value). The latter are uses by the subgraph's return node, whose inputs
// are that subgraph's outputs. A graph's outputs that name its own values are not uses.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/attribute.h"
#include "ir/domain.h"
#include "ir/value_type.h"
#include "onnxkit/tensor.h"

namespace onnxkit {

class Graph;
class Node;

// One consumer of a value: `node` reads it as its input number `input`. `node` may be the
// return node of a nested subgraph (Graph::return_node), which is in no graph's nodes():
// the subgraph returns the value as its output number `input`.
struct Use {
  Node* node = nullptr;
  size_t input = 0;
  bool operator==(const Use&) const = default;
};

class Value {
 public:
  const std::string& name() const { return name_; }
  Graph* graph() const { return graph_; }
  const ValueType& type() const { return type_; }
  void set_type(ValueType type) { type_ = std::move(type); }
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string doc) { doc_string_ = std::move(doc); }

  // The node that computes this value, or nullptr (graph input, initializer).
  Node* producer() const { return producer_; }
  size_t producer_output() const { return producer_output_; }
  // Every node input that reads this value, in any graph (subgraphs read outer values), and
  // every output of a nested subgraph that names it.
  const std::vector<Use>& uses() const { return uses_; }
  // True when a nested subgraph (any depth) returns this value directly as an output.
  bool returned_by_subgraph() const;

  bool has_initializer() const { return initializer_.has_value(); }
  const Tensor& initializer() const { return *initializer_; }

 private:
  friend class Graph;
  Value(Graph* graph, std::string name) : name_(std::move(name)), graph_(graph) {}
  std::string name_;
  Graph* graph_;
  ValueType type_;
  std::string doc_string_;
  Node* producer_ = nullptr;
  size_t producer_output_ = 0;
  std::vector<Use> uses_;
  std::optional<Tensor> initializer_;
  // Where the graph's value_info lists it: constant-time listing and removal, which a
  // graph of a million values needs.
  std::optional<std::list<Value*>::iterator> value_info_entry_;
};

class Node {
 public:
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string doc) { doc_string_ = std::move(doc); }
  Graph* graph() const { return graph_; }

  // Inputs and outputs; nullptr marks an omitted optional one.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // nullptr when `index` is past the end or the input is omitted.
  Value* input(size_t index) const { return index < inputs_.size() ? inputs_[index] : nullptr; }
  Value* output(size_t index) const { return index < outputs_.size() ? outputs_[index] : nullptr; }

  const std::vector<Attribute>& attributes() const { return attributes_; }
  std::vector<Attribute>& mutable_attributes() { return attributes_; }
  const Attribute* find_attribute(std::string_view name) const;
  // Adds or replaces the attribute with the same name.
  void set_attribute(Attribute attribute);
  bool remove_attribute(std::string_view name);
  // Subgraphs held by GRAPH / GRAPHS attributes, in attribute order.
  std::vector<Graph*> subgraphs() const;

  // "[Conv] node 'conv_17'" (or the first output's name when the node has none).
  std::string describe() const;
  // True for a graph's return node (Graph::return_node).
  bool is_return() const;

 private:
  friend class Graph;
  Node() = default;
  std::string op_type_;
  std::string domain_;
  std::string name_;
  std::string doc_string_;
  Graph* graph_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Attribute> attributes_;
  std::list<std::unique_ptr<Node>>::iterator position_;
};

// Per-tensor quantization annotation (GraphProto.quantization_annotation).
struct QuantizationAnnotation {
  std::string tensor_name;
  std::vector<std::pair<std::string, std::string>> quant_parameter_tensor_names;
};

class Graph {
 public:
  // `parent` is the enclosing graph of a subgraph (nullptr for a main graph or a function).
  explicit Graph(Graph* parent = nullptr) : parent_(parent) { return_node_.graph_ = this; }
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& doc_string() const { return doc_string_; }
  void set_doc_string(std::string doc) { doc_string_ = std::move(doc); }
  Graph* parent() const { return parent_; }
  // True when `other` is this graph or one that encloses it.
  bool is_within(const Graph* other) const;

  // ---- values ----
  // This graph's own value called `name`, or nullptr.
  Value* find_value(std::string_view name) const;
  // Looks in this graph, then in the enclosing graphs (outer-scope references).
  Value* lookup(std::string_view name) const;
  // A new value with no producer; throws if this graph already has the name.
  Value* create_value(const std::string& name);
  // A name not used in this graph or any enclosing one: `prefix`, `prefix_1`, ...
  std::string unique_name(std::string_view prefix) const;
  size_t value_count() const { return values_.size(); }
  // Gives `value` (of this graph) a new name; throws if the name is taken.
  void rename_value(Value* value, const std::string& name);
  // Removes a value nothing refers to (no producer, no uses, not an input/output).
  void remove_value(Value* value);

  // ---- graph interface ----
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return return_node_.inputs_; }
  Value* add_input(const std::string& name, ValueType type);
  // Appends an existing value (for example one that also has an initializer).
  void add_input(Value* value);
  // Output changes keep use lists right: an output naming a value of an enclosing graph is
  // a use of that value by return_node().
  void add_output(Value* value);
  void set_output(size_t index, Value* value);
  void remove_output(size_t index);
  bool is_input(const Value* value) const;
  bool is_output(const Value* value) const;
  // Stands for this graph's outputs in use lists: its inputs are outputs(). It is no member
  // of nodes() and has no op type.
  const Node* return_node() const { return &return_node_; }

  // Initializers in file order; each is a Value with constant data.
  const std::vector<Value*>& initializers() const { return initializers_; }
  Value* add_initializer(const std::string& name, Tensor tensor);
  void set_initializer(Value* value, Tensor tensor);
  void remove_initializer(Value* value);

  const std::vector<std::pair<Value*, SparseTensor>>& sparse_initializers() const {
    return sparse_initializers_;
  }
  void add_sparse_initializer(Value* value, SparseTensor tensor);

  // Values whose types were listed in value_info, in order.
  std::vector<Value*> value_info() const { return {value_info_.begin(), value_info_.end()}; }
  void add_value_info(Value* value);

  std::vector<QuantizationAnnotation>& quantization_annotations() { return quant_annotations_; }
  const std::vector<QuantizationAnnotation>& quantization_annotations() const {
    return quant_annotations_;
  }

  // ---- nodes ----
  size_t node_count() const { return nodes_.size(); }
  // Nodes in their current order.
  std::vector<Node*> nodes() const;
  // A new node. `output_names` may contain "" for omitted optional outputs; the named
  // outputs become new values of this graph. Inserted before `before` (end if nullptr).
  Node* add_node(std::string op_type, std::vector<Value*> inputs,
                 const std::vector<std::string>& output_names, std::string domain = "",
                 std::string name = "", Node* before = nullptr);
  // Attaches `value` (which must have no producer) as output `index` of `node`.
  void set_node_output(Node* node, size_t index, Value* value);
  void set_node_input(Node* node, size_t index, Value* value);  // nullptr omits it
  void add_node_input(Node* node, Value* value);
  void remove_node_input(Node* node, size_t index);
  // Points every reader of `from` (nodes in any graph, outputs of nested subgraphs, and this
  // graph's outputs) at `to`.
  void replace_all_uses(Value* from, Value* to);
  // Removes a node whose outputs are unused and not graph outputs; drops those values.
  void remove_node(Node* node);
  void move_before(Node* node, Node* anchor);

  // A topological order that keeps the current order where it can. A node that holds
  // subgraphs depends on the outer values they read. Throws Error on a cycle.
  std::vector<Node*> topological_order() const;
  void sort_topologically();

 private:
  void link_input(Node* node, size_t index, Value* value);
  void unlink_input(Node* node, size_t index);

  std::string name_;
  std::string doc_string_;
  Graph* parent_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  Node return_node_;
  std::vector<Value*> initializers_;
  std::vector<std::pair<Value*, SparseTensor>> sparse_initializers_;
  std::list<Value*> value_info_;
  std::vector<QuantizationAnnotation> quant_annotations_;
};

// True for an op of the standard domain with this type (false for nullptr).
bool is_onnx_op(const Node* node, std::string_view op_type);
// True for an op of onnxkit's own domain (kOnnxkitDomain) with this type.
bool is_onnxkit_op(const Node* node, std::string_view op_type);

// Adds to `out` every value of `owner` that `graph` (a subgraph nested in it, any depth)
// reads in a node or returns as an output: what the node holding `graph` depends on.
void collect_captures(const Graph& graph, const Graph& owner, std::vector<const Value*>& out);

// Calls `visit(node)` for every node of `graph` and of its subgraphs, depth first.
template <typename Visit>
void for_each_node_recursive(const Graph& graph, Visit&& visit) {
  for (Node* node : graph.nodes()) {
    visit(node);
    for (Graph* sub : node->subgraphs()) for_each_node_recursive(*sub, visit);
  }
}

}  // namespace onnxkit
