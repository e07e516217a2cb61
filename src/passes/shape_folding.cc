// Pass shape_folding: Shape computations (Shape, Size, Gather, Slice, Concat, Unsqueeze,
// Squeeze, Cast, arithmetic) fold to constants where the dims they read are known, even when
// other dims stay symbolic.
//
// A small symbolic evaluator runs over 1-D (or scalar) integer "shape vectors"
// (ops/shape_vector.h): each element is a number or a symbolic expression over dims, and
// each op that takes part computes its output from its inputs by the rule registered with its
// definition. Then:
//  - a shape value that becomes fully known replaces its producer with an initializer;
//  - a Reshape whose target is partly known gets a constant target with 0 ("copy the input's
//    dim") and at most one -1 where that is exact;
//  - shape nodes this made dead are removed, and context.not_folded says why the rest stayed.
#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/graph.h"
#include "ops/shape_vector.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// Bounds the recursion through long shape chains (and through enclosing graphs).
constexpr int kMaxDepth = 400;
// Steps (each followed by shape inference) in one application of the pass.
constexpr int kMaxSteps = 64;

// Evaluates values as shape vectors: constants as they are, the rest by their producer's
// shape-vector rule (OpDefinition::shape_vector), once per value.
class Evaluator {
 public:
  explicit Evaluator(const PassContext& context) : context_(context) {}

  // The shape vector `value` holds, or nullptr when it is not one this pass understands.
  const ShapeVector* eval(const Value* value, int depth = 0) {
    if (!value) return nullptr;
    if (auto it = memo_.find(value); it != memo_.end()) return it->second ? &*it->second : nullptr;
    std::optional<ShapeVector> result;
    if (depth < kMaxDepth) result = compute(value, depth + 1);
    if (result && !matches_type(*result, value->type())) result.reset();
    auto [it, inserted] = memo_.emplace(value, std::move(result));
    return it->second ? &*it->second : nullptr;
  }

 private:
  // A rule reads its node's inputs through the evaluator, one level deeper.
  class RuleContext : public ShapeVectorContext {
   public:
    RuleContext(Evaluator& evaluator, const Node& node, int64_t opset, int depth)
        : ShapeVectorContext(node, opset), evaluator_(evaluator), depth_(depth) {}
    const ShapeVector* input(size_t index) const override {
      return evaluator_.eval(node().input(index), depth_);
    }

   private:
    Evaluator& evaluator_;
    int depth_;
  };

  // The declared type must agree with what was computed; a mismatch means a misreading.
  static bool matches_type(const ShapeVector& vec, const ValueType& type) {
    if (!type.is_tensor()) return type.kind == ValueType::Kind::kNone;
    if (type.elem_type != DType::kUndefined && type.elem_type != vec.dtype) return false;
    if (!type.shape) return true;
    if (type.shape->size() != (vec.scalar ? 0u : 1u)) return false;
    if (vec.scalar) return true;
    const Dim& dim = (*type.shape)[0];
    return !dim.is_known() || dim.value == static_cast<int64_t>(vec.elems.size());
  }

  std::optional<ShapeVector> compute(const Value* value, int depth) {
    if (const Tensor* t = constant_value(value, context_)) return ShapeVector::from_tensor(*t);
    const Node* node = value->producer();
    if (!node || !node->domain().empty() || node->outputs().size() != 1) return std::nullopt;
    const int64_t opset = context_.opset("");
    const OpDefinition* definition = context_.ops().definition(*node, opset);
    if (!definition || !definition->shape_vector) return std::nullopt;
    return definition->shape_vector(RuleContext(*this, *node, opset, depth));
  }

  const PassContext& context_;
  std::unordered_map<const Value*, std::optional<ShapeVector>> memo_;
};

// "depends on dynamic dim 'batch'", "depends on dynamic dims 'batch', 'seq'", ...
std::string why_dynamic(const ShapeVector& vec) {
  std::set<std::string> symbols, others;
  for (const SymbolicInt& e : vec.elems) {
    if (e.known) continue;
    symbols.insert(e.symbols.begin(), e.symbols.end());
    others.insert(e.others.begin(), e.others.end());
  }
  std::vector<std::string> parts;
  if (!symbols.empty()) {
    std::string part = symbols.size() == 1 ? "dynamic dim " : "dynamic dims ";
    bool first = true;
    for (const std::string& s : symbols) {
      part += (first ? "'" : ", '") + s + "'";
      first = false;
    }
    parts.push_back(part);
  }
  for (const std::string& o : others) parts.push_back(o);
  std::string text = "depends on ";
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? " and " : "") + parts[i];
  return parts.empty() ? "shape value stays dynamic" : text;
}

