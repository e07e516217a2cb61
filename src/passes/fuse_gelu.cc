// Pass fuse_gelu: GELU written out op by op becomes com.onnxkit Gelu (ops/fused_ops.h):
//   erf form   x * 0.5 * (1 + Erf(x / 1.4142...))        (or Erf(x * 0.7071...))
//   tanh form  x * 0.5 * (1 + Tanh(0.79788... * (x + 0.044715 * x^3)))
//              (x^3 as Pow(x, 3), x * x * x or x * (x * x); -> approximate = "tanh")
// The product x * 0.5 * (1 + f) is accepted in the orders exporters write it:
// (x * a) * 0.5, x * (a * 0.5), (x * 0.5) * a, with 0.5 also as Div by 2. Constants match
// within a relative 1e-4, the irrational ones (1/sqrt(2), sqrt(2/pi), 0.044715) within
// 1e-3: a float16 model stores them rounded to half a float16 ulp (up to 4.9e-4 relative;
// 1/sqrt(2) becomes 0.70703, 1.07e-4 off), and its regions compute in float32 by then.
#include <cmath>
#include <numbers>

#include "ops/fused_ops.h"
#include "passes/passes.h"
#include "passes/transformer_fusion_util.h"

namespace onnxkit {
namespace {

constexpr double kIrrationalConstantTolerance = 1e-3;

// True when `node` is Mul by 0.5 or Div by 2; `x` receives the other operand.
bool halves(const Node* node, const PassContext& context, Value** x) {
  if (!is_onnx_op(node, "Mul") && !is_onnx_op(node, "Div")) return false;
  auto c = scalar_operand(node, context);
  if (!c) return false;
  const double factor = node->op_type() == "Mul" ? c->constant : 1.0 / c->constant;
  if (!near(factor, 0.5)) return false;
  *x = c->other;
  return true;
}

// The other operand of binary `node` reading `value`, or nullptr.
Value* other_operand(const Node* node, const Value* value) {
  if (node->inputs().size() != 2) return nullptr;
  if (node->input(0) == value) return node->input(1);
  if (node->input(1) == value) return node->input(0);
  return nullptr;
}

// True when `value` is x^3: Pow(x, 3), x * (x * x) or (x * x) * x.
bool is_cube_of(const FusionScope& scope, Value* value, const Value* x, std::vector<Node*>& nodes) {
  if (!scope.single_use(value)) return false;
  if (Node* pow = scope.producer(value, "Pow")) {
    if (pow->input(0) != x || scalar_constant(pow->input(1), scope.context()) != 3.0) return false;
    nodes.push_back(pow);
    return true;
  }
  Node* outer = scope.producer(value, "Mul");
  if (!outer) return false;
  for (size_t side = 0; side < 2; ++side) {
    if (outer->input(side) != x) continue;
    Value* square = outer->input(1 - side);
    Node* inner = scope.single_use(square) ? scope.producer(square, "Mul") : nullptr;
    if (inner && inner->input(0) == x && inner->input(1) == x) {
      nodes.insert(nodes.end(), {outer, inner});
      return true;
    }
  }
  return false;
}

// The value of x * a * 0.5 in one of the accepted orders (the nodes go to `matched`), or
// nullptr.
Value* product_with_half(const FusionScope& scope, Value* x, Value* a,
                         std::vector<Node*>& matched) {
  const PassContext& context = scope.context();
  Node* mul = scope.only_reader(a);
  if (!is_onnx_op(mul, "Mul")) return nullptr;
  Value* other = other_operand(mul, a);
  if (!other) return nullptr;
  Value* half_x = nullptr;
  if (other == x) {
    // (x * a) * 0.5
    Node* half = scope.only_reader(mul->output(0));
    if (!half || !halves(half, context, &half_x) || half_x != mul->output(0)) return nullptr;
    matched.insert(matched.end(), {mul, half});
    return half->output(0);
  }
  if (auto c = scalar_constant(other, context)) {
    // x * (a * 0.5)
    Node* outer = scope.only_reader(mul->output(0));
    if (!near(*c, 0.5) || !is_onnx_op(outer, "Mul") || other_operand(outer, mul->output(0)) != x) {
      return nullptr;
    }
    matched.insert(matched.end(), {mul, outer});
    return outer->output(0);
  }
  // (x * 0.5) * a
  Node* half = scope.single_use(other) ? other->producer() : nullptr;
  if (!half || half->graph() != &scope.graph() || !halves(half, context, &half_x) || half_x != x) {
    return nullptr;
  }
  matched.insert(matched.end(), {half, mul});
  return mul->output(0);
}

// Erf(x / sqrt(2)) or Erf(x * (1 / sqrt(2))): x, or nullptr.
Value* erf_argument(const FusionScope& scope, const Node* erf, std::vector<Node*>& matched) {
  Value* u = erf->input(0);
  Node* scale = u ? u->producer() : nullptr;
  if (!scope.single_use(u) || !scale || scale->graph() != &scope.graph()) return nullptr;
  auto c = is_onnx_op(scale, "Div") || is_onnx_op(scale, "Mul")
               ? scalar_operand(scale, scope.context())
               : std::nullopt;
  if (!c) return nullptr;
  const double factor = scale->op_type() == "Mul" ? c->constant : 1.0 / c->constant;
  if (!near(factor, 1.0 / std::numbers::sqrt2, kIrrationalConstantTolerance)) return nullptr;
  matched.push_back(scale);
  return c->other;
}

// Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)): x, or nullptr.
Value* tanh_argument(const FusionScope& scope, const Node* tanh, std::vector<Node*>& matched) {
  const PassContext& context = scope.context();
  Node* scale = scope.single_use(tanh->input(0)) ? scope.producer(tanh->input(0), "Mul") : nullptr;
  auto c = scale ? scalar_operand(scale, context) : std::nullopt;
  if (!c || !near(c->constant, std::sqrt(2.0 / std::numbers::pi), kIrrationalConstantTolerance)) {
    return nullptr;
  }
  Node* sum = scope.single_use(c->other) ? scope.producer(c->other, "Add") : nullptr;
  if (!sum || !sum->input(0) || !sum->input(1)) return nullptr;
  for (size_t side = 0; side < 2; ++side) {
    Value* x = sum->input(side);
    Value* term = sum->input(1 - side);
    Node* coefficient = scope.single_use(term) ? scope.producer(term, "Mul") : nullptr;
    auto k = coefficient ? scalar_operand(coefficient, context) : std::nullopt;
    if (!k || !near(k->constant, 0.044715, kIrrationalConstantTolerance)) continue;
    std::vector<Node*> cube_nodes;
    if (!is_cube_of(scope, k->other, x, cube_nodes)) continue;
    matched.insert(matched.end(), {scale, sum, coefficient});
    matched.insert(matched.end(), cube_nodes.begin(), cube_nodes.end());
    return x;
  }
  return nullptr;
}

bool fuse(const FusionScope& scope, Node* node) {
  std::vector<Node*> matched;
  Value* x = nullptr;
  bool tanh = false;
  if (is_onnx_op(node, "Erf")) {
    x = erf_argument(scope, node, matched);
  } else if (is_onnx_op(node, "Tanh")) {
    x = tanh_argument(scope, node, matched);
    tanh = true;
  }
  if (!x) return false;
  matched.push_back(node);
  // a = 1 + f(x)
  Node* add_one = scope.only_reader(node->output(0));
  if (!is_onnx_op(add_one, "Add")) return false;
  auto one = scalar_operand(add_one, scope.context());
  if (!one || one->other != node->output(0) || one->constant != 1.0) return false;
  matched.push_back(add_one);
  Value* y = product_with_half(scope, x, add_one->output(0), matched);
  if (!y || !scope.replaceable(y)) return false;

  Graph& graph = scope.graph();
  import_onnxkit_domain(*scope.context().model);
  Node* last = y->producer();
  Node* gelu = graph.add_node("Gelu", {x}, {graph.unique_name(y->name() + "_fused")},
                              std::string(kOnnxkitDomain), last->name(), last);
  if (tanh) gelu->set_attribute(string_attribute("approximate", "tanh"));
  replace_subgraph(graph, {{y, gelu->output(0)}}, matched);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_gelu_pass() {
  return make_fusion_pass("fuse_gelu", fuse);
}

}  // namespace onnxkit
