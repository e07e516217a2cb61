// Pass fuse_transpose_into_matmul: what a MatMul does to its operands and result by the way
// becomes attributes of a com.onnxkit FusedMatMul:
//  - a Transpose swapping only the last two dims of A or B becomes trans_a / trans_b;
//  - a Mul / Div of A or B by a constant scalar, and one of the product (when the
//    FusedMatMul has no activation; a constant Bias is rescaled), becomes alpha.
// An operand's Transpose / Mul goes when every reader of its result is a MatMul operand (each
// gets the flag); otherwise it is left alone.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "ops/fused_ops.h"
#include "ops/op_utils.h"
#include "passes/fusion_util.h"
#include "passes/linear_fusion_util.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

using namespace linear_fusion;

bool is_matmul(const Node* node) {
  return is_onnx_op(node, "MatMul") || is_onnxkit_op(node, "FusedMatMul");
}

// The rank of `value` from its type, or -1.
int64_t static_rank(const Value* value) {
  if (value->has_initializer()) return static_cast<int64_t>(value->initializer().rank());
  if (!value->type().is_tensor() || !value->type().shape) return -1;
  return static_cast<int64_t>(value->type().shape->size());
}

DType static_dtype(const Value* value) {
  if (value->has_initializer()) return value->initializer().dtype();
  return value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
}

// True when `transpose` swaps exactly the last two dims of its input.
bool swaps_last_two(const Node* transpose) {
  const Attribute* perm = transpose->find_attribute("perm");
  if (!perm) return transpose->input(0) && static_rank(transpose->input(0)) == 2;
  if (perm->type != AttrType::kInts || perm->ints.size() < 2) return false;
  const auto& p = perm->ints;
  const int64_t r = static_cast<int64_t>(p.size());
  for (int64_t i = 0; i + 2 < r; ++i) {
    if (p[i] != i) return false;
  }
  return p[r - 2] == r - 1 && p[r - 1] == r - 2;
}

// What an operand producer contributes: the value to read instead, and the factor or
// transpose it stands for.
struct OperandRewrite {
  Value* source = nullptr;
  bool transpose = false;
  double scale = 1.0;
};

// The element type allows alpha as a float attribute: no double (alpha would round).
bool alpha_dtype(DType dtype) {
  return dtype_is_float(dtype) && dtype != DType::kDouble;
}

// A constant scalar factor `value` stands for in Mul (either side) or Div (divisor), with the
// other operand's rank kept (the scalar's rank is no larger); nullopt otherwise.
std::optional<std::pair<Value*, double>> scalar_factor(const Node* node, const Value* result,
                                                       const PassContext& context) {
  const bool mul = is_onnx_op(node, "Mul");
  if ((!mul && !is_onnx_op(node, "Div")) || node->inputs().size() != 2) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    if (!mul && side == 0) continue;  // Div: only the divisor may be the scalar
    Value* other = node->input(1 - side);
    const Value* s = node->input(side);
    if (!other || !s || other == result) continue;
    const int64_t rank = static_rank(other);
    auto value = scalar_constant(s, context, rank < 0 ? 0 : static_cast<size_t>(rank));
    if (!value || !std::isfinite(*value) || (!mul && *value == 0.0)) continue;
    if (static_dtype(s) != static_dtype(other)) continue;
    return std::make_pair(other, mul ? *value : 1.0 / *value);
  }
  return std::nullopt;
}

class FuseTransposeIntoMatMulPass : public GraphPass {
 public:
  std::string_view name() const override { return "fuse_transpose_into_matmul"; }

  size_t run(Graph& graph, PassContext& context) override {
    size_t changes = 0;
    std::unordered_set<const Node*> removed;
    for (Node* node : graph.nodes()) {
      if (removed.count(node) || !is_matmul(node)) continue;
      for (size_t side = 0; side < 2; ++side) {
        while (Node* fused = fold_operand(graph, node, side, context, removed)) {
          node = fused;
          ++changes;
        }
      }
      while (Node* fused = fold_output_scale(graph, node, context, removed)) {
        node = fused;
        ++changes;
      }
    }
    return changes;
  }