// The constant target equivalent to the partly known `target` for Reshape(x, target):
// known elements as they are, an element equal to x's own dim at that index as 0 (copy),
// and at most one other (non-negative) element as -1. (-1 assumes the other target dims are
// not 0 at run time, i.e. no empty tensors; PyTorch's own exports make the same assumption.)
std::optional<std::vector<int64_t>> constant_reshape_target(const ShapeVector& target,
                                                            const Value* x, bool allowzero) {
  std::optional<size_t> rank;
  if (x->type().is_tensor() && x->type().shape) rank = x->type().shape->size();
  bool has_minus_one = false, has_zero = false;
  for (const SymbolicInt& e : target.elems) {
    has_minus_one |= e.is(-1);
    has_zero |= e.is(0);
  }
  std::vector<int64_t> out;
  bool inferred = false;
  for (size_t i = 0; i < target.elems.size(); ++i) {
    const SymbolicInt& e = target.elems[i];
    if (e.known) {
      out.push_back(*e.known);
    } else if (!allowzero && rank && i < *rank && e.same_as(SymbolicInt::dim(x, i))) {
      out.push_back(0);
    } else {
      // -1 is exact for one element that is a real extent; it may not join another -1, nor
      // a literal 0 under allowzero (ONNX forbids that combination).
      if (inferred || has_minus_one || !e.nonneg || (allowzero && has_zero)) return std::nullopt;
      inferred = true;
      out.push_back(-1);
    }
  }
  return out;
}

// ONNX shape inference names a dim it cannot relate to others with a fresh symbol
// ("unk__8"), so `batch` after Reshape(ids, [-1, seq]) and `seq` after a residual Add whose
// other side came through a computed Reshape look unrelated, and every layer's shape
// chain stays distinct. Two sound rules tie such generated symbols back to known ones:
//  - a broadcasting op whose inputs all have the same symbol s at an axis (ignoring 1s)
//    has s there in its output;
//  - a Reshape preserves the element count: with all other factors cancelled, one
//    generated output symbol equals the one input symbol left;
//  - Range(0, d, 1) over a dim d has d elements (ONNX inference leaves its length unknown,
//    so a causal mask built from it loses `seq`): its output gets d's symbol.
// Only generated names are renamed; names from the model's inputs are never changed.
class GeneratedSymbols {
 public:
  static bool generated(const std::string& name) { return name.rfind("unk__", 0) == 0; }

  std::string find(const std::string& name) {
    auto it = parent_.find(name);
    if (it == parent_.end() || it->second == name) return name;
    std::string root = find(it->second);
    it->second = root;
    return root;
  }
  // Records a == b when one of them is generated; a user-given root wins.
  void unite(const std::string& a, const std::string& b) {
    std::string ra = find(a), rb = find(b);
    if (ra == rb) return;
    if (!generated(ra)) std::swap(ra, rb);
    if (!generated(ra)) return;  // two different user names: not ours to equate
    parent_[ra] = rb;
    parent_.try_emplace(rb, rb);
  }
  bool empty() const { return parent_.empty(); }

 private:
  std::map<std::string, std::string> parent_;
};

// The dim symbol a scalar shape value is exactly (Gather(Shape(x), i) of a symbolic dim).
std::optional<std::string> dim_symbol(Evaluator& evaluator, const Value* value) {
  const ShapeVector* vec = evaluator.eval(value);
  if (!vec || vec->elems.size() != 1) return std::nullopt;
  const std::string* name = vec->elems[0].named_dim();
  if (!name) return std::nullopt;
  return *name;
}

// Range(0, d, 1): the dim symbol d, when its output's length is exactly d.
std::optional<std::string> range_length_symbol(Evaluator& evaluator, const Node* node) {
  if (node->inputs().size() != 3) return std::nullopt;
  const ShapeVector* start = evaluator.eval(node->input(0));
  const ShapeVector* delta = evaluator.eval(node->input(2));
  if (!start || !delta || start->elems.size() != 1 || delta->elems.size() != 1 ||
      !start->elems[0].is(0) || !delta->elems[0].is(1)) {
    return std::nullopt;
  }
  return dim_symbol(evaluator, node->input(1));
}

