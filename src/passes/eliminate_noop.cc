// Pass eliminate_noop: ops that return their data input unchanged are removed: Cast /
// CastLike to the input's own type, Reshape / Flatten to the input's shape, identity
// Transpose, all-zero Pad, full Slice, Expand to a shape that broadcasts to the input's,
// single-input Concat, single-output Split, Squeeze / Unsqueeze that change no axis, and
// Mul / Div by 1 and Add / Sub of 0 where the constant does not widen the input.
//
// Decisions read the dtypes and shapes on Value::type() (shape inference runs before each
// round) and constant operands (constant_value). Where either is missing the node stays.
#include <algorithm>
#include <limits>
#include <optional>

#include "ops/op_utils.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

using Dims = std::vector<Dim>;

// The (possibly symbolic) dims of a tensor value of known rank.
const Dims* tensor_dims(const Value* value) {
  if (!value || !value->type().is_tensor() || !value->type().shape) return nullptr;
  return &*value->type().shape;
}

DType tensor_dtype(const Value* value) {
  return value && value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
}

std::optional<Shape> static_shape(const Value* value) {
  const Dims* dims = tensor_dims(value);
  if (!dims) return std::nullopt;
  Shape shape;
  for (const Dim& dim : *dims) {
    if (!dim.is_known()) return std::nullopt;
    shape.push_back(dim.value);
  }
  return shape;
}

// Both tensors have the same known dtype and the same fully known shape. `output`, the node's
// result, must not be a graph output: that type is the model's declaration, which may
// contradict what the node computes (fuzz: a Reshape of a [3, 1] input to [3], declared
// [3, 1], was removed and the output changed shape at level all).
bool same_static_type(const Value* a, const Value* output) {
  if (is_graph_output(output)) return false;
  const Value* b = output;
  auto sa = static_shape(a), sb = static_shape(b);
  return sa && sb && *sa == *sb && tensor_dtype(a) != DType::kUndefined &&
         tensor_dtype(a) == tensor_dtype(b);
}

// The integer values of a constant input (int32 / int64); nullopt when not constant.
std::optional<std::vector<int64_t>> constant_ints(const Value* value, const PassContext& context) {
  const Tensor* tensor = constant_value(value, context);
  if (!tensor || (tensor->dtype() != DType::kInt64 && tensor->dtype() != DType::kInt32)) {
    return std::nullopt;
  }
  return read_int64s(*tensor, "eliminate_noop");
}

std::optional<std::vector<int64_t>> ints_attribute(const Node& node, std::string_view name) {
  const Attribute* attribute = node.find_attribute(name);
  if (!attribute || attribute->type != AttrType::kInts) return std::nullopt;
  return attribute->ints;
}

int64_t int_attribute(const Node& node, std::string_view name, int64_t fallback) {
  const Attribute* attribute = node.find_attribute(name);
  return attribute && attribute->type == AttrType::kInt ? attribute->i : fallback;
}

// `axis` mapped into [0, rank), or nullopt when out of range.
std::optional<size_t> normalized_axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

// True when broadcasting `shape` against `dims` yields `dims` again: `shape` has no more
// dims and each of its (right-aligned) dims is 1 or the same known dim.
bool broadcasts_into(const Shape& shape, const Dims& dims) {
  if (shape.size() > dims.size()) return false;
  const size_t offset = dims.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    const Dim& dim = dims[offset + i];
    if (shape[i] != 1 && !(dim.is_known() && dim.value == shape[i])) return false;
  }
  return true;
}

// Every element of a float or integer tensor equals `target`.
bool all_elements_equal(const Tensor& tensor, double target) {
  if (!dtype_is_float(tensor.dtype()) && !dtype_is_integer(tensor.dtype())) return false;
  return dispatch_numeric(tensor.dtype(), "eliminate_noop", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = tensor.data<T>();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      if (convert_element<double>(data[i]) != target) return false;
    }
    return true;
  });
}

bool reshape_is_noop(const Node& node, const PassContext& context, int64_t opset) {
  const Value* x = node.input(0);
  auto target = opset >= 5 ? constant_ints(node.input(1), context) : ints_attribute(node, "shape");
  const Dims* dims = tensor_dims(x);
  if (target && dims && target->size() == dims->size()) {
    const bool allow_zero = int_attribute(node, "allowzero", 0) != 0;
    bool same = true, infer = false, has_zero_dim = false;
    for (size_t i = 0; i < dims->size(); ++i) {
      const int64_t want = (*target)[i];
      const Dim& dim = (*dims)[i];
      if (want == 0 && !allow_zero) {
        has_zero_dim |= dim.is_known() && dim.value == 0;
        continue;  // copies the input's dim
      }
      if (want == -1 && !infer) {
        infer = true;  // the only dim left over: the input's own
        continue;
      }
      if (!dim.is_known() || dim.value != want) same = false;
      has_zero_dim |= want == 0;
    }
    // With a zero elsewhere, -1 cannot be inferred: the Reshape fails, leave it.
    if (same && !(infer && has_zero_dim)) return true;
  }
  return same_static_type(x, node.output(0));
}

