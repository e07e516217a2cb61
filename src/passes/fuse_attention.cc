// Pass fuse_attention: scaled dot-product attention over heads, as PyTorch exports it
//   S = MatMul(Q * cq, KT * ck) * c            (each scale optional: Mul / Div by scalars)
//   S = S + Mask                               (optional; or BiasSoftmax(S, Mask) below)
//   S = Where(Keep, S, fill)                   (optional)
//   Y = MatMul(Softmax(S, last axis), V)
// becomes com.onnxkit Attention(Q, K, V, Mask, Keep) (ops/fused_ops.h) with
// scale = cq * ck * c and masked_value = fill. BERT (additive mask), GPT-2 (causal Where)
// and ViT (no mask, Q pre-scaled) export these.
//
// K: when KT is a Transpose of some X, K = X with the last two axes of that transpose swapped
// back (no Transpose when that is the identity, an existing Transpose of X when there is one),
// so the kernel reads K as [B, H, Sk, D]; otherwise KT is passed with k_transposed = 1.
//
// Rank 3 (torch.nn.MultiheadAttention: [B*H, S, D]) is lifted to [B*H, 1, S, D]: a
// Transpose(Reshape(x, shape)) operand gets a trailing 1 in the Reshape target and the
// Transpose moves it to axis 1 (no new node), other operands an Unsqueeze; the output goes
// back through the Transpose that follows (when only Reshapes read that) or a Squeeze.
//
// Not fused: Where before the additive mask (Softmax(Where(..) + Mask): masked entries then
// hold fill + Mask, which the contract cannot express), masks or batch dims that certainly do
// not match (a known 1 against an unknown dim counts as broadcasting). Dims that may match are
// left to the kernel, which fails naming the node if they do not.
//
// Afterwards the symbols of the old output's dims that the fused output knows better (GPT-2's
// Where gives its output a fresh symbol for the sequence) are renamed in the graph's types, so
// later passes (fuse_skip_layer_norm) can see that a residual Add has equal shapes.
#include <cmath>
#include <map>

#include "ops/fused_ops.h"
#include "passes/passes.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

using Dims = std::vector<Dim>;

// A value with the Mul / Div by scalar constants above it peeled off.
struct Peeled {
  Value* value = nullptr;
  double factor = 1;
};

Peeled peel_scale(const FusionScope& scope, Value* value, std::vector<Node*>& matched) {
  Peeled peeled{value, 1.0};
  while (scope.single_use(peeled.value)) {
    Node* node = peeled.value->producer();
    if (!node || node->graph() != &scope.graph() ||
        !(is_onnx_op(node, "Mul") || is_onnx_op(node, "Div"))) {
      break;
    }
    auto c = scalar_operand(node, scope.context());
    const auto rank = rank_of(peeled.value);
    if (!c || c->constant == 0 || !std::isfinite(c->constant) || !rank ||
        static_cast<int64_t>(
            constant_value(node->input(1 - c->other_index), scope.context())->rank()) > *rank) {
      break;
    }
    peeled.factor *= node->op_type() == "Mul" ? c->constant : 1.0 / c->constant;
    matched.push_back(node);
    peeled.value = c->other;
  }
  return peeled;
}

