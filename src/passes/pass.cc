#include "passes/pass.h"

#include <algorithm>

#include "core/status.h"
#include "registry/builtin_registry.h"

namespace onnxkit {

const OpRegistry& PassContext::ops() const {
  return registry ? *registry : builtin_registry();
}

const OpTraits& PassContext::traits(const Node* node) const {
  return ops().traits(*node, opset(node->domain()));
}

namespace {

class RulePass final : public GraphPass {
 public:
  RulePass(std::string_view name, std::vector<std::string_view> op_types, NodeRewrite rewrite,
           NodeOrder order)
      : name_(name), op_types_(std::move(op_types)), rewrite_(std::move(rewrite)), order_(order) {}

  std::string_view name() const override { return name_; }

  size_t run(Graph& graph, PassContext& context) override {
    const std::vector<Node*> nodes =
        order_ == NodeOrder::kTopological ? graph.topological_order() : graph.nodes();
    size_t changes = 0;
    for (Node* node : nodes) {
      if (targets(node)) changes += rewrite_(graph, node, context);
    }
    return changes;
  }

 private:
  bool targets(const Node* node) const {
    if (op_types_.empty()) return true;
    return std::any_of(op_types_.begin(), op_types_.end(),
                       [&](std::string_view op_type) { return is_onnx_op(node, op_type); });
  }

  std::string_view name_;
  std::vector<std::string_view> op_types_;
  NodeRewrite rewrite_;
  NodeOrder order_;
};

}  // namespace

std::unique_ptr<GraphPass> make_rule_pass(std::string_view name,
                                          std::vector<std::string_view> op_types,
                                          NodeRewrite rewrite, NodeOrder order) {
  return std::make_unique<RulePass>(name, std::move(op_types), std::move(rewrite), order);
}

const Tensor* constant_value(const Value* value, const PassContext& context) {
  if (!value || !value->has_initializer()) return nullptr;
  if (value->graph()->is_input(value)) return nullptr;
  if (context.mutable_initializers) return nullptr;
  return &value->initializer();
}

int64_t int_attr(const Node* node, std::string_view name, int64_t fallback) {
  const Attribute* attribute = node->find_attribute(name);
  return attribute && attribute->type == AttrType::kInt ? attribute->i : fallback;
}

bool kept(const PassContext& context, const Value* value) {
  return context.keep_values.count(value->name()) > 0;
}

bool is_graph_output(const Value* value) {
  return value && value->graph()->is_output(value);
}

bool is_unused(const Value* value) {
  return value->uses().empty() && !is_graph_output(value);
}

bool can_replace(const Value* from, const Value* to) {
  if (from == to || !is_graph_output(from)) return true;
  const Graph* graph = from->graph();
  return to->graph() == graph && !graph->is_input(to) && !is_graph_output(to);
}

void replace_value(Graph& graph, Value* from, Value* to) {
  if (from == to) return;
  if (!can_replace(from, to)) {
    fail("internal: replacing graph output '{}' by '{}' would rename it", from->name(), to->name());
  }
  const bool output = is_graph_output(from);
  graph.replace_all_uses(from, to);
  if (!output) return;
  // Keep the graph's output name: `to` takes it over once `from` is renamed away.
  const std::string name = from->name();
  graph.rename_value(from, graph.unique_name(name + "__replaced"));
  graph.rename_value(to, name);
}

namespace {

// An attribute `name` of `type`, its value filled in by `set_value`.
template <typename SetValue>
Attribute make_attribute(std::string name, AttrType type, SetValue set_value) {
  Attribute a;
  a.name = std::move(name);
  a.type = type;
  set_value(a);
  return a;
}

}  // namespace

Attribute float_attribute(std::string name, float value) {
  return make_attribute(std::move(name), AttrType::kFloat, [&](Attribute& a) { a.f = value; });
}

Attribute int_attribute(std::string name, int64_t value) {
  return make_attribute(std::move(name), AttrType::kInt, [&](Attribute& a) { a.i = value; });
}

Attribute ints_attribute(std::string name, std::vector<int64_t> values) {
  return make_attribute(std::move(name), AttrType::kInts,
                        [&](Attribute& a) { a.ints = std::move(values); });
}

Attribute string_attribute(std::string name, std::string value) {
  return make_attribute(std::move(name), AttrType::kString,
                        [&](Attribute& a) { a.s = std::move(value); });
}

Attribute tensor_attribute(std::string name, Tensor value) {
  return make_attribute(std::move(name), AttrType::kTensor,
                        [&](Attribute& a) { a.t = std::move(value); });
}

Attribute graph_attribute(std::string name, std::unique_ptr<Graph> graph) {
  return make_attribute(std::move(name), AttrType::kGraph,
                        [&](Attribute& a) { a.g = std::move(graph); });
}

std::optional<std::vector<int64_t>> transpose_permutation(const Node* node,
                                                          std::optional<int64_t> rank) {
  std::vector<int64_t> perm;
  if (const Attribute* attr = node->find_attribute("perm")) {
    if (attr->type != AttrType::kInts) return std::nullopt;
    perm = attr->ints;
  } else {
    if (!rank) return std::nullopt;
    for (int64_t i = *rank - 1; i >= 0; --i) perm.push_back(i);
  }
  const auto size = static_cast<int64_t>(perm.size());
  if (rank && *rank != size) return std::nullopt;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= size || seen[static_cast<size_t>(p)]) return std::nullopt;
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

std::vector<int64_t> compose_permutations(const std::vector<int64_t>& first,
                                          const std::vector<int64_t>& second) {
  std::vector<int64_t> composed(second.size());
  for (size_t i = 0; i < second.size(); ++i) {
    composed[i] = first[static_cast<size_t>(second[i])];
  }
  return composed;
}

std::optional<int64_t> known_rank(const Value* value) {
  if (!value) return std::nullopt;
  const ValueType& type = value->type();
  if (!type.is_tensor() || !type.shape) return std::nullopt;
  return static_cast<int64_t>(type.shape->size());
}

bool is_identity_permutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

void bypass_node(Graph& graph, Node* node, Value* y, Value* x, const std::string& identity_stem) {
  if (can_replace(y, x)) {
    replace_value(graph, y, x);
  } else {
    Node* identity =
        graph.add_node("Identity", {x}, {graph.unique_name(identity_stem)}, "", node->name(), node);
    identity->output(0)->set_type(y->type());
    replace_value(graph, y, identity->output(0));
  }
  graph.remove_node(node);
}

}  // namespace onnxkit
