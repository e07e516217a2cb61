#include "passes/fusion_util.h"

#include <limits>

#include "core/buffer.h"
#include "ops/op_utils.h"

namespace onnxkit {

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> values(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), "fusion", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(p[i]);
  });
  return values;
}

Tensor from_doubles(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor t(dtype, std::move(shape));
  dispatch_float(dtype, "fusion", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

Tensor scale_runs(const Tensor& t, const std::vector<double>& runs) {
  Tensor out =
      Tensor::from_buffer(t.dtype(), t.shape(), Buffer::allocate_uninitialized(t.nbytes()));
  const int64_t run = runs.empty() ? 0 : t.numel() / static_cast<int64_t>(runs.size());
  dispatch_float(t.dtype(), "fusion", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = t.data<T>();
    T* o = out.mutable_data<T>();
    for (size_t r = 0; r < runs.size(); ++r) {
      const double f = runs[r];
      for (int64_t i = static_cast<int64_t>(r) * run, end = i + run; i < end; ++i) {
        o[i] = static_cast<T>(static_cast<double>(in[i]) * f);
      }
    }
  });
  return out;
}

std::optional<std::vector<double>> channel_param(const Value* value, int64_t n,
                                                 const PassContext& context) {
  const Tensor* t = constant_value(value, context);
  if (!t || !dtype_is_float(t->dtype()) || t->rank() != 1 || t->numel() != n) return std::nullopt;
  return to_doubles(*t);
}

bool inference_mode(const Node* bn, int64_t opset) {
  if (opset >= 14 && int_attr(bn, "training_mode", 0) != 0) return false;
  // Before opset 14 declaring the extra outputs is what selects training mode.
  for (size_t i = 1; i < bn->outputs().size(); ++i) {
    if (bn->output(i)) return false;
  }
  // Opsets 1-6: is_test defaults to 0 (training); only an explicit is_test=1 is sure.
  if (opset < 7 && int_attr(bn, "is_test", 0) == 0) return false;
  // spatial=0 (before opset 9) normalizes per activation, not per channel.
  if (opset < 9 && int_attr(bn, "spatial", 1) != 1) return false;
  return true;
}

std::optional<std::vector<double>> per_channel(const Tensor& c, size_t rank, int64_t channels) {
  if (c.rank() > rank) return std::nullopt;
  const size_t offset = rank - c.rank();  // c's dim d lines up with output axis offset + d
  for (size_t d = 0; d < c.rank(); ++d) {
    const int64_t dim = c.shape()[d];
    if (dim != 1 && !(offset + d == 1 && dim == channels)) return std::nullopt;
  }
  std::vector<double> values = to_doubles(c);
  if (values.size() == 1) return std::vector<double>(static_cast<size_t>(channels), values[0]);
  return values;
}

std::optional<ConvWithConstant> match_conv_with_constant(Graph& graph, Node* binary,
                                                         const PassContext& context) {
  if (binary->inputs().size() != 2 || !binary->output(0)) return std::nullopt;
  for (size_t side = 0; side < 2; ++side) {
    Value* x = binary->input(side);
    Node* conv = x ? x->producer() : nullptr;
    if (!is_onnx_op(conv, "Conv") || conv->graph() != &graph) continue;
    const Tensor* c = constant_value(binary->input(1 - side), context);
    if (!c) continue;
    Value* y = binary->output(0);
    if (x->uses().size() != 1 || is_graph_output(x) || kept(context, x) || kept(context, y) ||
        !can_replace(y, x)) {
      return std::nullopt;
    }
    return ConvWithConstant{conv, x, c};
  }
  return std::nullopt;
}

void remove_folded_binary(Graph& graph, Node* binary, Value* conv_output) {
  replace_value(graph, binary->output(0), conv_output);
  graph.remove_node(binary);
}

std::optional<std::vector<float>> clip_bounds(const Node* clip, const PassContext& context) {
  float lo = std::numeric_limits<float>::lowest();
  float hi = std::numeric_limits<float>::max();
  if (context.opset("") < 11) {
    if (const Attribute* a = clip->find_attribute("min"); a && a->type == AttrType::kFloat) {
      lo = a->f;
    }
    if (const Attribute* a = clip->find_attribute("max"); a && a->type == AttrType::kFloat) {
      hi = a->f;
    }
    return std::vector<float>{lo, hi};
  }
  for (size_t i = 1; i < clip->inputs().size(); ++i) {
    if (!clip->input(i)) continue;
    const Tensor* bound = constant_value(clip->input(i), context);
    if (!bound || !dtype_is_float(bound->dtype()) || bound->numel() != 1) return std::nullopt;
    (i == 1 ? lo : hi) = static_cast<float>(to_doubles(*bound)[0]);
  }
  return std::vector<float>{lo, hi};
}

}  // namespace onnxkit
