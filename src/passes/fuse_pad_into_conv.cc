// Pass fuse_pad_into_conv: a constant-mode Pad of the spatial dims (none on N and C) whose
// only reader is a Conv / AveragePool / MaxPool with explicit pads (auto_pad NOTSET) is
// added to that op's pads. The padding value must be what the op pads with itself:
//   Conv: 0;  AveragePool: 0 and count_include_pad=1 (otherwise the padded zeros would
//   stop counting);  MaxPool: -inf (and no Indices output, whose numbering would change).
#include <cmath>
#include <optional>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

std::string string_attr(const Node* node, std::string_view name, std::string fallback) {
  const Attribute* a = node->find_attribute(name);
  return a && a->type == AttrType::kString ? a->s : fallback;
}

// What a constant-mode Pad adds: pads ([x1_begin, ..., x1_end, ...] over all dims) and the
// fill value. nullopt when the Pad is not constant mode or its operands are not constants.
struct PadSpec {
  std::vector<int64_t> pads;
  double value = 0;
};

std::optional<PadSpec> read_pad(const Node* pad, const PassContext& context) {
  if (string_attr(pad, "mode", "constant") != "constant") return std::nullopt;
  PadSpec spec;
  const int64_t opset = context.opset("");
  if (opset < 11) {
    // Pad-1 calls the attribute `paddings`, Pad-2 `pads`; the value is a float attribute.
    const Attribute* pads = pad->find_attribute(opset < 2 ? "paddings" : "pads");
    if (!pads || pads->type != AttrType::kInts || pad->inputs().size() != 1) return std::nullopt;
    spec.pads = pads->ints;
    const Attribute* value = pad->find_attribute("value");
    if (value && value->type != AttrType::kFloat) return std::nullopt;
    spec.value = value ? value->f : 0.0;
    return spec;
  }
  // Opset 11+: pads (and the optional value) are inputs; an `axes` input (18) is not handled.
  if (pad->inputs().size() > 3 && pad->input(3)) return std::nullopt;
  const Tensor* pads = constant_value(pad->input(1), context);
  if (!pads || pads->dtype() != DType::kInt64 || pads->rank() != 1) return std::nullopt;
  spec.pads = read_int64s(*pads, "Pad");
  if (const Value* value = pad->input(2)) {
    const Tensor* t = constant_value(value, context);
    if (!t || t->numel() != 1 || !dtype_is_float(t->dtype())) return std::nullopt;
    spec.value = read_scalar(*t, "Pad");
  }
  return spec;
}

// True when `op`, reading a Pad filled with `value`, pads the same way itself.
bool pads_alike(const Node* op, double value, int64_t opset) {
  if (op->op_type() == "Conv") return value == 0;
  if (op->op_type() == "AveragePool") {
    // count_include_pad exists from opset 7; ceil_mode windows past the end are left alone.
    return value == 0 && opset >= 7 && int_attr(op, "count_include_pad", 0) == 1 &&
           int_attr(op, "ceil_mode", 0) == 0;
  }
  if (op->op_type() == "MaxPool") {
    const bool indices = op->outputs().size() > 1 && op->output(1);
    return std::isinf(value) && value < 0 && !indices;
  }
  return false;
}

bool fuse(Graph& graph, Node* pad, const PassContext& context) {
  Value* x = pad->input(0);
  Value* padded = pad->output(0);
  if (!x || !padded || padded->uses().size() != 1 || is_graph_output(padded) ||
      kept(context, padded)) {
    return false;
  }
  const Use use = padded->uses()[0];
  Node* op = use.node;
  if (use.input != 0 || op->graph() != &graph) return false;
  if (!is_onnx_op(op, "Conv") && !is_onnx_op(op, "AveragePool") && !is_onnx_op(op, "MaxPool")) {
    return false;
  }
  if (string_attr(op, "auto_pad", "NOTSET") != "NOTSET") return false;
  auto spec = read_pad(pad, context);
  if (!spec || !pads_alike(op, spec->value, context.opset(""))) return false;

  // pads cover N, C and the spatial dims; only the spatial ones, never negative (a crop).
  const std::vector<int64_t>& pads = spec->pads;
  if (pads.size() % 2 != 0 || pads.size() < 6) return false;
  const size_t rank = pads.size() / 2;
  if (pads[0] != 0 || pads[1] != 0 || pads[rank] != 0 || pads[rank + 1] != 0) return false;
  for (int64_t p : pads) {
    if (p < 0) return false;
  }
  if (x->type().is_tensor() && x->type().shape && x->type().shape->size() != rank) return false;
  const size_t spatial = rank - 2;
  std::vector<int64_t> merged(2 * spatial, 0);
  if (const Attribute* own = op->find_attribute("pads")) {
    if (own->type != AttrType::kInts || own->ints.size() != merged.size()) return false;
    merged = own->ints;
  }
  for (size_t i = 0; i < spatial; ++i) {
    merged[i] += pads[2 + i];
    merged[spatial + i] += pads[rank + 2 + i];
  }
  if (op->op_type() != "Conv") {
    // Pools require pads smaller than the kernel (a window must see some input).
    const Attribute* kernel = op->find_attribute("kernel_shape");
    if (!kernel || kernel->type != AttrType::kInts || kernel->ints.size() != spatial) {
      return false;
    }
    for (size_t i = 0; i < 2 * spatial; ++i) {
      if (merged[i] >= kernel->ints[i % spatial]) return false;
    }
  }

  op->set_attribute(ints_attribute("pads", std::move(merged)));
  graph.set_node_input(op, 0, x);
  graph.remove_node(pad);
  return true;
}

}  // namespace

std::unique_ptr<GraphPass> make_fuse_pad_into_conv_pass() {
  return make_rule_pass("fuse_pad_into_conv", {"Pad"}, fuse);
}

}  // namespace onnxkit
