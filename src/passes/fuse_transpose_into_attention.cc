// Pass fuse_transpose_into_attention: the Transposes that split a model's [B, S, H*D]
// projections into heads ([B, S, H, D] -> [B, H, S, D]) and join the heads back become
// com.onnxkit Attention's q_perm / k_perm / v_perm / y_perm (ops/fused_ops.h): the kernel
// reads Q, K and V and writes Y through strides instead of four copies per layer.
//
// An input Transpose is folded (its perm composed with the one the Attention already has)
// when the head dim stays the innermost stored dim, or only size-1 dims follow it, so the
// rows the kernel reads stay contiguous; the Transpose itself goes when nothing else reads
// it. An output Transpose is folded the same way when it is the
// only reader of the Attention output.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ops/fused_ops.h"
#include "passes/passes.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

using Perm = std::vector<int64_t>;

constexpr const char* kPermNames[] = {"q_perm", "k_perm", "v_perm", "y_perm"};

// The Attention's perm of operand `which` (absent: identity); nullopt when it is no
// permutation of 4 axes (the kernel rejects the node; nothing is folded into it).
std::optional<Perm> attention_perm(const Node* attention, size_t which) {
  const Attribute* a = attention->find_attribute(kPermNames[which]);
  if (!a) return Perm{0, 1, 2, 3};
  if (a->type != AttrType::kInts) return std::nullopt;
  Perm sorted = a->ints;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != Perm{0, 1, 2, 3}) return std::nullopt;
  return a->ints;
}

// True when every stored dim after `axis` is known to be 1: a row along `axis` is contiguous.
bool innermost(const std::optional<std::vector<Dim>>& stored, int64_t axis) {
  if (axis == 3) return true;
  if (!stored || stored->size() != 4) return false;
  for (int64_t i = axis + 1; i < 4; ++i) {
    const Dim& dim = (*stored)[i];
    if (!dim.is_known() || dim.value != 1) return false;
  }
  return true;
}

class FuseTransposeIntoAttentionPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_transpose_into_attention"; }

  size_t run(Graph& graph, PassContext& context) override {
    FusionScope scope(graph, context);
    size_t changes = 0;
    // The Attentions first: folding removes Transposes, which a snapshot of all nodes holds.
    std::vector<Node*> attentions;
    for (Node* node : graph.nodes()) {
      if (is_onnxkit_op(node, "Attention")) attentions.push_back(node);
    }
    for (Node* node : attentions) {
      for (size_t input = 0; input < 3; ++input) {
        while (fold_input(scope, node, input)) ++changes;
      }
      while (fold_output(scope, node)) ++changes;
    }
    return changes;
  }

 private:
  // Q, K or V = Transpose(X, p): the Attention reads X with its perm composed with p.
  static bool fold_input(const FusionScope& scope, Node* attention, size_t input) {
    Value* operand = attention->input(input);
    Node* transpose = operand ? scope.producer(operand, "Transpose") : nullptr;
    if (!transpose || !transpose->input(0)) return false;
    const auto perm = transpose_permutation(transpose, 4);
    const auto current = attention_perm(attention, input);
    if (!perm || !current) return false;
    // The operand as the Attention reads it is Transpose(operand, current); operand =
    // Transpose(X, perm), so axis i of what it reads is axis perm[current[i]] of X.
    const Perm composed = compose_permutations(*perm, *current);
    // The head dim: the last axis, or axis 2 of a K given transposed ([B, H, D, Sk]).
    const bool k_transposed = input == 1 && int_attr(attention, "k_transposed", 0) != 0;
    const int64_t head_axis = composed[k_transposed ? 2 : 3];
    if (!innermost(dims_of(transpose->input(0)), head_axis)) return false;
    scope.graph().set_node_input(attention, input, transpose->input(0));
    set_perm(attention, input, composed);
    // The extended level runs no dead_code_elimination after it: an unread Transpose goes here.
    if (is_unused(operand) && !kept(scope.context(), operand)) scope.graph().remove_node(transpose);
    return true;
  }

  // The only reader of Y is Transpose(Y, p): the Attention writes that result itself.
  static bool fold_output(const FusionScope& scope, Node* attention) {
    Value* y = attention->output(0);
    if (!y || !scope.single_use(y) || !scope.replaceable(y)) return false;
    Node* transpose = scope.only_reader(y);
    if (!is_onnx_op(transpose, "Transpose") || transpose->graph() != &scope.graph() ||
        !transpose->output(0) || !scope.replaceable(transpose->output(0))) {
      return false;
    }
    const auto perm = transpose_permutation(transpose, 4);
    const auto current = attention_perm(attention, 3);
    if (!perm || !current) return false;
    // Stored Y was Transpose(Y, current); now Transpose(that, perm): axis j of the result is
    // axis current[perm[j]] of Y.
    const Perm composed = compose_permutations(*current, *perm);
    int64_t head_position = 0;
    while (composed[head_position] != 3) ++head_position;
    if (!innermost(dims_of(transpose->output(0)), head_position)) return false;
    set_perm(attention, 3, composed);
    y->set_type(transpose->output(0)->type());  // Y is stored as the Transpose's result
    replace_subgraph(scope.graph(), {{transpose->output(0), y}}, {transpose});
    return true;
  }

  static void set_perm(Node* attention, size_t which, const Perm& perm) {
    if (is_identity_permutation(perm)) {
      attention->remove_attribute(kPermNames[which]);
    } else {
      attention->set_attribute(ints_attribute(kPermNames[which], perm));
    }
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_transpose_into_attention_pass() {
  return std::make_unique<FuseTransposeIntoAttentionPass>();
}

}  // namespace onnxkit