size_t unify_generated_symbols(Graph& graph, const PassContext& context) {
  GeneratedSymbols symbols;
  Evaluator evaluator(context);
  size_t typed = 0;  // Range outputs given their length
  auto dims_of = [](const Value* v) -> const std::vector<Dim>* {
    if (!v || !v->type().is_tensor() || !v->type().shape) return nullptr;
    return &*v->type().shape;
  };
  const std::vector<Node*> order = graph.topological_order();
  for (Node* node : order) {
    if (!node->domain().empty() || !node->output(0)) continue;
    const std::string& op = node->op_type();
    if (op == "Range") {
      if (auto length = range_length_symbol(evaluator, node)) {
        Value* output = node->output(0);
        const std::vector<Dim>* out = dims_of(output);
        if (!out && output->type().is_tensor()) {
          ValueType type = output->type();
          type.shape = std::vector<Dim>{Dim::symbol(*length)};
          output->set_type(std::move(type));
          ++typed;
        } else if (out && out->size() == 1 && (*out)[0].is_symbolic()) {
          symbols.unite((*out)[0].param, *length);
        }
      }
      continue;
    }
    const std::vector<Dim>* out = dims_of(node->output(0));
    if (!out) continue;
    if (context.traits(node).broadcasting) {
      const size_t rank = out->size();
      for (size_t axis = 0; axis < rank; ++axis) {
        const Dim& o = (*out)[axis];
        if (!o.is_symbolic() || !GeneratedSymbols::generated(symbols.find(o.param))) continue;
        std::string common;
        bool agree = true;
        for (const Value* input : node->inputs()) {
          const std::vector<Dim>* in = dims_of(input);
          if (!in) {
            if (input) agree = false;  // unknown rank: could be anything
            continue;
          }
          if (in->size() + axis < rank) continue;  // broadcast from an implicit 1
          const Dim& d = (*in)[in->size() - rank + axis];
          if (d.is_known() && d.value == 1) continue;
          if (!d.is_symbolic()) {
            agree = false;
            break;
          }
          const std::string name = symbols.find(d.param);
          if (common.empty()) common = name;
          agree = agree && name == common;
        }
        if (agree && !common.empty()) symbols.unite(o.param, common);
      }
    } else if (op == "Reshape") {
      const std::vector<Dim>* in = dims_of(node->input(0));
      if (!in) continue;
      std::multiset<std::string> in_symbols, out_symbols;
      int64_t in_known = 1, out_known = 1;
      bool usable = true;
      for (const Dim& d : *in) {
        if (d.is_known()) {
          // A declared shape may be any numbers: one whose size overflows ties nothing.
          if (__builtin_mul_overflow(in_known, d.value, &in_known)) usable = false;
        } else if (d.is_symbolic()) {
          in_symbols.insert(symbols.find(d.param));
        } else {
          usable = false;
        }
      }
      for (const Dim& d : *out) {
        if (d.is_known()) {
          // A declared shape may be any numbers: one whose size overflows ties nothing.
          if (__builtin_mul_overflow(out_known, d.value, &out_known)) usable = false;
        } else if (d.is_symbolic()) {
          out_symbols.insert(symbols.find(d.param));
        } else {
          usable = false;
        }
      }
      if (!usable || in_known != out_known || in_known == 0) continue;
      for (auto it = out_symbols.begin(); it != out_symbols.end();) {
        auto match = in_symbols.find(*it);
        if (match == in_symbols.end()) {
          ++it;
          continue;
        }
        in_symbols.erase(match);
        it = out_symbols.erase(it);
      }
      if (in_symbols.size() == 1 && out_symbols.size() == 1) {
        symbols.unite(*out_symbols.begin(), *in_symbols.begin());
      }
    }
  }
  if (symbols.empty()) return typed;
  size_t renamed = typed;
  auto rename = [&](Value* value) {
    if (!value || !value->type().is_tensor() || !value->type().shape) return;
    ValueType type = value->type();
    bool changed = false;
    for (Dim& d : *type.shape) {
      if (!d.is_symbolic()) continue;
      std::string root = symbols.find(d.param);
      if (root != d.param) {
        d.param = std::move(root);
        changed = true;
      }
    }
    if (!changed) return;
    value->set_type(std::move(type));
    ++renamed;
  };
  for (Value* input : graph.inputs()) rename(input);
  for (Node* node : order) {
    for (Value* output : node->outputs()) rename(output);
  }
  return renamed;
}

class ShapeFoldingPass : public GraphPass {
 public:
  std::string_view name() const override { return "shape_folding"; }

