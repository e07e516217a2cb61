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

Attribute float_attribute(std::string name, float value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kFloat;
  a.f = value;
  return a;
}

Attribute int_attribute(std::string name, int64_t value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kInt;
  a.i = value;
  return a;
}

Attribute ints_attribute(std::string name, std::vector<int64_t> values) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kInts;
  a.ints = std::move(values);
  return a;
}

Attribute string_attribute(std::string name, std::string value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kString;
  a.s = std::move(value);
  return a;
}

Attribute tensor_attribute(std::string name, Tensor value) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kTensor;
  a.t = std::move(value);
  return a;
}

Attribute graph_attribute(std::string name, std::unique_ptr<Graph> graph) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttrType::kGraph;
  a.g = std::move(graph);
  return a;
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

}  // namespace onnxkit