std::optional<std::vector<int64_t>> perm_of(const Node* transpose, size_t rank) {
  const Attribute* a = transpose->find_attribute("perm");
  if (!a || a->type != AttrType::kInts || a->ints.size() != rank) return std::nullopt;
  return a->ints;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Dims permuted(const Dims& dims, const std::vector<int64_t>& perm) {
  Dims out;
  for (int64_t p : perm) out.push_back(dims[p]);
  return out;
}

// An Attention input as built from the graph: `base`, transposed by `perm` when not empty.
struct Operand {
  Value* base = nullptr;
  std::vector<int64_t> perm;
};

// One attempt at the subgraph ending in MatMul `output_matmul`.
class Fusion {
 public:
  Fusion(const FusionScope& scope, Node* output_matmul)
      : scope_(scope), context_(scope.context()), graph_(scope.graph()), last_(output_matmul) {}

  bool run() {
    if (!match()) return false;
    rewrite();
    return true;
  }

 private:
  bool match() {
    if (!is_onnx_op(last_, "MatMul")) return false;
    Value* probs = last_->input(0);
    v_ = last_->input(1);
    const auto rank = rank_of(v_);
    if (!scope_.single_use(probs) || !rank || (*rank != 3 && *rank != 4)) return false;
    rank_ = *rank;
    matched_.push_back(last_);

    Node* softmax = probs->producer();
    if (!softmax || softmax->graph() != &graph_) return false;
    int64_t default_axis = -1;
    if (is_onnx_op(softmax, "Softmax")) {
      // Before opset 13 Softmax flattens from `axis` on: the last axis only when it is last.
      if (context_.opset("") < 13) default_axis = 1;
    } else if (softmax->domain() == kOnnxkitDomain && softmax->op_type() == "BiasSoftmax") {
      mask_ = softmax->input(1);
    } else {
      return false;
    }
    const int64_t axis = int_attr(softmax, "axis", default_axis);
    if (axis != -1 && axis != rank_ - 1) return false;
    matched_.push_back(softmax);

    Value* scores = softmax->input(0);
    if (Node* where = scope_.single_use(scores) ? scope_.producer(scores, "Where") : nullptr) {
      // BiasSoftmax(Where(..), Mask) adds the mask after the keep mask: not the contract.
      if (mask_) return false;
      auto fill = scalar_constant(where->input(2), context_);
      if (!fill || (where->input(2)->has_initializer() &&
                    static_cast<int64_t>(where->input(2)->initializer().rank()) > rank_)) {
        return false;
      }
      keep_ = where->input(0);
      masked_value_ = *fill;
      scores = where->input(1);
      matched_.push_back(where);
    }
    if (Node* add =
            !mask_ && scope_.single_use(scores) ? scope_.producer(scores, "Add") : nullptr) {
      for (size_t side = 0; side < 2 && !mask_; ++side) {
        std::vector<Node*> peeled_nodes;
        Peeled inner = peel_scale(scope_, add->input(side), peeled_nodes);
        if (scope_.single_use(inner.value) && scope_.producer(inner.value, "MatMul")) {
          mask_ = add->input(1 - side);
          scores = add->input(side);
          matched_.push_back(add);
        }
      }
    }

    Peeled peeled = peel_scale(scope_, scores, matched_);
    Node* qk = scope_.single_use(peeled.value) ? scope_.producer(peeled.value, "MatMul") : nullptr;
    if (!qk || !qk->input(0) || !qk->input(1)) return false;
    matched_.push_back(qk);
    Peeled q = peel_scale(scope_, qk->input(0), matched_);
    Peeled kt = peel_scale(scope_, qk->input(1), matched_);
    scale_ = peeled.factor * q.factor * kt.factor;
    q_ = q.value;
    kt_ = kt.value;
    return check_types();
  }

  bool check_types() {
    const auto q = dims_of(q_), kt = dims_of(kt_), v = dims_of(v_);
    dtype_ = dtype_of(q_);
    if (!q || !kt || !v || static_cast<int64_t>(q->size()) != rank_ ||
        static_cast<int64_t>(kt->size()) != rank_ || !dtype_is_float(dtype_) ||
        dtype_of(kt_) != dtype_ || dtype_of(v_) != dtype_ || !std::isfinite(scale_)) {
      return false;
    }
    const size_t batch_rank = static_cast<size_t>(rank_ - 2);
    for (size_t i = 0; i < batch_rank; ++i) {
      if (!may_equal((*q)[i], (*kt)[i]) || !may_equal((*q)[i], (*v)[i])) return false;
    }
    // Scores: [batch dims of Q, Sq, Sk]; the masks must broadcast into them.
    Dims scores(q->begin(), q->begin() + static_cast<int64_t>(batch_rank));
    scores.push_back((*q)[batch_rank]);
    scores.push_back((*kt)[batch_rank + 1]);
    // Lifting rank 3 to 4 moves a rank-3 mask's dims: only masks of rank <= 2 then.
    const size_t max_mask_rank = rank_ == 4 ? 4 : 2;
    for (const auto& [mask, dtype] : {std::pair{mask_, dtype_}, {keep_, DType::kBool}}) {
      if (!mask) continue;
      const auto dims = dims_of(mask);
      if (!dims || dims->size() > max_mask_rank || dtype_of(mask) != dtype) return false;
      for (size_t i = 0; i < dims->size(); ++i) {
        const Dim& m = (*dims)[dims->size() - 1 - i];
        const Dim& s = scores[scores.size() - 1 - i];
        if (!(m.is_known() && m.value == 1) && !may_equal(m, s)) return false;
      }
    }
    q_dims_ = *q;
    v_dims_ = *v;
    return scope_.replaceable(last_->output(0));
  }

  void rewrite() {
    // K: undo the transpose that made K^T where possible.
    Operand k{kt_, {}};
    bool k_transposed = true;
    if (Node* transpose = scope_.producer(kt_, "Transpose")) {
      if (auto perm = perm_of(transpose, static_cast<size_t>(rank_))) {
        std::swap((*perm)[rank_ - 2], (*perm)[rank_ - 1]);
        Value* source = transpose->input(0);
        k_transposed = false;
        if (is_identity(*perm)) {
          k = {source, {}};
        } else if (Value* sibling = find_transpose(source, *perm)) {
          k = {sibling, {}};
        } else if (scope_.single_use(kt_)) {
          k = {source, *perm};
        } else {
          k_transposed = true;
        }
        if (!k_transposed) matched_.push_back(transpose);
      }
    }
    Operand q = split_transpose(q_), v = split_transpose(v_);

    Value* q4 = materialize(q);
    Value* k4 = materialize(k);
    Value* v4 = materialize(v);
    Value* mask = mask_;
    Value* keep = keep_;
    std::vector<Value*> inputs{q4, k4, v4, mask};
    if (keep) inputs.push_back(keep);
    while (!inputs.back()) inputs.pop_back();
    import_onnxkit_domain(*context_.model);
    Value* old_output = last_->output(0);
    Node* attention =
        graph_.add_node("Attention", inputs, {graph_.unique_name(old_output->name() + "_fused")},
                        std::string(kOnnxkitDomain), last_->name(), last_);
    attention->set_attribute(float_attribute("scale", static_cast<float>(scale_)));
    if (keep) {
      attention->set_attribute(float_attribute("masked_value", static_cast<float>(masked_value_)));
    }
    if (k_transposed) attention->set_attribute(int_attribute("k_transposed", 1));
    const Dims q4_dims = dims_of(q4).value(), v4_dims = dims_of(v4).value();
    Value* y4 = attention->output(0);
    y4->set_type(ValueType::tensor(dtype_, Dims{q4_dims[0], q4_dims[1], q4_dims[2], v4_dims[3]}));

    // What replaces the old output: the Attention output, or its rank-3 form.
    const Dims new_dims = rank_ == 4 ? *dims_of(y4) : Dims{q_dims_[0], q_dims_[1], v_dims_[2]};
    const Dims old_dims = dims_of(old_output).value_or(Dims{});
    std::vector<std::pair<Value*, Value*>> replaced;
    if (rank_ == 4) {
      replaced.emplace_back(old_output, y4);
    } else if (Node* transpose = output_transpose(old_output)) {
      auto perm = perm_of(transpose, 3).value();
      const int64_t axis_of[] = {0, 2, 3};
      std::vector<int64_t> perm4{axis_of[perm[0]], axis_of[perm[1]], axis_of[perm[2]], 1};
      Value* out = transpose_value(y4, perm4);
      matched_.push_back(transpose);
      replaced.emplace_back(transpose->output(0), out);
    } else {
      replaced.emplace_back(old_output, squeeze_axis1(y4));
    }
    for (Value* value : created_) {
      if (value->type().is_tensor()) graph_.add_value_info(value);
    }
    replace_subgraph(graph_, replaced, matched_);
    if (old_dims.size() == new_dims.size()) rename_symbols(old_dims, new_dims);
  }

  // An existing Transpose of `source` by `perm` in this graph, or nullptr.
  Value* find_transpose(const Value* source, const std::vector<int64_t>& perm) const {
    for (const Use& use : source->uses()) {
      Node* node = use.node;
      if (is_onnx_op(node, "Transpose") && node->graph() == &graph_ &&
          perm_of(node, perm.size()) == perm && node->output(0)) {
        return node->output(0);
      }
    }
    return nullptr;
  }

  // A rank-3 operand made by a Transpose read only here becomes (its input, its perm), so
  // lifting can move the new axis through the Transpose.
  Operand split_transpose(Value* value) {
    if (rank_ == 3 && scope_.single_use(value)) {
      if (Node* transpose = scope_.producer(value, "Transpose")) {
        if (auto perm = perm_of(transpose, 3)) {
          matched_.push_back(transpose);
          return {transpose->input(0), *perm};
        }
      }
    }
    return {value, {}};
  }

  // The operand as a rank-4 value.
  Value* materialize(const Operand& operand) {
    if (rank_ == 4) {
      return operand.perm.empty() ? operand.base : transpose_value(operand.base, operand.perm);
    }
    if (operand.perm.empty()) return unsqueeze(operand.base, 1);
    // Transpose(base, p) of rank 3 + a new axis 1 = Transpose(base + trailing 1, [p0, 3, p1,
    // p2]).
    Value* base4 = reshape_with_trailing_one(operand.base);
    if (!base4) base4 = unsqueeze(operand.base, 3);
    const auto& p = operand.perm;
    return transpose_value(base4, {p[0], 3, p[1], p[2]});
  }

  // Reshape(x, shape) read only by the matched Transpose: the same Reshape with a 1
  // appended to its target, or nullptr.
  Value* reshape_with_trailing_one(Value* value) {
    Node* reshape = scope_.single_use(value) ? scope_.producer(value, "Reshape") : nullptr;
    if (!reshape || int_attr(reshape, "allowzero", 0) != 0) return nullptr;
    const Tensor* shape = constant_value(reshape->input(1), context_);
    const auto dims = dims_of(value);
    if (!shape || shape->dtype() != DType::kInt64 || shape->numel() != 3 || !dims) return nullptr;
    std::vector<int64_t> target(shape->data<int64_t>(), shape->data<int64_t>() + 3);
    target.push_back(1);
    Value* target_value = int64_constant(graph_, reshape->input(1)->name() + "_rank4", target);
    Value* out = add_node("Reshape", {reshape->input(0), target_value}, value->name() + "_rank4");
    Dims out_dims = *dims;
    out_dims.push_back(Dim::known(1));
    out->set_type(ValueType::tensor(dtype_of(value), out_dims));
    matched_.push_back(reshape);
    return out;
  }

  Value* transpose_value(Value* value, const std::vector<int64_t>& perm) {
    Value* out = add_node("Transpose", {value}, value->name() + "_transposed");
    out->producer()->set_attribute(ints_attribute("perm", perm));
    if (auto dims = dims_of(value)) {
      out->set_type(ValueType::tensor(dtype_of(value), permuted(*dims, perm)));
    }
    return out;
  }

  Value* unsqueeze(Value* value, int64_t axis) {
    Value* out = axes_node("Unsqueeze", value, axis);
    if (auto dims = dims_of(value)) {
      dims->insert(dims->begin() + axis, Dim::known(1));
      out->set_type(ValueType::tensor(dtype_of(value), *dims));
    }
    return out;
  }

  Value* squeeze_axis1(Value* value) {
    Value* out = axes_node("Squeeze", value, 1);
    if (auto dims = dims_of(value)) {
      dims->erase(dims->begin() + 1);
      out->set_type(ValueType::tensor(dtype_of(value), *dims));
    }
    return out;
  }

  // Squeeze / Unsqueeze of one axis: axes is an input from opset 13 on, an attribute before.
  Value* axes_node(const std::string& op, Value* value, int64_t axis) {
    if (context_.opset("") >= 13) {
      return add_node(op, {value, int64_constant(graph_, value->name() + "_axes", {axis})},
                      value->name() + "_" + op);
    }
    Value* out = add_node(op, {value}, value->name() + "_" + op);
    out->producer()->set_attribute(ints_attribute("axes", {axis}));
    return out;
  }

  Value* add_node(const std::string& op, std::vector<Value*> inputs, const std::string& name) {
    Node* node = graph_.add_node(op, std::move(inputs), {graph_.unique_name(name)}, "",
                                 graph_.unique_name(last_->name() + "_" + op), last_);
    created_.push_back(node->output(0));
    return node->output(0);
  }

  // The Transpose that alone reads the rank-3 output, when every reader of its result is a
  // Reshape that does not care about a trailing 1 (no 0 at index 3 of its target).
  Node* output_transpose(Value* output) const {
    Node* transpose = scope_.only_reader(output);
    if (!is_onnx_op(transpose, "Transpose") || !perm_of(transpose, 3)) return nullptr;
    Value* result = transpose->output(0);
    if (is_graph_output(result) || kept(context_, result) || !scope_.replaceable(result) ||
        result->uses().empty()) {
      return nullptr;
    }
    for (const Use& use : result->uses()) {
      Node* reshape = use.node;
      if (!is_onnx_op(reshape, "Reshape") || use.input != 0 ||
          int_attr(reshape, "allowzero", 0) != 0) {
        return nullptr;
      }
      const Tensor* shape = constant_value(reshape->input(1), context_);
      if (!shape || shape->dtype() != DType::kInt64) return nullptr;
      for (int64_t i = 3; i < shape->numel(); ++i) {
        if (shape->data<int64_t>()[i] == 0) return nullptr;
      }
    }
    return transpose;
  }

  // Renames, in this graph's value types, each symbol of `old_dims` that `new_dims` says
  // better (a number or another symbol); symbols the graph's inputs use stay.
  void rename_symbols(const Dims& old_dims, const Dims& new_dims) {
    std::map<std::string, Dim> renamed;
    for (size_t i = 0; i < old_dims.size(); ++i) {
      const Dim& from = old_dims[i];
      const Dim& to = new_dims[i];
      if (!from.is_symbolic() || same_dim(from, to) || !(to.is_known() || to.is_symbolic())) {
        continue;
      }
      renamed.emplace(from.param, to);
    }
    for (const Value* input : graph_.inputs()) {
      if (auto dims = dims_of(input)) {
        for (const Dim& d : *dims) renamed.erase(d.param);
      }
    }
    if (renamed.empty()) return;
    auto rename = [&](Value* value) {
      if (!value || !value->type().is_tensor() || !value->type().shape) return;
      ValueType type = value->type();
      bool changed = false;
      for (Dim& d : *type.shape) {
        auto it = d.is_symbolic() ? renamed.find(d.param) : renamed.end();
        if (it == renamed.end()) continue;
        d = it->second;
        changed = true;
      }
      if (changed) value->set_type(std::move(type));
    };
    for (Node* node : graph_.nodes()) {
      for (Value* output : node->outputs()) rename(output);
    }
  }

  const FusionScope& scope_;
  const PassContext& context_;
  Graph& graph_;
  Node* last_;
  std::vector<Node*> matched_;
  std::vector<Value*> created_;  // outputs of the standard nodes the rewrite adds
  int64_t rank_ = 0;
  Value* q_ = nullptr;
  Value* kt_ = nullptr;
  Value* v_ = nullptr;
  Value* mask_ = nullptr;
  Value* keep_ = nullptr;
  double masked_value_ = 0;
  double scale_ = 1;
  DType dtype_ = DType::kUndefined;
  Dims q_dims_, v_dims_;
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_attention_pass() {
  return make_fusion_pass("fuse_attention", [](const FusionScope& scope, Node* node) {
    return Fusion(scope, node).run();
  });
}

}  // namespace onnxkit
