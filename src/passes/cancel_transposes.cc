// Pass cancel_transposes: a Transpose is moved down through layout-agnostic ops until it meets
// the Transpose that undoes it, and both go.
//
// Exporters write channels-last stages into channels-first models as
// Transpose(0,2,3,1) -> decomposed LayerNorm -> Transpose(0,3,1,2) (ConvNeXt's LayerNorm2d).
// Starting from a Transpose t = T_p(x), the pass collects the region of nodes that read t
// (or values computed from it) and only mix it with constants, rank-0 values or other
// T_p(...) values: elementwise ops, reductions with keepdims, Softmax over an axis, Concat.
// If every value of the region is read only by the region or by Transposes, the region is
// rewritten to work on x directly: constants are transposed by p's inverse, reduction and
// Softmax/Concat axes are mapped through p, each reading Transpose T_q gets the composed
// permutation (and disappears when that is the identity), and the Transposes T_p go. So a
// rewrite removes at least one Transpose and never adds a node.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "core/buffer.h"
#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// How the op of `node` treats axes (its registered traits).
AxisRule axis_rule(const Node* node, const PassContext& context) {
  return context.traits(node).axes;
}

bool is_reduction(const Node* node, const PassContext& context) {
  return axis_rule(node, context) == AxisRule::kReduction;
}

// The rank a Transpose works at: its perm's size, else its input's or output's type.
std::optional<int64_t> transpose_rank(const Node* node) {
  if (const Attribute* attr = node->find_attribute("perm")) {
    return static_cast<int64_t>(attr->ints.size());
  }
  if (auto rank = known_rank(node->input(0))) return rank;
  return known_rank(node->output(0));
}

// Constants above this many elements are not transposed (a copy would cost memory for a
// rewrite that only saves a Transpose).
constexpr int64_t kMaxConstantElements = int64_t{1} << 20;
// A region larger than this is not explored further (keeps the pass linear in practice).
constexpr size_t kMaxRegionNodes = 4096;

// c' with T_p(c') == c, c broadcast at rank `rank` (leading 1s added): c'[J] = c[I] with
// I[i] = J[p[i]].
Tensor transpose_constant(const Tensor& c, const std::vector<int64_t>& perm) {
  const size_t rank = perm.size();
  Shape padded(rank, 1);
  std::copy(c.shape().begin(), c.shape().end(), padded.begin() + (rank - c.rank()));
  Shape out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[static_cast<size_t>(perm[i])] = padded[i];
  // Strides of the source, indexed by the output's axes.
  std::vector<int64_t> src_strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = rank; i-- > 0;) {
    src_strides[static_cast<size_t>(perm[i])] = stride;
    stride *= padded[i];
  }
  const size_t elem = dtype_size(c.dtype());
  auto buffer = Buffer::allocate_uninitialized(c.nbytes());
  auto* dst = reinterpret_cast<uint8_t*>(buffer->mutable_data());
  const auto* src = static_cast<const uint8_t*>(c.raw_data());
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < c.numel(); ++n) {
    int64_t offset = 0;
    for (size_t j = 0; j < rank; ++j) offset += index[j] * src_strides[j];
    std::memcpy(dst + static_cast<size_t>(n) * elem, src + static_cast<size_t>(offset) * elem,
                elem);
    for (size_t j = rank; j-- > 0;) {
      if (++index[j] < out_shape[j]) break;
      index[j] = 0;
    }
  }
  return Tensor::from_buffer(c.dtype(), std::move(out_shape), std::move(buffer));
}

// An axis the op accepts at `rank`; only those map through the permutation (an op with an
// axis out of range stays as it is, and the run reports it).
bool axis_in_range(int64_t axis, int64_t rank) {
  return axis >= -rank && axis < rank;
}

// The axis of a kSingleAxis op (Concat has no default; Softmax's is -1), or nothing when the
// attribute is not an int.
std::optional<int64_t> single_axis(const Node* node) {
  const Attribute* axis = node->find_attribute("axis");
  if (!axis) return is_onnx_op(node, "Concat") ? 0 : -1;
  if (axis->type != AttrType::kInt) return std::nullopt;
  return axis->i;
}

bool all_ones(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d == 1; });
}

class CancelTransposesPass : public GraphPass {
 public:
  std::string_view name() const override { return "cancel_transposes"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    // A rewrite removes nodes other than the one visited: the nodes still in the graph are
    // listed again after each one (looking each node up in a fresh list was quadratic: 100,000
    // nodes took minutes).
    std::unordered_set<const Node*> live = node_set(graph);
    for (Node* node : graph.topological_order()) {
      if (!live.contains(node) || !is_onnx_op(node, "Transpose")) continue;
      if (rewrite_region(graph, node, context)) {
        ++changes;
        live = node_set(graph);
      }
    }
    return changes;
  }

