#include "passes/transformer_fusion_util.h"

#include <algorithm>
#include <cmath>

#include "ops/fused_ops.h"
#include "ops/op_utils.h"

namespace onnxkit {

Node* FusionScope::producer(const Value* value, std::string_view op_type) const {
  Node* node = value ? value->producer() : nullptr;
  return node && node->graph() == &graph_ && is_onnx_op(node, op_type) ? node : nullptr;
}

bool FusionScope::single_use(const Value* value) const {
  // A nested subgraph returning the value is a use by its return node, in another graph.
  return value && value->uses().size() == 1 && !is_graph_output(value) && !kept(context_, value) &&
         value->uses()[0].node->graph() == &graph_;
}

Node* FusionScope::only_reader(const Value* value) const {
  return single_use(value) ? value->uses()[0].node : nullptr;
}

size_t fuse_everywhere(Graph& graph, const std::function<bool(Node*)>& fuse) {
  size_t fusions = 0;
  for (bool again = true; again;) {
    again = false;
    for (Node* node : graph.nodes()) {
      if (fuse(node)) {
        ++fusions;
        again = true;
        break;
      }
    }
  }
  // A fused node sits where its subgraph ended; a reused value (an existing Transpose of K)
  // may come later in the list: keep the order topological for shape inference.
  if (fusions > 0) graph.sort_topologically();
  return fusions;
}

namespace {

class FusionPass final : public GraphPass {
 public:
  FusionPass(std::string_view name, FusionRule fuse) : name_(name), fuse_(std::move(fuse)) {}

  std::string_view name() const override { return name_; }

  size_t run(Graph& graph, PassContext& context) override {
    FusionScope scope(graph, context);
    return fuse_everywhere(graph, [&](Node* node) { return fuse_(scope, node); });
  }

 private:
  std::string_view name_;
  FusionRule fuse_;
};

}  // namespace

std::unique_ptr<GraphPass> make_fusion_pass(std::string_view name, FusionRule fuse) {
  return std::make_unique<FusionPass>(name, std::move(fuse));
}

std::optional<double> scalar_constant(const Value* value, const PassContext& context) {
  const Tensor* t = constant_value(value, context);
  if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return std::nullopt;
  return dispatch_float(t->dtype(), "constant", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(t->data<T>()[0]);
  });
}

bool near(double value, double expected, double tolerance) {
  return std::abs(value - expected) <= tolerance * std::abs(expected);
}

std::optional<ScalarOperand> scalar_operand(const Node* node, const PassContext& context) {
  if (node->inputs().size() != 2 || !node->input(0) || !node->input(1)) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    if (auto c = scalar_constant(node->input(side), context)) {
      // Division is not commutative: only X / c is a scaling of X.
      if (side == 0 && node->op_type() == "Div") return std::nullopt;
      return ScalarOperand{node->input(1 - side), *c, 1 - side};
    }
  }
  return std::nullopt;
}

DType dtype_of(const Value* value) {
  if (value && value->has_initializer()) return value->initializer().dtype();
  return value && value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
}

std::optional<std::vector<Dim>> dims_of(const Value* value) {
  if (value && value->has_initializer()) {
    std::vector<Dim> dims;
    for (int64_t d : value->initializer().shape()) dims.push_back(Dim::known(d));
    return dims;
  }
  if (!value || !value->type().is_tensor() || !value->type().shape) return std::nullopt;
  return *value->type().shape;
}

std::optional<int64_t> rank_of(const Value* value) {
  const auto dims = dims_of(value);
  if (!dims) return std::nullopt;
  return static_cast<int64_t>(dims->size());
}

bool same_dim(const Dim& a, const Dim& b) {
  if (a.is_known() || b.is_known()) return a.is_known() && b.is_known() && a.value == b.value;
  return a.is_symbolic() && b.is_symbolic() && a.param == b.param;
}

bool same_shape(const Value* a, const Value* b) {
  const auto da = dims_of(a);
  const auto db = dims_of(b);
  if (!da || !db || da->size() != db->size()) return false;
  for (size_t i = 0; i < da->size(); ++i) {
    if (!same_dim((*da)[i], (*db)[i])) return false;
  }
  return true;
}

bool may_equal(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) return a.value == b.value;
  if (a.is_known() || b.is_known()) return (a.is_known() ? a.value : b.value) != 1;
  return true;
}

void import_onnxkit_domain(Model& model) {
  if (model.opset_version(kOnnxkitDomain) >= 0) return;
  model.opset_imports.push_back({std::string(kOnnxkitDomain), kOnnxkitDomainVersion});
}

Value* int64_constant(Graph& graph, const std::string& prefix, const std::vector<int64_t>& values) {
  const auto n = static_cast<int64_t>(values.size());
  Value* value = graph.add_initializer(graph.unique_name(prefix),
                                       Tensor::from_vector(DType::kInt64, {n}, values));
  value->set_type(ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(n)}));
  return value;
}

void replace_subgraph(Graph& graph, const std::vector<std::pair<Value*, Value*>>& old_and_fused,
                      const std::vector<Node*>& matched) {
  struct Rename {
    Value* value;
    std::string name;
  };
  std::vector<Rename> renames;
  for (auto [old_value, fused] : old_and_fused) {
    if (fused->type().kind == ValueType::Kind::kNone) fused->set_type(old_value->type());
    if (fused->type().is_tensor()) graph.add_value_info(fused);
    if (!is_graph_output(old_value)) renames.push_back({fused, old_value->name()});
    replace_value(graph, old_value, fused);
  }
  // Remove readers before producers; a node still read by something outside stays.
  std::vector<Node*> pending = matched;
  for (bool removed = true; removed;) {
    removed = false;
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      Node* node = *it;
      const bool unused = std::all_of(node->outputs().begin(), node->outputs().end(),
                                      [](const Value* v) { return !v || is_unused(v); });
      if (!unused) continue;
      graph.remove_node(node);
      pending.erase(it);
      removed = true;
      break;
    }
  }
  for (const Rename& rename : renames) {
    if (!graph.find_value(rename.name)) graph.rename_value(rename.value, rename.name);
  }
}

}  // namespace onnxkit
