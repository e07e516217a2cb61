#include "ir/graph.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "core/status.h"

namespace onnxkit {

// ---------------------------------------------------------------- Node

const Attribute* Node::find_attribute(std::string_view name) const {
  for (const Attribute& attribute : attributes_) {
    if (attribute.name == name) return &attribute;
  }
  return nullptr;
}

void Node::set_attribute(Attribute attribute) {
  for (Attribute& existing : attributes_) {
    if (existing.name == attribute.name) {
      existing = std::move(attribute);
      return;
    }
  }
  attributes_.push_back(std::move(attribute));
}

bool Node::remove_attribute(std::string_view name) {
  auto it = std::find_if(attributes_.begin(), attributes_.end(),
                         [&](const Attribute& a) { return a.name == name; });
  if (it == attributes_.end()) return false;
  attributes_.erase(it);
  return true;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> graphs;
  for (const Attribute& attribute : attributes_) {
    if (attribute.g) graphs.push_back(attribute.g.get());
    for (const auto& graph : attribute.graphs) graphs.push_back(graph.get());
  }
  return graphs;
}

std::string Node::describe() const {
  if (is_return()) {
    return "outputs of " + (graph_->name().empty() ? std::string("<unnamed graph>")
                                                   : "graph '" + graph_->name() + "'");
  }
  std::string label = name_;
  if (label.empty()) {
    for (const Value* output : outputs_) {
      if (output) {
        label = "producing " + output->name();
        break;
      }
    }
    return "[" + op_type_ + "] node " + (label.empty() ? "<unnamed>" : "(" + label + ")");
  }
  return "[" + op_type_ + "] node '" + label + "'";
}

bool Node::is_return() const {
  return graph_ && this == graph_->return_node();
}

// ---------------------------------------------------------------- Value

bool Value::returned_by_subgraph() const {
  return std::any_of(uses_.begin(), uses_.end(),
                     [](const Use& use) { return use.node->is_return(); });
}

// ---------------------------------------------------------------- Graph

Graph::~Graph() {
  // Our nodes and outputs may read values of enclosing graphs, which outlive us: take those
  // uses back. Nodes go before values (explicitly) so nested subgraphs can do the same.
  auto release_outer_uses = [this](Node* node) {
    for (size_t i = 0; i < node->inputs_.size(); ++i) {
      Value* value = node->inputs_[i];
      if (value && value->graph_ != this) std::erase(value->uses_, Use{node, i});
    }
  };
  release_outer_uses(&return_node_);
  for (auto& node : nodes_) release_outer_uses(node.get());
  nodes_.clear();
}

bool Graph::is_within(const Graph* other) const {
  for (const Graph* graph = this; graph; graph = graph->parent_) {
    if (graph == other) return true;
  }
  return false;
}

Value* Graph::find_value(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? nullptr : it->second.get();
}

Value* Graph::lookup(std::string_view name) const {
  for (const Graph* graph = this; graph; graph = graph->parent_) {
    if (Value* value = graph->find_value(name)) return value;
  }
  return nullptr;
}

Value* Graph::create_value(const std::string& name) {
  if (name.empty()) fail("a value needs a name");
  auto [it, inserted] = values_.try_emplace(name);
  if (!inserted) fail("value '{}' is defined twice in graph '{}'", name, name_);
  it->second.reset(new Value(this, name));
  return it->second.get();
}

std::string Graph::unique_name(std::string_view prefix) const {
  std::string base(prefix.empty() ? "v" : prefix);
  if (!lookup(base)) return base;
  for (size_t suffix = 1;; ++suffix) {
    std::string candidate = base + "_" + std::to_string(suffix);
    if (!lookup(candidate)) return candidate;
  }
}

void Graph::rename_value(Value* value, const std::string& name) {
  if (value->name_ == name) return;
  if (name.empty() || find_value(name))
    fail("cannot rename '{}' to '{}': name taken", value->name_, name);
  auto node = values_.extract(value->name_);
  node.key() = name;
  value->name_ = name;
  values_.insert(std::move(node));
}

void Graph::remove_value(Value* value) {
  if (value->graph_ != this) fail("internal: value '{}' is not in this graph", value->name());
  if (value->producer_ || !value->uses_.empty() || is_input(value) || is_output(value)) {
    fail("internal: value '{}' is still referenced and cannot be removed", value->name());
  }
  if (value->has_initializer()) remove_initializer(value);
  if (value->value_info_entry_) value_info_.erase(*value->value_info_entry_);
  std::erase_if(sparse_initializers_, [&](const auto& entry) { return entry.first == value; });
  values_.erase(value->name());
}

Value* Graph::add_input(const std::string& name, ValueType type) {
  Value* value = create_value(name);
  value->set_type(std::move(type));
  inputs_.push_back(value);
  return value;
}

void Graph::add_input(Value* value) {
  inputs_.push_back(value);
}

void Graph::add_output(Value* value) {
  add_node_input(&return_node_, value);
}

void Graph::set_output(size_t index, Value* value) {
  if (index >= outputs().size()) fail("internal: graph '{}' has no output {}", name_, index);
  set_node_input(&return_node_, index, value);
}

void Graph::remove_output(size_t index) {
  if (index >= outputs().size()) fail("internal: graph '{}' has no output {}", name_, index);
  remove_node_input(&return_node_, index);
}

bool Graph::is_input(const Value* value) const {
  return std::find(inputs_.begin(), inputs_.end(), value) != inputs_.end();
}

bool Graph::is_output(const Value* value) const {
  return std::find(outputs().begin(), outputs().end(), value) != outputs().end();
}

Value* Graph::add_initializer(const std::string& name, Tensor tensor) {
  Value* value = find_value(name);
  if (!value) value = create_value(name);
  set_initializer(value, std::move(tensor));
  return value;
}

void Graph::set_initializer(Value* value, Tensor tensor) {
  if (value->producer_) {
    fail("initializer '{}' is also computed by {}", value->name(), value->producer_->describe());
  }
  if (!value->initializer_) initializers_.push_back(value);
  value->initializer_ = std::move(tensor);
}

void Graph::remove_initializer(Value* value) {
  value->initializer_.reset();
  std::erase(initializers_, value);
}

void Graph::add_sparse_initializer(Value* value, SparseTensor tensor) {
  sparse_initializers_.emplace_back(value, std::move(tensor));
}

void Graph::add_value_info(Value* value) {
  if (value->graph_ != this) fail("internal: value '{}' is not in this graph", value->name());
  if (value->value_info_entry_) return;
  value->value_info_entry_ = value_info_.insert(value_info_.end(), value);
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> result;
  result.reserve(nodes_.size());
  for (const auto& node : nodes_) result.push_back(node.get());
  return result;
}

Node* Graph::add_node(std::string op_type, std::vector<Value*> inputs,
                      const std::vector<std::string>& output_names, std::string domain,
                      std::string name, Node* before) {
  auto owned = std::unique_ptr<Node>(new Node());
  Node* node = owned.get();
  node->op_type_ = std::move(op_type);
  node->domain_ = std::move(domain);
  node->name_ = std::move(name);
  node->graph_ = this;
  auto position = before ? before->position_ : nodes_.end();
  node->position_ = nodes_.insert(position, std::move(owned));
  for (size_t i = 0; i < inputs.size(); ++i) {
    node->inputs_.push_back(nullptr);
    link_input(node, i, inputs[i]);
  }
  node->outputs_.resize(output_names.size(), nullptr);
  for (size_t i = 0; i < output_names.size(); ++i) {
    if (output_names[i].empty()) continue;
    Value* value = find_value(output_names[i]);
    if (!value) value = create_value(output_names[i]);
    set_node_output(node, i, value);
  }
  return node;
}

void Graph::set_node_output(Node* node, size_t index, Value* value) {
  if (value->producer_) {
    fail("value '{}' is produced by both {} and {}", value->name(), value->producer_->describe(),
         node->describe());
  }
  if (value->initializer_) {
    fail("value '{}' is both an initializer and an output of {}", value->name(), node->describe());
  }
  if (index >= node->outputs_.size()) node->outputs_.resize(index + 1, nullptr);
  if (Value* old = node->outputs_[index]) old->producer_ = nullptr;
  node->outputs_[index] = value;
  value->producer_ = node;
  value->producer_output_ = index;
}

void Graph::link_input(Node* node, size_t index, Value* value) {
  node->inputs_[index] = value;
  // An output naming this graph's own value is no use of it (see graph.h).
  if (!value || (node == &return_node_ && value->graph_ == this)) return;
  value->uses_.push_back(Use{node, index});
}

void Graph::unlink_input(Node* node, size_t index) {
  Value* value = node->inputs_[index];
  if (value) std::erase(value->uses_, Use{node, index});
  node->inputs_[index] = nullptr;
}

void Graph::set_node_input(Node* node, size_t index, Value* value) {
  if (index >= node->inputs_.size()) node->inputs_.resize(index + 1, nullptr);
  unlink_input(node, index);
  link_input(node, index, value);
}

void Graph::add_node_input(Node* node, Value* value) {
  node->inputs_.push_back(nullptr);
  link_input(node, node->inputs_.size() - 1, value);
}

void Graph::remove_node_input(Node* node, size_t index) {
  // Later inputs shift down by one: re-register their uses with the new index.
  std::vector<Value*> tail(node->inputs_.begin() + index + 1, node->inputs_.end());
  for (size_t i = index; i < node->inputs_.size(); ++i) unlink_input(node, i);
  node->inputs_.resize(index);
  for (Value* value : tail) add_node_input(node, value);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  // Every use of `from` moves, so its list goes at once: unlinking one use at a time scans
  // the list each time, quadratic in a value read by 100,000 nodes.
  std::vector<Use> uses = std::move(from->uses_);
  from->uses_.clear();
  for (const Use& use : uses) use.node->graph_->link_input(use.node, use.input, to);
  for (size_t i = 0; i < outputs().size(); ++i) {
    if (outputs()[i] == from) set_node_input(&return_node_, i, to);
  }
}

void Graph::remove_node(Node* node) {
  if (node->graph_ != this) fail("internal: {} is not in this graph", node->describe());
  for (Value* output : node->outputs_) {
    if (!output) continue;
    if (!output->uses_.empty() || is_output(output)) {
      fail("internal: cannot remove {}: its output '{}' is still used", node->describe(),
           output->name());
    }
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) unlink_input(node, i);
  for (Value* output : node->outputs_) {
    if (!output) continue;
    output->producer_ = nullptr;
    remove_value(output);
  }
  nodes_.erase(node->position_);
}

void Graph::move_before(Node* node, Node* anchor) {
  auto owned = std::move(*node->position_);
  nodes_.erase(node->position_);
  node->position_ = nodes_.insert(anchor ? anchor->position_ : nodes_.end(), std::move(owned));
}

std::vector<Node*> Graph::topological_order() const {
  std::vector<Node*> order = nodes();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;

  std::vector<size_t> pending(order.size(), 0);
  std::vector<std::vector<size_t>> consumers(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    std::vector<const Value*> reads(order[i]->inputs().begin(), order[i]->inputs().end());
    for (Graph* sub : order[i]->subgraphs()) collect_captures(*sub, *this, reads);
    std::unordered_set<size_t> producers;
    for (const Value* value : reads) {
      if (!value || value->graph() != this || !value->producer()) continue;
      producers.insert(position.at(value->producer()));
    }
    for (size_t producer : producers) {
      consumers[producer].push_back(i);
      ++pending[i];
    }
  }
  // Kahn's algorithm, always taking the earliest ready node so sorted graphs keep order.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < order.size(); ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<Node*> sorted;
  sorted.reserve(order.size());
  while (!ready.empty()) {
    size_t next = ready.top();
    ready.pop();
    sorted.push_back(order[next]);
    for (size_t consumer : consumers[next]) {
      if (--pending[consumer] == 0) ready.push(consumer);
    }
  }
  if (sorted.size() != order.size()) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (pending[i] != 0) {
        fail("graph '{}' has a cycle through {}", name_, order[i]->describe());
      }
    }
  }
  return sorted;
}

void Graph::sort_topologically() {
  std::vector<Node*> sorted = topological_order();
  for (Node* node : sorted) move_before(node, nullptr);
}

// ---------------------------------------------------------------- free functions

bool is_onnx_op(const Node* node, std::string_view op_type) {
  return node && node->op_type() == op_type && node->domain().empty();
}

bool is_onnxkit_op(const Node* node, std::string_view op_type) {
  return node && node->op_type() == op_type && node->domain() == kOnnxkitDomain;
}

void collect_captures(const Graph& graph, const Graph& owner, std::vector<const Value*>& out) {
  for (const Node* node : graph.nodes()) {
    for (const Value* input : node->inputs()) {
      if (input && input->graph() == &owner) out.push_back(input);
    }
    for (const Graph* sub : node->subgraphs()) collect_captures(*sub, owner, out);
  }
  for (const Value* output : graph.outputs()) {
    if (output && output->graph() == &owner) out.push_back(output);
  }
}

}  // namespace onnxkit
