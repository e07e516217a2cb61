// Pass common_subexpression_elimination: nodes computing the same op with the same inputs
// and attributes are merged.
//
// Nodes are visited in topological order and looked up in a hash table keyed by op type,
// domain, input Values and attributes, so a merge makes the consumers of both nodes equal
// too and whole chains collapse in one run. Never merged: nodes with subgraphs, random
// ops and Dropout (not deterministic), ops outside the ONNX domains (their semantics are
// unknown), and a node whose outputs cannot take the earlier node's place (both are graph
// outputs: the interface keeps both names).
#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "passes/passes.h"

namespace onnxkit {
namespace {

bool mergeable_op(const Node& node, const PassContext& context) {
  const std::string& domain = node.domain();
  if (!domain.empty() && domain != "ai.onnx.ml") return false;
  const OpTraits& traits = context.traits(&node);
  if (!traits.deterministic || traits.random_in_training) return false;
  if (node.outputs().empty()) return false;
  for (const Attribute& attribute : node.attributes()) {
    if (attribute.g || !attribute.graphs.empty() || attribute.type == AttrType::kGraph ||
        attribute.type == AttrType::kGraphs) {
      return false;
    }
  }
  return true;
}

// ---- hashing and equality of attributes ----

void mix(size_t& seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

size_t hash_tensor(const Tensor& tensor) {
  size_t seed = static_cast<size_t>(tensor.dtype());
  for (int64_t d : tensor.shape()) mix(seed, std::hash<int64_t>{}(d));
  if (tensor.dtype() == DType::kString) {
    for (const std::string& s : tensor.strings()) mix(seed, std::hash<std::string>{}(s));
  } else if (tensor.nbytes() > 0) {
    mix(seed, std::hash<std::string_view>{}(
                  std::string_view(static_cast<const char*>(tensor.raw_data()), tensor.nbytes())));
  }
  return seed;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || a.same_contents(b);
}

bool same_sparse(const SparseTensor& a, const SparseTensor& b) {
  return a.dims == b.dims && same_tensor(a.values, b.values) && same_tensor(a.indices, b.indices);
}

// Floats compare by their bits: 0.0 and -0.0 differ, a NaN equals the same NaN.
bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

size_t hash_attribute(const Attribute& a) {
  size_t seed = std::hash<std::string>{}(a.name);
  mix(seed, static_cast<size_t>(a.type));
  mix(seed, std::hash<std::string>{}(a.ref_attr_name));
  mix(seed, std::bit_cast<uint32_t>(a.f));
  mix(seed, std::hash<int64_t>{}(a.i));
  mix(seed, std::hash<std::string>{}(a.s));
  if (a.t.defined()) mix(seed, hash_tensor(a.t));
  for (float f : a.floats) mix(seed, std::bit_cast<uint32_t>(f));
  for (int64_t i : a.ints) mix(seed, std::hash<int64_t>{}(i));
  for (const std::string& s : a.strings) mix(seed, std::hash<std::string>{}(s));
  for (const Tensor& t : a.tensors) mix(seed, hash_tensor(t));
  if (a.sparse_tensor.values.defined()) mix(seed, hash_tensor(a.sparse_tensor.values));
  for (const SparseTensor& t : a.sparse_tensors) mix(seed, hash_tensor(t.values));
  return seed;
}

bool same_attribute(const Attribute& a, const Attribute& b) {
  if (a.name != b.name || a.type != b.type || a.ref_attr_name != b.ref_attr_name) return false;
  if (std::bit_cast<uint32_t>(a.f) != std::bit_cast<uint32_t>(b.f) || a.i != b.i || a.s != b.s) {
    return false;
  }
  if (!same_tensor(a.t, b.t) || !same_sparse(a.sparse_tensor, b.sparse_tensor)) return false;
  if (!(a.tp == b.tp) || !same_floats(a.floats, b.floats) || a.ints != b.ints ||
      a.strings != b.strings || a.type_protos != b.type_protos) {
    return false;
  }
  if (a.tensors.size() != b.tensors.size() || a.sparse_tensors.size() != b.sparse_tensors.size()) {
    return false;
  }
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (!same_tensor(a.tensors[i], b.tensors[i])) return false;
  }
  for (size_t i = 0; i < a.sparse_tensors.size(); ++i) {
    if (!same_sparse(a.sparse_tensors[i], b.sparse_tensors[i])) return false;
  }
  return true;
}

// Attributes sorted by name, so their order in the file does not matter.
std::vector<const Attribute*> sorted_attributes(const Node& node) {
  std::vector<const Attribute*> sorted;
  for (const Attribute& attribute : node.attributes()) sorted.push_back(&attribute);
  std::sort(sorted.begin(), sorted.end(),
            [](const Attribute* a, const Attribute* b) { return a->name < b->name; });
  return sorted;
}

size_t hash_node(const Node& node) {
  size_t seed = std::hash<std::string>{}(node.op_type());
  mix(seed, std::hash<std::string>{}(node.domain()));
  mix(seed, node.inputs().size());
  for (const Value* input : node.inputs()) mix(seed, std::hash<const Value*>{}(input));
  for (const Attribute* attribute : sorted_attributes(node)) mix(seed, hash_attribute(*attribute));
  return seed;
}

bool same_computation(const Node& a, const Node& b) {
  if (a.op_type() != b.op_type() || a.domain() != b.domain() || a.inputs() != b.inputs()) {
    return false;
  }
  if (a.attributes().size() != b.attributes().size()) return false;
  auto sa = sorted_attributes(a), sb = sorted_attributes(b);
  for (size_t i = 0; i < sa.size(); ++i) {
    if (!same_attribute(*sa[i], *sb[i])) return false;
  }
  return true;
}

class CommonSubexpressionEliminationPass : public GraphPass {
 public:
  std::string_view name() const override { return "common_subexpression_elimination"; }

  size_t run(Graph& graph, PassContext& context) override {
    std::unordered_map<size_t, std::vector<Node*>> seen;
    size_t changes = 0;
    for (Node* node : graph.topological_order()) {
      if (!mergeable_op(*node, context)) continue;
      std::vector<Node*>& bucket = seen[hash_node(*node)];
      Node* earlier = nullptr;
      for (Node* candidate : bucket) {
        if (same_computation(*candidate, *node) && can_merge(*node, *candidate, context)) {
          earlier = candidate;
          break;
        }
      }
      if (!earlier) {
        bucket.push_back(node);
        continue;
      }
      for (size_t i = 0; i < node->outputs().size(); ++i) {
        Value* output = node->output(i);
        if (!output) continue;
        Value* replacement = earlier->output(i);
        if (is_graph_output(output) && replacement->type().kind == ValueType::Kind::kNone) {
          replacement->set_type(output->type());
        }
        replace_value(graph, output, replacement);
      }
      graph.remove_node(node);
      ++changes;
    }
    return changes;
  }

 private:
  // Every output `later` has can be replaced by `earlier`'s.
  static bool can_merge(const Node& later, const Node& earlier, const PassContext& context) {
    if (later.outputs().size() > earlier.outputs().size()) return false;
    for (size_t i = 0; i < later.outputs().size(); ++i) {
      const Value* from = later.output(i);
      if (!from) continue;
      const Value* to = earlier.output(i);
      if (!to || !can_replace(from, to) || from->returned_by_subgraph()) return false;
      if (context.keep_values.count(from->name())) return false;
      if (is_graph_output(from) && context.keep_values.count(to->name())) return false;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_common_subexpression_elimination_pass() {
  return std::make_unique<CommonSubexpressionEliminationPass>();
}

}  // namespace onnxkit
