#include "passes/linear_fusion_util.h"

#include <algorithm>
#include <limits>

#include "ir/graph_clone.h"
#include "ops/fused_activation.h"
#include "ops/fused_ops.h"
#include "passes/fusion_util.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit::linear_fusion {

void import_onnxkit_domain(const PassContext& context) {
  if (!context.model || context.model->opset_version(kOnnxkitDomain) >= 0) return;
  context.model->opset_imports.push_back({std::string(kOnnxkitDomain), kOnnxkitDomainVersion});
}

bool fusable_intermediate(const Value* value, const PassContext& context, size_t readers) {
  return value && value->uses().size() == readers && !is_graph_output(value) &&
         !kept(context, value);
}

namespace {

// The only reader of `x` in x's own graph, reading it as input `input`, or nullptr.
Node* sole_reader(const Value* x, size_t input) {
  if (x->uses().size() != 1) return nullptr;
  const Use& use = x->uses()[0];
  if (use.input != input || use.node->graph() != x->graph() || !use.node->output(0)) {
    return nullptr;
  }
  return use.node;
}

std::string string_attribute(const Node* node, std::string_view name, std::string fallback) {
  const Attribute* a = node->find_attribute(name);
  return a && a->type == AttrType::kString ? a->s : fallback;
}

// x * Sigmoid(x) in either operand order: the Sigmoid and the Mul, or nullopt.
std::optional<ActivationMatch> match_silu(const Value* x, const PassContext& context) {
  if (x->uses().size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    Node* sigmoid = x->uses()[i].node;
    Node* mul = x->uses()[1 - i].node;
    if (!is_onnx_op(sigmoid, "Sigmoid") || x->uses()[i].input != 0 ||
        sigmoid->graph() != x->graph() || !is_onnx_op(mul, "Mul") || mul->inputs().size() != 2 ||
        mul->graph() != x->graph() || !mul->output(0)) {
      continue;
    }
    Value* s = sigmoid->output(0);
    if (!fusable_intermediate(s, context) || s->uses()[0].node != mul) continue;
    const size_t x_side = x->uses()[1 - i].input;
    if (mul->input(1 - x_side) != s) continue;
    return ActivationMatch{"Silu", {}, {sigmoid, mul}};
  }
  return std::nullopt;
}

// x * Clip(x + 3, 0, 6) / 6, HardSwish as Paddle writes it at opsets before 14 had the op (the
// Mul's operands in either order, / 6 also as * (1/6)): the Add, Clip, Mul and Div, or nullopt.
std::optional<ActivationMatch> match_hard_swish(const Value* x, const PassContext& context) {
  if (x->uses().size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    Node* add = x->uses()[i].node;
    Node* mul = x->uses()[1 - i].node;
    if (!is_onnx_op(add, "Add") || add->graph() != x->graph() || !add->output(0) ||
        !is_onnx_op(mul, "Mul") || mul->inputs().size() != 2 || mul->graph() != x->graph() ||
        !mul->output(0)) {
      continue;
    }
    auto three = scalar_operand(add, context);
    if (!three || three->other != x || !near(three->constant, 3.0)) continue;
    Value* shifted = add->output(0);
    if (!fusable_intermediate(shifted, context)) continue;
    Node* clip = shifted->uses()[0].node;
    if (!is_onnx_op(clip, "Clip") || shifted->uses()[0].input != 0 || !clip->output(0)) continue;
    auto bounds = clip_bounds(clip, context);
    if (!bounds || (*bounds)[0] != 0.0f || (*bounds)[1] != 6.0f) continue;
    Value* gate = clip->output(0);
    if (!fusable_intermediate(gate, context) || gate->uses()[0].node != mul) continue;
    if (mul->input(1 - x->uses()[1 - i].input) != gate) continue;
    Value* product = mul->output(0);
    if (!fusable_intermediate(product, context)) continue;
    Node* scale = product->uses()[0].node;
    if (scale->graph() != x->graph() || !scale->output(0)) continue;
    auto sixth = scalar_operand(scale, context);
    if (!sixth || sixth->other != product) continue;
    if ((is_onnx_op(scale, "Div") && near(sixth->constant, 6.0)) ||
        (is_onnx_op(scale, "Mul") && near(sixth->constant, 1.0 / 6.0))) {
      return ActivationMatch{"HardSwish", {}, {add, clip, mul, scale}};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ActivationMatch> match_activation(const Value* x, const PassContext& context) {
  if (!x || is_graph_output(x) || kept(context, x)) return std::nullopt;
  if (auto silu = match_silu(x, context)) return silu;
  if (auto hard_swish = match_hard_swish(x, context)) return hard_swish;
  Node* node = sole_reader(x, 0);
  if (!node) return std::nullopt;
  if (node->domain().empty()) {
    const std::string& op = node->op_type();
    if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") {
      return ActivationMatch{op, {}, {node}};
    }
    if (op == "LeakyRelu" || op == "HardSigmoid") {
      // The op's parameters, with its defaults, become the fused op's activation_params.
      const ActivationSpec& spec = *find_activation(op);
      std::vector<float> params{float_attribute(node, spec.alpha_name, spec.alpha)};
      if (spec.params == 2) params.push_back(float_attribute(node, spec.beta_name, spec.beta));
      return ActivationMatch{op, std::move(params), {node}};
    }
    if (op == "Clip") {
      auto bounds = clip_bounds(node, context);
      if (!bounds) return std::nullopt;
      return ActivationMatch{op, *bounds, {node}};
    }
  }
  // onnxkit's Gelu, or ONNX's own (opset 20, the same attribute).
  if ((is_onnxkit_op(node, "Gelu") || is_onnx_op(node, "Gelu")) && node->inputs().size() == 1) {
    const std::string approximate = string_attribute(node, "approximate", "none");
    if (approximate == "none") return ActivationMatch{"Gelu", {}, {node}};
    if (approximate == "tanh") return ActivationMatch{"GeluTanh", {}, {node}};
  }
  return std::nullopt;
}

Node* promote_to_onnxkit(Graph& graph, Node* node, const std::string& op_type, bool copy_attributes,
                         const PassContext& context) {
  import_onnxkit_domain(context);
  Node* fused =
      graph.add_node(op_type, node->inputs(), {}, std::string(kOnnxkitDomain), node->name(), node);
  fused->set_doc_string(node->doc_string());
  if (copy_attributes) {
    for (const Attribute& attribute : node->attributes()) {
      fused->set_attribute(clone_attribute(attribute, &graph, {}));
    }
  }
  // Hand the outputs over: the old node gets placeholders, then goes.
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    Value* output = node->output(i);
    if (!output) continue;
    graph.set_node_output(node, i, graph.create_value(graph.unique_name(output->name() + "__old")));
    graph.set_node_output(fused, i, output);
  }
  graph.remove_node(node);
  return fused;
}

void absorb_chain(Graph& graph, Node* fused, const std::vector<Node*>& chain) {
  Node* last = chain.back();
  Value* old_output = fused->output(0);
  Value* result = last->output(0);
  graph.move_before(fused, last);
  graph.set_node_output(last, 0, graph.create_value(graph.unique_name(result->name() + "__old")));
  graph.set_node_output(fused, 0, result);
  std::string name = fused->name().empty() ? old_output->name() : fused->name();
  for (Node* node : chain) name += "+" + (node->name().empty() ? node->op_type() : node->name());
  fused->set_name(name);
  // The chain's initializers, each once: values the removals below free (the fused node's
  // old output, the chain's own intermediate outputs) and a weight read twice (Mul(w, w))
  // must not be looked at afterwards.
  std::vector<Value*> inputs;
  for (Node* node : chain) {
    for (Value* input : node->inputs()) {
      if (input && input->has_initializer() && !input->producer() &&
          std::find(inputs.begin(), inputs.end(), input) == inputs.end()) {
        inputs.push_back(input);
      }
    }
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.remove_node(*it);
  graph.remove_value(old_output);
  for (Value* input : inputs) drop_if_unused_initializer(graph, input);
}

void drop_if_unused_initializer(Graph& graph, Value* value) {
  if (!value || value->graph() != &graph || !value->has_initializer() || value->producer() ||
      !value->uses().empty() || graph.is_input(value) || graph.is_output(value)) {
    return;
  }
  graph.remove_value(value);
}

void set_activation(Node* node, const ActivationMatch& activation) {
  Attribute name;
  name.name = "activation";
  name.type = AttrType::kString;
  name.s = activation.name;
  node->set_attribute(std::move(name));
  node->remove_attribute("activation_params");
  if (activation.params.empty()) return;
  Attribute params;
  params.name = "activation_params";
  params.type = AttrType::kFloats;
  params.floats = activation.params;
  node->set_attribute(std::move(params));
}

bool has_activation(const Node* node) {
  const Attribute* a = node->find_attribute("activation");
  return a && a->type == AttrType::kString && !a->s.empty();
}

void set_int_attribute(Node* node, const std::string& name, int64_t value) {
  node->set_attribute(int_attribute(name, value));
}

void set_float_attribute(Node* node, const std::string& name, float value) {
  node->set_attribute(onnxkit::float_attribute(name, value));
}

float float_attribute(const Node* node, std::string_view name, float fallback) {
  const Attribute* a = node->find_attribute(name);
  return a && a->type == AttrType::kFloat ? a->f : fallback;
}

bool same_tensor_type(const ValueType& a, const ValueType& b) {
  if (!a.is_tensor() || !b.is_tensor() || a.elem_type != b.elem_type || !a.shape || !b.shape) {
    return false;
  }
  if (a.shape->size() != b.shape->size()) return false;
  for (size_t d = 0; d < a.shape->size(); ++d) {
    const Dim& x = (*a.shape)[d];
    const Dim& y = (*b.shape)[d];
    const bool equal = x.is_known() ? y.is_known() && x.value == y.value
                                    : x.is_symbolic() && y.is_symbolic() && x.param == y.param;
    if (!equal) return false;
  }
  return true;
}

std::optional<double> scalar_constant(const Value* value, const PassContext& context,
                                      size_t max_rank) {
  const Tensor* t = constant_value(value, context);
  if (!t || !dtype_is_float(t->dtype()) || t->numel() != 1 || t->rank() > max_rank) {
    return std::nullopt;
  }
  return to_doubles(*t)[0];
}

}  // namespace onnxkit::linear_fusion
