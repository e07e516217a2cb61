// Pass fuse_layer_norm: the layer normalization PyTorch exports op by op
//   mean = ReduceMean(X, last k axes); D = X - mean
//   var = ReduceMean(Pow(D, 2) | D * D); std = Sqrt(var + eps)
//   N = D / std | D * Reciprocal(std);  Y = N * gamma + beta   (gamma, beta optional)
// becomes LayerNormalization(X, gamma, beta) with axis = -k: the ONNX op when the model
// imports opset 17 or newer, com.onnxkit's (ops/fused_ops.h) before.
//
// gamma and beta must be constants that broadcast to the normalized dims without widening
// the result; they are stored with exactly the normalized shape (a missing gamma becomes
// ones). The normalized dims must be known.
#include <numeric>

#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/passes.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

// The axes a ReduceMean reduces, normalized to [0, rank), or nullopt when they cannot be
// read (or keepdims is 0, which the decomposition never uses).
std::optional<std::vector<int64_t>> reduce_axes(const Node* reduce, int64_t rank,
                                                const PassContext& context) {
  if (int_attr(reduce, "keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (const Attribute* a = reduce->find_attribute("axes")) {
    if (a->type != AttrType::kInts) return std::nullopt;
    axes = a->ints;
  } else if (reduce->input(1)) {
    const Tensor* t = constant_value(reduce->input(1), context);
    if (!t || t->dtype() != DType::kInt64) return std::nullopt;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  if (axes.empty()) {
    if (int_attr(reduce, "noop_with_empty_axes", 0) != 0) return std::nullopt;
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) return std::nullopt;
    if (axis < 0) axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// `param` (gamma or beta) as a tensor of exactly `norm_shape`, when it is a constant that
// broadcasts to it without widening X (of rank `rank`): leading 1-dims allowed.
std::optional<Tensor> as_norm_param(const Value* param, const Shape& norm_shape, int64_t rank,
                                    DType dtype, const PassContext& context) {
  const Tensor* t = constant_value(param, context);
  if (!t || t->dtype() != dtype || static_cast<int64_t>(t->rank()) > rank) return std::nullopt;
  const size_t k = norm_shape.size();
  for (size_t i = 0; i < t->rank(); ++i) {
    const int64_t d = t->shape()[t->rank() - 1 - i];
    if (i >= k ? d != 1 : d != 1 && d != norm_shape[k - 1 - i]) return std::nullopt;
  }
  if (t->shape() == norm_shape) return *t;
  // Expand to the normalized shape (the few bytes of a per-channel parameter).
  const std::vector<double> values = to_doubles(*t);
  Shape trimmed(t->shape().end() - std::min(t->rank(), k), t->shape().end());
  std::vector<double> expanded(static_cast<size_t>(shape_numel(norm_shape)));
  const std::vector<int64_t> strides = broadcast_strides(trimmed, norm_shape);
  for_each_broadcast(norm_shape, {strides},
                     [&](int64_t i, const int64_t* offsets) { expanded[i] = values[offsets[0]]; });
  return from_doubles(dtype, norm_shape, expanded);
}

bool fuse(const FusionScope& scope, Node* mean_node) {
  const PassContext& context = scope.context();
  if (!is_onnx_op(mean_node, "ReduceMean")) return false;
  Value* x = mean_node->input(0);
  const auto x_dims = dims_of(x);
  const DType dtype = dtype_of(x);
  if (!x_dims || x_dims->empty() || !dtype_is_float(dtype)) return false;
  const auto rank = static_cast<int64_t>(x_dims->size());
  auto axes = reduce_axes(mean_node, rank, context);
  if (!axes) return false;
  // The normalized axes must be the last k, with known sizes.
  const auto k = static_cast<int64_t>(axes->size());
  Shape norm_shape;
  for (int64_t i = 0; i < k; ++i) {
    if ((*axes)[i] != rank - k + i || !(*x_dims)[rank - k + i].is_known()) return false;
    norm_shape.push_back((*x_dims)[rank - k + i].value);
  }

  std::vector<Node*> matched{mean_node};
  Node* sub = scope.only_reader(mean_node->output(0));
  if (!is_onnx_op(sub, "Sub") || sub->input(0) != x || sub->input(1) != mean_node->output(0)) {
    return false;
  }
  matched.push_back(sub);
  Value* centered = sub->output(0);
  // `centered` feeds the square and the division, nothing else.
  Node* square = nullptr;
  Node* divide = nullptr;
  for (const Use& use : centered->uses()) {
    Node* reader = use.node;
    const bool squares = (is_onnx_op(reader, "Mul") && reader->input(0) == centered &&
                          reader->input(1) == centered) ||
                         (is_onnx_op(reader, "Pow") && use.input == 0 &&
                          scalar_constant(reader->input(1), context) == 2.0);
    if (squares && (!square || square == reader)) {
      square = reader;
    } else if (!divide && (is_onnx_op(reader, "Div") || is_onnx_op(reader, "Mul"))) {
      divide = reader;
    } else {
      return false;
    }
  }
  if (!square || !divide || is_graph_output(centered) || kept(context, centered)) return false;
  matched.push_back(square);

  Node* var_node = scope.only_reader(square->output(0));
  if (!is_onnx_op(var_node, "ReduceMean") || reduce_axes(var_node, rank, context) != axes) {
    return false;
  }
  matched.push_back(var_node);
  Node* add_eps = scope.only_reader(var_node->output(0));
  if (!is_onnx_op(add_eps, "Add")) return false;
  auto eps = scalar_operand(add_eps, context);
  if (!eps || eps->other != var_node->output(0) || eps->constant < 0) return false;
  matched.push_back(add_eps);
  Node* sqrt = scope.only_reader(add_eps->output(0));
  if (!is_onnx_op(sqrt, "Sqrt")) return false;
  matched.push_back(sqrt);
  Value* std_dev = sqrt->output(0);

  // D / std, or D * Reciprocal(std).
  if (is_onnx_op(divide, "Div")) {
    if (divide->input(0) != centered || divide->input(1) != std_dev || !scope.single_use(std_dev)) {
      return false;
    }
  } else {
    Node* reciprocal = scope.only_reader(std_dev);
    if (!is_onnx_op(reciprocal, "Reciprocal") || !scope.single_use(reciprocal->output(0))) {
      return false;
    }
    const Value* r = reciprocal->output(0);
    if (!((divide->input(0) == centered && divide->input(1) == r) ||
          (divide->input(1) == centered && divide->input(0) == r))) {
      return false;
    }
    matched.push_back(reciprocal);
  }
  matched.push_back(divide);

  // Optional * gamma, then optional + beta, each when it fits the normalized dims.
  Value* y = divide->output(0);
  Value* gamma = nullptr;
  Value* beta = nullptr;
  std::optional<Tensor> scale, bias;
  if (Node* mul = scope.only_reader(y); is_onnx_op(mul, "Mul") && mul->inputs().size() == 2) {
    Value* other = mul->input(0) == y ? mul->input(1) : mul->input(0);
    if (other != y && (scale = as_norm_param(other, norm_shape, rank, dtype, context))) {
      gamma = other;
      matched.push_back(mul);
      y = mul->output(0);
    }
  }
  if (Node* add = scope.only_reader(y); is_onnx_op(add, "Add") && add->inputs().size() == 2) {
    Value* other = add->input(0) == y ? add->input(1) : add->input(0);
    if (other != y && (bias = as_norm_param(other, norm_shape, rank, dtype, context))) {
      beta = other;
      matched.push_back(add);
      y = add->output(0);
    }
  }
  if (!gamma) {
    std::vector<double> ones(static_cast<size_t>(shape_numel(norm_shape)), 1.0);
    scale = from_doubles(dtype, norm_shape, ones);
  }
  if (!scope.replaceable(y)) return false;

  Graph& graph = scope.graph();
  auto param_value = [&](Value* original, Tensor tensor, const std::string& suffix) {
    if (original && constant_value(original, context)->shape() == tensor.shape()) return original;
    return graph.add_initializer(graph.unique_name(mean_node->name() + suffix), std::move(tensor));
  };
  Value* scale_value = param_value(gamma, std::move(*scale), "_scale");
  Value* bias_value = bias ? param_value(beta, std::move(*bias), "_bias") : nullptr;
  const bool onnx = context.opset("") >= 17;
  if (!onnx) import_onnxkit_domain(*context.model);
  std::vector<Value*> inputs{x, scale_value};
  if (bias_value) inputs.push_back(bias_value);
  Node* last = matched.back();
  Node* norm =
      graph.add_node("LayerNormalization", inputs, {graph.unique_name(y->name() + "_fused")},
                     onnx ? "" : std::string(kOnnxkitDomain), last->name(), last);
  norm->set_attribute(int_attribute("axis", -k));
  norm->set_attribute(float_attribute("epsilon", static_cast<float>(eps->constant)));
  replace_subgraph(graph, {{y, norm->output(0)}}, matched);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_layer_norm_pass() {
  return make_fusion_pass("fuse_layer_norm", fuse);
}

}  // namespace onnxkit