 private:
  struct Region {
    std::vector<int64_t> perm;
    std::vector<Node*> roots;      // the Transposes T_p that go
    std::vector<Node*> nodes;      // the ops that now work on the untransposed layout
    std::vector<Node*> terminals;  // Transposes reading region values
    std::set<Node*> root_set;
    std::set<Node*> terminal_set;
    std::set<Value*> values;  // values in the transposed layout (root and op outputs)
  };

  static std::unordered_set<const Node*> node_set(const Graph& graph) {
    const std::vector<Node*> nodes = graph.nodes();
    return {nodes.begin(), nodes.end()};
  }

  // A value the region may read without it being transposed: absent, rank 0, or a small
  // constant of at most the region's rank.
  static bool acceptable_outside_input(const Value* value, size_t rank,
                                       const PassContext& context) {
    if (!value) return true;
    if (known_rank(value) == 0) return true;
    const Tensor* c = constant_value(value, context);
    return c && c->rank() <= rank && c->numel() <= kMaxConstantElements &&
           c->dtype() != DType::kString;
  }

  // Collects the region reachable from `root`; false when it is not closed. Readers are
  // gathered first and their other inputs checked once the region is complete (a Sub may be
  // reached before the ReduceMean whose output it also reads); a T_p found feeding the
  // region joins it as another root, and the search goes on from there.
  static bool collect(Graph& graph, Node* root, const PassContext& context, Region& region) {
    const auto rank = transpose_rank(root);
    if (!rank || root->inputs().size() != 1 || !root->input(0) || !root->output(0)) return false;
    auto perm = transpose_permutation(root, *rank);
    if (!perm || is_identity_permutation(*perm)) return false;
    region.perm = *perm;
    std::set<Node*> seen_nodes;
    std::vector<Value*> work;
    auto add_root = [&](Node* transpose) {
      region.roots.push_back(transpose);
      region.root_set.insert(transpose);
      seen_nodes.insert(transpose);
      region.values.insert(transpose->output(0));
      work.push_back(transpose->output(0));
    };
    add_root(root);
    for (;;) {
      while (!work.empty()) {
        Value* value = work.back();
        work.pop_back();
        if (is_graph_output(value) || kept(value, context)) return false;
        for (const Use& use : value->uses()) {
          Node* reader = use.node;
          if (reader->graph() != &graph) return false;  // read inside a subgraph
          // A T_p that reads a region value is not a plain root: T_p(T_p(v)) stays transposed.
          if (region.root_set.count(reader)) return false;
          if (seen_nodes.count(reader)) continue;
          seen_nodes.insert(reader);
          if (is_onnx_op(reader, "Transpose")) {
            if (!transpose_permutation(reader, *rank) || !reader->output(0)) return false;
            region.terminals.push_back(reader);
            region.terminal_set.insert(reader);
            continue;
          }
          if (!movable_op(reader, *rank, context)) return false;
          region.nodes.push_back(reader);
          if (region.nodes.size() > kMaxRegionNodes) return false;
          region.values.insert(reader->output(0));
          work.push_back(reader->output(0));
        }
      }
      // Every input from outside the region must be one the rewrite can handle.
      for (Node* node : region.nodes) {
        const bool reduction = is_reduction(node, context);
        for (size_t i = 0; i < node->inputs().size(); ++i) {
          Value* input = node->input(i);
          if (!input || region.values.count(input)) continue;
          if (reduction && i == 1) {
            // The axes input: constant, mapped through the permutation.
            const Tensor* axes = constant_value(input, context);
            if (!axes || axes->dtype() != DType::kInt64) return false;
            for (int64_t a = 0; a < axes->numel(); ++a) {
              if (!axis_in_range(axes->data<int64_t>()[a], *rank)) return false;
            }
            continue;
          }
          Node* producer = input->producer();
          if (is_onnx_op(producer, "Transpose") && producer->graph() == &graph &&
              producer->inputs().size() == 1 && producer->input(0) &&
              transpose_rank(producer) == *rank &&
              transpose_permutation(producer, *rank) == region.perm) {
            if (region.terminal_set.count(producer)) return false;  // reads the region itself
            add_root(producer);  // another T_p(...) joins: it goes too
            continue;
          }
          if (!acceptable_outside_input(input, static_cast<size_t>(*rank), context)) {
            return false;
          }
        }
      }
      if (work.empty()) return true;
    }
  }

  // An op the region may contain: one output, no subgraph, and a meaning that follows the
  // data's layout (reductions only when they keep their axes), with axes valid at `rank`.
  static bool movable_op(const Node* node, int64_t rank, const PassContext& context) {
    if (node->outputs().size() != 1 || !node->output(0) || !node->subgraphs().empty()) {
      return false;
    }
    switch (axis_rule(node, context)) {
      case AxisRule::kReduction: {
        if (int_attr(node, "keepdims", 1) != 1) return false;
        if (context.traits(node).axes_input) return true;  // checked with the other inputs
        const Attribute* axes = node->find_attribute("axes");
        return !axes || (axes->type == AttrType::kInts &&
                         std::all_of(axes->ints.begin(), axes->ints.end(),
                                     [&](int64_t axis) { return axis_in_range(axis, rank); }));
      }
      case AxisRule::kElementwise:
        return true;
      case AxisRule::kSingleAxis: {
        const auto axis = single_axis(node);
        return axis && axis_in_range(*axis, rank);
      }
      case AxisRule::kOpaque:
        return false;
    }
    return false;
  }