bool flatten_is_noop(const Node& node) {
  const Dims* dims = tensor_dims(node.input(0));
  if (!dims || dims->size() != 2) return false;   // the output is always 2-D
  int64_t axis = int_attribute(node, "axis", 1);  // in [-rank, rank]
  if (axis < 0) axis += 2;
  auto known = [&](size_t i, int64_t v) { return (*dims)[i].is_known() && (*dims)[i].value == v; };
  if (axis == 1) return true;
  if (axis == 0) return known(0, 1);  // (1, d0 * d1)
  return axis == 2 && known(1, 1);    // (d0 * d1, 1)
}

bool transpose_is_noop(const Node& node) {
  const Dims* dims = tensor_dims(node.input(0));
  auto perm = ints_attribute(node, "perm");
  if (!perm) return dims && dims->size() <= 1;  // default perm reverses the axes
  if (dims && dims->size() != perm->size()) return false;
  for (size_t i = 0; i < perm->size(); ++i) {
    if ((*perm)[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

bool pad_is_noop(const Node& node, const PassContext& context, int64_t opset) {
  std::optional<std::vector<int64_t>> pads;
  if (opset >= 11) {
    pads = constant_ints(node.input(1), context);
  } else {
    pads = ints_attribute(node, opset >= 2 ? "pads" : "paddings");
  }
  return pads && std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
}

bool slice_is_noop(const Node& node, const PassContext& context, int64_t opset) {
  const Dims* dims = tensor_dims(node.input(0));
  if (!dims) return false;
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (opset >= 10) {
    starts = constant_ints(node.input(1), context);
    ends = constant_ints(node.input(2), context);
    if (node.input(3)) {
      axes = constant_ints(node.input(3), context);
      if (!axes) return false;
    }
    if (node.input(4)) {
      steps = constant_ints(node.input(4), context);
      if (!steps) return false;
    }
  } else {
    starts = ints_attribute(node, "starts");
    ends = ints_attribute(node, "ends");
    axes = ints_attribute(node, "axes");
  }
  if (!starts || !ends || starts->size() != ends->size()) return false;
  const size_t n = starts->size();
  if ((axes && axes->size() != n) || (steps && steps->size() != n)) return false;
  std::vector<bool> seen(dims->size(), false);
  for (size_t i = 0; i < n; ++i) {
    auto axis = normalized_axis(axes ? (*axes)[i] : static_cast<int64_t>(i), dims->size());
    if (!axis || seen[*axis]) return false;
    seen[*axis] = true;
    if (steps && (*steps)[i] != 1) return false;
    const Dim& dim = (*dims)[*axis];
    const int64_t start = (*starts)[i], end = (*ends)[i];
    // Starts clamp to [0, dim], so anything at or below -dim also means 0.
    const bool from_first = start == 0 || (dim.is_known() && start <= -dim.value);
    const bool to_last =
        end == std::numeric_limits<int64_t>::max() || (dim.is_known() && end >= dim.value);
    if (!from_first || !to_last) return false;
  }
  return true;
}

bool split_is_noop(const Node& node, const PassContext& context, int64_t opset) {
  std::optional<std::vector<int64_t>> split;
  if (node.input(1)) {
    split = constant_ints(node.input(1), context);
    if (!split) return false;
  } else if (opset < 13) {
    split = ints_attribute(node, "split");
  }
  if (!split) return true;  // one output takes the whole axis
  const Dims* dims = tensor_dims(node.input(0));
  if (!dims || split->size() != 1) return false;
  auto axis = normalized_axis(int_attribute(node, "axis", 0), dims->size());
  return axis && (*dims)[*axis].is_known() && (*dims)[*axis].value == (*split)[0];
}

bool squeeze_is_noop(const Node& node, const PassContext& context, int64_t opset) {
  std::optional<std::vector<int64_t>> axes;
  if (opset >= 13) {
    if (node.input(1)) {
      axes = constant_ints(node.input(1), context);
      if (!axes) return false;
    }
  } else {
    axes = ints_attribute(node, "axes");
  }
  if (axes && !axes->empty()) return false;  // removes those axes
  // No axes: every 1-dim goes, so there must be none (and no symbolic dim that could be).
  auto shape = static_shape(node.input(0));
  return shape && std::none_of(shape->begin(), shape->end(), [](int64_t d) { return d == 1; });
}

// X * 1, 1 * X, X / 1, X + 0, 0 + X, X - 0 where the constant has X's dtype and
// broadcasting it does not change X's shape.
std::optional<size_t> arithmetic_noop_input(const Node& node, const PassContext& context,
                                            int64_t opset) {
  if (opset < 7 || node.inputs().size() != 2) return std::nullopt;  // legacy broadcast attrs
  const std::string& op = node.op_type();
  const double neutral = op == "Mul" || op == "Div" ? 1.0 : 0.0;
  const bool commutative = context.traits(&node).commutative;
  for (size_t data : {size_t{0}, size_t{1}}) {
    if (data == 1 && !commutative) break;
    const Value* x = node.input(data);
    const Tensor* constant = constant_value(node.input(1 - data), context);
    const Dims* dims = tensor_dims(x);
    if (!x || !constant || !dims) continue;
    const DType dtype = tensor_dtype(x);
    if (dtype != constant->dtype() || (!dtype_is_float(dtype) && !dtype_is_integer(dtype))) {
      continue;
    }
    if (tensor_dtype(node.output(0)) != DType::kUndefined &&
        tensor_dtype(node.output(0)) != dtype) {
      continue;
    }
    if (broadcasts_into(constant->shape(), *dims) && all_elements_equal(*constant, neutral)) {
      return data;
    }
  }
  return std::nullopt;
}

// The input a no-op node returns unchanged, or nullopt.
std::optional<size_t> noop_input(const Node& node, const PassContext& context) {
  const std::string& op = node.op_type();
  const int64_t opset = context.opset("");
  if (node.outputs().size() != 1 || !node.output(0) || !node.input(0)) {
    return std::nullopt;
  }
  const Value* x = node.input(0);
  const Value* y = node.output(0);
  bool noop = false;
  if (op == "Cast") {
    const Attribute* to = node.find_attribute("to");
    noop = to && tensor_dtype(x) != DType::kUndefined &&
           static_cast<int64_t>(tensor_dtype(x)) == to->i;
  } else if (op == "CastLike") {
    noop = tensor_dtype(x) != DType::kUndefined && tensor_dtype(x) == tensor_dtype(node.input(1));
  } else if (op == "Reshape") {
    noop = reshape_is_noop(node, context, opset);
  } else if (op == "Flatten") {
    noop = flatten_is_noop(node);
  } else if (op == "Transpose") {
    noop = transpose_is_noop(node);
  } else if (op == "Pad") {
    noop = pad_is_noop(node, context, opset);
  } else if (op == "Slice") {
    noop = slice_is_noop(node, context, opset);
  } else if (op == "Expand") {
    auto shape = constant_ints(node.input(1), context);
    const Dims* dims = tensor_dims(x);
    noop = (shape && dims && broadcasts_into(*shape, *dims)) || same_static_type(x, y);
  } else if (op == "Concat") {
    noop = node.inputs().size() == 1;
  } else if (op == "Split") {
    noop = split_is_noop(node, context, opset);
  } else if (op == "Squeeze") {
    noop = squeeze_is_noop(node, context, opset);
  } else if (op == "Unsqueeze") {
    auto axes = opset >= 13 ? constant_ints(node.input(1), context) : ints_attribute(node, "axes");
    noop = axes && axes->empty();
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    return arithmetic_noop_input(node, context, opset);
  }
  if (!noop) return std::nullopt;
  return 0;
}

size_t bypass(Graph& graph, Node* node, size_t input_index, const PassContext& context) {
  Value* input = node->input(input_index);
  Value* output = node->output(0);
  // A value a nested subgraph returns stays with its producer.
  if (!can_replace(output, input) || output->returned_by_subgraph()) return 0;
  if (context.keep_values.count(output->name())) return 0;
  if (is_graph_output(output) && context.keep_values.count(input->name())) return 0;
  // The graph's interface keeps its declared type when the input's is unknown.
  if (is_graph_output(output) && input->type().kind == ValueType::Kind::kNone) {
    input->set_type(output->type());
  }
  replace_value(graph, output, input);
  graph.remove_node(node);
  return 1;
}

size_t eliminate_noop(Graph& graph, Node* node, PassContext& context) {
  if (!node->domain().empty()) return 0;
  std::optional<size_t> passthrough = noop_input(*node, context);
  return passthrough ? bypass(graph, node, *passthrough, context) : 0;
}

}  // namespace

std::unique_ptr<GraphPass> make_eliminate_noop_pass() {
  return make_rule_pass("eliminate_noop", {}, eliminate_noop);
}

}  // namespace onnxkit