 private:
  // Folds the producer of operand `side` of `matmul` into every MatMul reading it; returns
  // `matmul`'s FusedMatMul, or nullptr.
  static Node* fold_operand(Graph& graph, Node* matmul, size_t side, const PassContext& context,
                            std::unordered_set<const Node*>& removed) {
    Value* operand = matmul->input(side);
    Node* producer = operand ? operand->producer() : nullptr;
    if (!producer || producer->graph() != &graph || is_graph_output(operand) ||
        kept(context, operand)) {
      return nullptr;
    }
    // FusedMatMul computes floating-point types only.
    if (!dtype_is_float(static_dtype(operand))) return nullptr;
    OperandRewrite rewrite;
    if (is_onnx_op(producer, "Transpose") && producer->input(0) && swaps_last_two(producer)) {
      rewrite = {producer->input(0), true, 1.0};
    } else if (auto factor = scalar_factor(producer, operand, context)) {
      if (!alpha_dtype(static_dtype(operand))) return nullptr;
      rewrite = {factor->first, false, factor->second};
    } else {
      return nullptr;
    }
    // Every reader must be a MatMul operand of this graph, so the producer can go.
    for (const Use& use : operand->uses()) {
      if (!is_matmul(use.node) || use.node->graph() != &graph || use.input > 1) return nullptr;
    }
    std::vector<Node*> readers;
    for (const Use& use : operand->uses()) {
      if (std::find(readers.begin(), readers.end(), use.node) == readers.end()) {
        readers.push_back(use.node);
      }
    }
    Node* result = nullptr;
    for (Node* reader : readers) {
      Node* fused = as_fused(graph, reader, context, removed);
      for (size_t i = 0; i < 2; ++i) {
        if (fused->input(i) != operand) continue;
        graph.set_node_input(fused, i, rewrite.source);
        if (rewrite.transpose) {
          const std::string flag = i == 0 ? "trans_a" : "trans_b";
          set_int_attribute(fused, flag, int_attr(fused, flag, 0) != 0 ? 0 : 1);
        } else {
          scale_alpha(fused, rewrite.scale);
        }
      }
      fused->set_name(fused->name() + "+" +
                      (producer->name().empty() ? producer->op_type() : producer->name()));
      if (reader == matmul) result = fused;
    }
    removed.insert(producer);
    std::vector<Value*> producer_inputs = producer->inputs();
    graph.remove_node(producer);
    for (Value* input : producer_inputs) drop_if_unused_initializer(graph, input);
    return result;
  }

  // Folds a scalar Mul / Div of the product into alpha; returns the FusedMatMul or nullptr.
  static Node* fold_output_scale(Graph& graph, Node* matmul, const PassContext& context,
                                 std::unordered_set<const Node*>& removed) {
    Value* y = matmul->output(0);
    if (!y || matmul->outputs().size() != 1 || has_activation(matmul) ||
        !fusable_intermediate(y, context) || !alpha_dtype(static_dtype(y))) {
      return nullptr;
    }
    Node* scale = y->uses()[0].node;
    if (scale->graph() != &graph || !scale->output(0)) return nullptr;
    auto factor = scalar_factor(scale, nullptr, context);
    if (!factor || factor->first != y) return nullptr;
    // A Bias is scaled with the product: it must be a constant to be rescaled.
    const Tensor* bias = nullptr;
    if (Value* b = matmul->input(2)) {
      bias = constant_value(b, context);
      if (!bias || !dtype_is_float(bias->dtype())) return nullptr;
    }
    Node* fused = as_fused(graph, matmul, context, removed);
    scale_alpha(fused, factor->second);
    if (bias) {
      std::vector<double> values = to_doubles(*bias);
      for (double& v : values) v *= factor->second;
      Value* old_bias = fused->input(2);
      Value* scaled = graph.add_initializer(graph.unique_name(old_bias->name() + "_scaled"),
                                            from_doubles(bias->dtype(), bias->shape(), values));
      graph.set_node_input(fused, 2, scaled);
      drop_if_unused_initializer(graph, old_bias);
    }
    removed.insert(scale);
    absorb_chain(graph, fused, {scale});
    return fused;
  }

  static void scale_alpha(Node* fused, double factor) {
    const double alpha = float_attribute(fused, "alpha", 1.0f);
    set_float_attribute(fused, "alpha", static_cast<float>(alpha * factor));
  }

  static Node* as_fused(Graph& graph, Node* matmul, const PassContext& context,
                        std::unordered_set<const Node*>& removed) {
    if (is_onnxkit_op(matmul, "FusedMatMul")) return matmul;
    removed.insert(matmul);
    return promote_to_onnxkit(graph, matmul, "FusedMatMul", false, context);
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_fuse_transpose_into_matmul_pass() {
  return std::make_unique<FuseTransposeIntoMatMulPass>();
}

}  // namespace onnxkit