  static bool rewrite_region(Graph& graph, Node* root, PassContext& context) {
    Region region;
    if (!collect(graph, root, context, region)) return false;
    const std::vector<int64_t>& perm = region.perm;
    const size_t rank = perm.size();
    // Terminals whose composed permutation is the identity disappear: their outputs must be
    // replaceable by region values.
    for (Node* terminal : region.terminals) {
      const auto q = transpose_permutation(terminal, static_cast<int64_t>(rank));
      std::vector<int64_t> composed = compose_permutations(perm, *q);
      if (is_identity_permutation(composed)) {
        Value* y = terminal->output(0);
        Value* source = terminal->input(0);
        Value* x = source;
        if (Node* producer = source->producer();
            std::find(region.roots.begin(), region.roots.end(), producer) != region.roots.end()) {
          x = producer->input(0);
        }
        if (kept(y, context) || !can_replace(y, x)) return false;
      }
    }

    // Ops: map axes and transpose constants.
    std::map<const Value*, Value*> transposed_constants;
    auto map_axis = [&](int64_t axis) {
      if (axis < 0) axis += static_cast<int64_t>(rank);
      return perm[static_cast<size_t>(axis)];
    };
    for (Node* node : region.nodes) {
      const OpTraits& traits = context.traits(node);
      if (traits.axes == AxisRule::kReduction) {
        if (traits.axes_input) {
          if (Value* axes_value = node->input(1)) {
            const Tensor* axes = constant_value(axes_value, context);
            std::vector<int64_t> mapped;
            for (int64_t i = 0; i < axes->numel(); ++i) {
              mapped.push_back(map_axis(axes->data<int64_t>()[i]));
            }
            Tensor tensor =
                Tensor::from_vector(DType::kInt64, {static_cast<int64_t>(mapped.size())}, mapped);
            Value* new_axes = graph.add_initializer(graph.unique_name(axes_value->name() + "_perm"),
                                                    std::move(tensor));
            graph.set_node_input(node, 1, new_axes);
          }
        } else if (const Attribute* axes = node->find_attribute("axes")) {
          std::vector<int64_t> mapped;
          for (int64_t axis : axes->ints) mapped.push_back(map_axis(axis));
          node->set_attribute(ints_attribute("axes", std::move(mapped)));
        }
      } else if (traits.axes == AxisRule::kSingleAxis) {
        node->set_attribute(int_attribute("axis", map_axis(*single_axis(node))));
      }
      const size_t first_data_input = 0;
      const size_t data_inputs = traits.axes == AxisRule::kReduction ? 1 : node->inputs().size();
      for (size_t i = first_data_input; i < data_inputs; ++i) {
        Value* input = node->input(i);
        if (!input || region.values.count(input)) continue;
        const Tensor* c = constant_value(input, context);
        if (!c || all_ones(c->shape()) || c->rank() == 0) continue;
        auto [it, inserted] = transposed_constants.try_emplace(input, nullptr);
        if (inserted) {
          it->second = graph.add_initializer(graph.unique_name(input->name() + "_perm"),
                                             transpose_constant(*c, perm));
        }
        graph.set_node_input(node, i, it->second);
      }
    }

    // Values: their shapes in the untransposed layout (new[p[i]] = old[i]).
    for (Value* value : region.values) {
      ValueType type = value->type();
      if (type.is_tensor() && type.shape && type.shape->size() == rank) {
        std::vector<Dim> dims(rank);
        for (size_t i = 0; i < rank; ++i) dims[static_cast<size_t>(perm[i])] = (*type.shape)[i];
        type.shape = std::move(dims);
        value->set_type(std::move(type));
      }
    }

    // Roots: readers of T_p(x) read x.
    for (Node* root_node : region.roots) {
      Value* out = root_node->output(0);
      graph.replace_all_uses(out, root_node->input(0));
      graph.remove_node(root_node);
    }

    // Terminals: T_q(T_p(v)) = T_c(v), c[i] = p[q[i]]; gone when c is the identity.
    for (Node* terminal : region.terminals) {
      const auto q = transpose_permutation(terminal, static_cast<int64_t>(rank));
      std::vector<int64_t> composed = compose_permutations(perm, *q);
      if (is_identity_permutation(composed)) {
        Value* y = terminal->output(0);
        Value* x = terminal->input(0);
        replace_value(graph, y, x);
        graph.remove_node(terminal);
      } else {
        terminal->set_attribute(ints_attribute("perm", std::move(composed)));
      }
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_cancel_transposes_pass() {
  return std::make_unique<CancelTransposesPass>();
}

}  // namespace onnxkit
