// Pass merge_transposes: Consecutive Transposes become one (or none).
//
// Transpose(perm2) of Transpose(perm1) of x is Transpose(c) of x with c[i] = perm1[perm2[i]].
// The second node is rewritten in place; the first goes when nothing else reads it. When c
// is the identity the second node disappears too (even if the first has other readers).
#include <numeric>
#include <optional>
#include <unordered_set>

#include "passes/passes.h"

namespace onnxkit {
namespace {

size_t merge_transposes(Graph& graph, Node* second, PassContext& context) {
  Value* middle = second->input(0);
  if (!middle || second->outputs().size() != 1 || !second->output(0)) return 0;
  Node* first = middle->producer();
  // The first node must be ours to edit: values of enclosing graphs are read-only here.
  if (!is_onnx_op(first, "Transpose") || first->graph() != &graph) return 0;
  Value* x = first->input(0);
  if (!x) return 0;

  const bool both_default = !first->find_attribute("perm") && !second->find_attribute("perm");
  std::vector<int64_t> composed;
  if (!both_default) {
    // The rank, from whichever perm is given (or the types when one is absent).
    std::optional<int64_t> rank = known_rank(x);
    if (!rank) rank = known_rank(middle);
    if (const Attribute* a = first->find_attribute("perm"))
      rank = static_cast<int64_t>(a->ints.size());
    if (const Attribute* a = second->find_attribute("perm"))
      rank = static_cast<int64_t>(a->ints.size());
    auto perm1 = transpose_permutation(first, rank);
    auto perm2 = transpose_permutation(second, rank);
    if (!perm1 || !perm2 || perm1->size() != perm2->size()) return 0;
    composed = compose_permutations(*perm1, *perm2);
  }
  const bool first_removable =
      middle->uses().size() == 1 && !is_graph_output(middle) && !kept(middle, context);

  if (both_default || is_identity_permutation(composed)) {
    // x comes back unchanged: drop the second node (and the first when nothing else
    // reads it), keeping the graph's output names.
    Value* y = second->output(0);
    if (kept(y, context)) return 0;
    bypass_node(graph, second, y, x, y->name() + "_identity");
  } else {
    // Only worth it when the first node goes away.
    if (!first_removable) return 0;
    second->set_attribute(ints_attribute("perm", composed));
    graph.set_node_input(second, 0, x);
  }
  if (is_unused(middle) && !kept(middle, context)) {
    graph.remove_node(first);
  }
  return 1;
}

}  // namespace

std::unique_ptr<GraphPass> make_merge_transposes_pass() {
  return make_rule_pass("merge_transposes", {"Transpose"}, merge_transposes,
                        NodeOrder::kTopological);
}

}  // namespace onnxkit