  size_t run(Graph& graph, PassContext& context) override {
    // Each step can let shape inference carry a dim further (a Reshape target that became
    // a constant passes `seq` on to the next layer): repeat with fresh types while it does,
    // rather than one layer per pipeline round.
    size_t changes = 0;
    for (int step = 0; step < kMaxSteps; ++step) {
      const size_t step_changes = run_once(graph, context);
      changes += step_changes;
      if (step_changes == 0 || graph.parent() || !context.refresh_shapes) break;
      context.refresh_shapes();
    }
    return changes;
  }

 private:
  size_t run_once(Graph& graph, PassContext& context) {
    size_t changes = unify_generated_symbols(graph, context);
    Evaluator evaluator(context);
    const std::vector<Node*> order = graph.topological_order();
    // Nodes computing a shape vector, and whether anything read them before this run.
    std::unordered_map<Node*, const ShapeVector*> shape_nodes;
    std::unordered_set<Node*> live;
    for (Node* node : order) {
      if (!node->domain().empty() || node->outputs().size() != 1 || !node->output(0)) continue;
      if (const ShapeVector* vec = evaluator.eval(node->output(0))) {
        shape_nodes.emplace(node, vec);
        if (!is_unused(node->output(0))) live.insert(node);
      }
    }
    std::unordered_set<Node*> removed;

    // Partly known Reshape targets become constants.
    const int64_t opset = context.opset("");
    for (Node* node : order) {
      if (node->op_type() != "Reshape" || !node->domain().empty()) continue;
      const Value* x = node->input(0);
      Value* shape = node->input(1);
      if (!x || !shape || constant_value(shape, context) || !node->output(0)) continue;
      const ShapeVector* target = evaluator.eval(shape);
      if (!target || target->scalar || target->dtype != DType::kInt64 || target->all_known()) {
        continue;
      }
      const bool allowzero = opset >= 14 && int_attr(node, "allowzero", 0) != 0;
      auto constant = constant_reshape_target(*target, x, allowzero);
      if (!constant) continue;
      const auto rank = static_cast<int64_t>(constant->size());
      Value* init = graph.add_initializer(graph.unique_name(node->output(0)->name() + "_shape"),
                                          Tensor::from_vector(DType::kInt64, {rank}, *constant));
      init->set_type(ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(rank)}));
      graph.set_node_input(node, 1, init);
      ++changes;
    }
    changes += share_equal_shape_values(graph, context, order, shape_nodes, removed);
    changes += remove_dead(graph, context, order, shape_nodes, live, removed);
    changes += annotate_output_shapes(graph, evaluator, order, removed, opset);

    // Fully known shape values become initializers. Only the last known value of a chain is
    // folded; the known values feeding it die with it.
    std::unordered_set<const Node*> known;
    for (Node* node : order) {
      auto it = shape_nodes.find(node);
      if (it == shape_nodes.end() || removed.count(node)) continue;
      if (it->second->from_shape && it->second->all_known()) known.insert(node);
    }
    for (Node* node : order) {
      if (!known.count(node)) continue;
      Value* old = node->output(0);
      bool needed = is_graph_output(old);
      for (const Use& use : old->uses()) {
        needed |= use.node->graph() != &graph || !known.count(use.node);
      }
      if (!needed) continue;
      const std::string name = old->name();
      Value* init = graph.add_initializer(graph.unique_name(name + "_folded"),
                                          shape_nodes.at(node)->to_tensor());
      const ShapeVector& vec = *shape_nodes.at(node);
      init->set_type(ValueType::tensor(
          vec.dtype, vec.scalar
                         ? std::vector<Dim>{}
                         : std::vector<Dim>{Dim::known(static_cast<int64_t>(vec.elems.size()))}));
      replace_value(graph, old, init);
      graph.remove_node(node);
      removed.insert(node);
      if (init->name() != name) graph.rename_value(init, name);
      context.not_folded.erase(name);
      ++changes;
    }
    changes += remove_dead(graph, context, order, shape_nodes, live, removed);

    // What stays dynamic, and why (for --explain).
    for (Node* node : order) {
      auto it = shape_nodes.find(node);
      if (it == shape_nodes.end() || removed.count(node)) continue;
      if (it->second->from_shape && !it->second->all_known()) {
        context.not_folded[node->output(0)->name()] = why_dynamic(*it->second);
      }
    }
    return changes;
  }

  // Shape values that are equal at run time (the same symbolic text, element by element)
  // are computed once: every layer of a transformer recomputes [batch, seq, 768] from its
  // own hidden state, and CSE cannot see that Shape(h1) and Shape(h5) agree. Each later
  // copy is replaced by the first one in topological order (which precedes all their
  // readers); the copies' chains then die, and CSE merges what was computed from them
  // (a causal mask per layer becomes one).
  static size_t share_equal_shape_values(
      Graph& graph, PassContext& context, const std::vector<Node*>& order,
      const std::unordered_map<Node*, const ShapeVector*>& shape_nodes,
      std::unordered_set<Node*>& removed) {
    size_t changes = 0;
    std::unordered_map<std::string, Node*> first;  // key -> first node computing it
    for (Node* node : order) {
      auto it = shape_nodes.find(node);
      if (it == shape_nodes.end() || removed.count(node)) continue;
      const ShapeVector& vec = *it->second;
      if (!vec.from_shape || vec.all_known() || vec.elems.empty()) continue;
      // Only vectors of named dims and numbers: opaque elements are tied to one value anyway.
      const bool shareable = std::all_of(
          vec.elems.begin(), vec.elems.end(),
          [](const SymbolicInt& e) { return e.known || (e.others.empty() && !e.symbols.empty()); });
      if (!shareable) continue;
      std::string key = std::string(dtype_name(vec.dtype)) + (vec.scalar ? "s" : "v");
      for (const SymbolicInt& e : vec.elems) key += "|" + e.text();
      auto [slot, inserted] = first.try_emplace(std::move(key), node);
      if (inserted) continue;
      Value* copy = node->output(0);
      Value* original = slot->second->output(0);
      if (is_unused(copy) || context.keep_values.count(copy->name()) ||
          !can_replace(copy, original) || copy->type().elem_type != original->type().elem_type) {
        continue;
      }
      replace_value(graph, copy, original);
      ++changes;
    }
    return changes;
  }

  // onnxkit's own symbolic shapes: ONNX shape inference gives up on Expand / ConstantOfShape /
  // Reshape whose target is computed at run time, and everything downstream loses its rank.
  // Where the target is known here as numbers and named dims, write the output's shape
  // into its type, so the next round of shape inference carries on from it.
  static size_t annotate_output_shapes(Graph& graph, Evaluator& evaluator,
                                       const std::vector<Node*>& order,
                                       const std::unordered_set<Node*>& removed, int64_t opset) {
    size_t changes = 0;
    auto to_dim = [](const SymbolicInt& e) {
      if (e.known && *e.known >= 0) return Dim::known(*e.known);
      if (const std::string* name = e.named_dim()) return Dim::symbol(*name);
      return Dim{};
    };
    for (Node* node : order) {
      if (removed.count(node)) continue;
      const std::string& op = node->op_type();
      if (!node->domain().empty() || !node->output(0) || node->output(0)->type().shape) continue;
      if (op == "Slice") {
        if (annotate_slice(graph, evaluator, node, opset)) ++changes;
        continue;
      }
      if (op != "Expand" && op != "ConstantOfShape" && op != "Reshape") continue;
      const Value* target_value = node->input(op == "ConstantOfShape" ? 0 : 1);
      const ShapeVector* target = target_value ? evaluator.eval(target_value) : nullptr;
      if (!target || target->scalar) continue;
      std::vector<Dim> dims;
      DType dtype = DType::kUndefined;
      if (op == "ConstantOfShape") {
        dtype = DType::kFloat;
        if (const Attribute* value = node->find_attribute("value"); value && value->t.defined()) {
          dtype = value->t.dtype();
        }
        for (const SymbolicInt& e : target->elems) dims.push_back(to_dim(e));
      } else {
        const Value* x = node->input(0);
        if (!x || !x->type().shape || !x->type().is_tensor()) continue;
        dtype = x->type().elem_type;
        const std::vector<Dim>& in = *x->type().shape;
        if (op == "Reshape") {
          const bool allowzero = opset >= 14 && int_attr(node, "allowzero", 0) != 0;
          for (size_t i = 0; i < target->elems.size(); ++i) {
            const SymbolicInt& e = target->elems[i];
            if (e.is(0) && !allowzero) {
              dims.push_back(i < in.size() ? in[i] : Dim{});
            } else if (e.is(-1)) {
              dims.push_back(Dim{});
            } else {
              dims.push_back(to_dim(e));
            }
          }
        } else {  // Expand: bidirectional broadcast of x's shape and the target
          const size_t rank = std::max(in.size(), target->elems.size());
          for (size_t i = 0; i < rank; ++i) {
            const size_t a_offset = rank - in.size(), b_offset = rank - target->elems.size();
            Dim a = i >= a_offset ? in[i - a_offset] : Dim::known(1);
            Dim b = i >= b_offset ? to_dim(target->elems[i - b_offset]) : Dim::known(1);
            if (a.value == 1) {
              dims.push_back(b);
            } else if (b.value == 1 || a == b) {
              dims.push_back(a);
            } else {
              dims.push_back(Dim{});
            }
          }
        }
      }
      if (dtype == DType::kUndefined) continue;
      Value* out = node->output(0);
      out->set_type(ValueType::tensor(dtype, dims));
      if (!graph.is_output(out)) graph.add_value_info(out);
      ++changes;
    }
    return changes;
  }

  // Slice(data, 0, end = a named dim `seq`, axis, step 1) over a static axis of size D is
  // typed with `seq` on that axis: the true size is min(seq, D), and a model that reads the
  // slice next to tensors sized by `seq` (positions, token types) only runs when seq <= D.
  // This is how PyTorch exports position ids; it keeps symbolic shapes flowing.
  static bool annotate_slice(Graph& graph, Evaluator& evaluator, Node* node, int64_t opset) {
    if (opset < 10 || node->inputs().size() < 3) return false;
    const Value* data = node->input(0);
    if (!data) return false;
    ValueType data_type = data->type();
    if (data->has_initializer()) {  // initializers carry no declared type: use the tensor's
      std::vector<Dim> shape;
      for (int64_t d : data->initializer().shape()) shape.push_back(Dim::known(d));
      data_type = ValueType::tensor(data->initializer().dtype(), shape);
    }
    if (!data_type.is_tensor() || !data_type.shape) return false;
    const ShapeVector* starts = evaluator.eval(node->input(1));
    const ShapeVector* ends = evaluator.eval(node->input(2));
    const ShapeVector* axes = node->input(3) ? evaluator.eval(node->input(3)) : nullptr;
    const ShapeVector* steps = node->input(4) ? evaluator.eval(node->input(4)) : nullptr;
    if (!starts || !ends || starts->elems.size() != ends->elems.size()) return false;
    if (node->input(3) && !axes) return false;
    if (node->input(4) && !steps) return false;
    std::vector<Dim> dims = *data_type.shape;
    const auto rank = static_cast<int64_t>(dims.size());
    for (size_t i = 0; i < starts->elems.size(); ++i) {
      int64_t axis = static_cast<int64_t>(i);
      if (axes) {
        if (i >= axes->elems.size() || !axes->elems[i].known) return false;
        axis = *axes->elems[i].known;
      }
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return false;
      if (steps && (i >= steps->elems.size() || !steps->elems[i].is(1))) return false;
      const SymbolicInt& start = starts->elems[i];
      const SymbolicInt& end = ends->elems[i];
      Dim& dim = dims[static_cast<size_t>(axis)];
      if (!start.is(0) || !dim.is_known()) return false;
      if (end.known) {
        int64_t stop = *end.known < 0 ? *end.known + dim.value : *end.known;
        dim = Dim::known(std::clamp<int64_t>(stop, 0, dim.value));
      } else if (const std::string* name = end.named_dim()) {
        dim = Dim::symbol(*name);
      } else {
        return false;
      }
    }
    Value* out = node->output(0);
    out->set_type(ValueType::tensor(data_type.elem_type, dims));
    if (!graph.is_output(out)) graph.add_value_info(out);
    return true;
  }

  // Removes shape nodes that were read before this run and are not any more.
  static size_t remove_dead(Graph& graph, PassContext& context, const std::vector<Node*>& order,
                            const std::unordered_map<Node*, const ShapeVector*>& shape_nodes,
                            const std::unordered_set<Node*>& live,
                            std::unordered_set<Node*>& removed) {
    size_t changes = 0;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* node = *it;
      if (!shape_nodes.count(node) || !live.count(node) || removed.count(node)) continue;
      if (!is_unused(node->output(0)) || context.keep_values.count(node->output(0)->name())) {
        continue;
      }
      context.not_folded.erase(node->output(0)->name());
      graph.remove_node(node);
      removed.insert(node);
      ++changes;
    }
    return changes;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_shape_folding_pass() {
  return std::make_unique<ShapeFoldingPass>();
}

}  // namespace onnxkit
