#include "passes/convert_opset.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/domain.h"
#include "ir/graph.h"
#include "onnx/onnx_checks.h"
#include "passes/pass.h"

namespace onnxkit {
namespace {

// An adapter rewrites one node of the op it is registered for from opset `to - 1` to `to`.
using Adapter = void (*)(Graph& graph, Node& node);

Value* int64_constant(Graph& graph, const Node& node, std::string_view what,
                      std::vector<int64_t> values, bool scalar = false) {
  Shape shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
  return graph.add_initializer(
      graph.unique_name(node.name().empty() ? std::string(what)
                                            : node.name() + "_" + std::string(what)),
      Tensor::from_vector(DType::kInt64, shape, values));
}

// Sets input `index`, padding omitted optional inputs before it.
void set_input_at(Graph& graph, Node& node, size_t index, Value* value) {
  while (node.inputs().size() < index) graph.add_node_input(&node, nullptr);
  if (node.inputs().size() == index) {
    graph.add_node_input(&node, value);
  } else {
    graph.set_node_input(&node, index, value);
  }
}

// Reduce* 17 -> 18: the axes attribute becomes input 1 (ONNX's AxesAttributeToInput).
void axes_attribute_to_input(Graph& graph, Node& node) {
  const Attribute* axes = node.find_attribute("axes");
  if (!axes) return;
  if (axes->type != AttrType::kInts) fail_at(node, "axes is not an INTS attribute");
  std::vector<int64_t> values = axes->ints;
  node.remove_attribute("axes");
  set_input_at(graph, node, 1, int64_constant(graph, node, "axes", std::move(values)));
}

// Split 17 -> 18: without a `split` input the outputs are equal parts, which version 18 asks
// to be said with num_outputs (ONNX's Split_17_18).
void split_num_outputs(Graph&, Node& node) {
  if (node.input(1) || node.find_attribute("num_outputs")) return;
  node.set_attribute(int_attribute("num_outputs", static_cast<int64_t>(node.outputs().size())));
}

// DFT 19 -> 20: the axis attribute (default 1) becomes input 2; version 20's default is -2, so
// the axis is always written.
void dft_axis_to_input(Graph& graph, Node& node) {
  int64_t axis = 1;
  if (const Attribute* attribute = node.find_attribute("axis")) {
    if (attribute->type != AttrType::kInt) fail_at(node, "axis is not an INT attribute");
    axis = attribute->i;
    node.remove_attribute("axis");
  }
  set_input_at(graph, node, 2, int64_constant(graph, node, "axis", {axis}, true));
}

// GridSample 19 -> 20: the interpolation modes were renamed (ONNX's GridSample_19_20).
void grid_sample_modes(Graph&, Node& node) {
  const Attribute* mode = node.find_attribute("mode");
  if (!mode || mode->type != AttrType::kString) return;
  if (mode->s == "bilinear") node.set_attribute(string_attribute("mode", "linear"));
  if (mode->s == "bicubic") node.set_attribute(string_attribute("mode", "cubic"));
}

// GroupNormalization 20 -> 21: scale and bias hold one value per channel instead of one per
// group; each group's value is repeated over its C / num_groups channels (ONNX's
// GroupNormalization_20_21), with nodes, since C may be known only at run time. Shape folding
// makes constants of them when it is known.
void group_norm_per_channel(Graph& graph, Node& node) {
  const Attribute* groups = node.find_attribute("num_groups");
  if (!groups || groups->type != AttrType::kInt) fail_at(node, "needs the num_groups attribute");
  Value* x = node.input(0);
  if (!x) fail_at(node, "has no input X");
  const std::string stem = node.name().empty() ? std::string("group_norm") : node.name();
  auto fresh = [&](std::string_view what) {
    return graph.unique_name(stem + "_" + std::string(what));
  };
  Node* channels_node =
      graph.add_node("Shape", {x}, {fresh("channels")}, "", fresh("shape"), &node);
  channels_node->set_attribute(int_attribute("start", 1));
  channels_node->set_attribute(int_attribute("end", 2));
  Value* group_count = int64_constant(graph, node, "num_groups", {groups->i});
  Value* per_group = graph
                         .add_node("Div", {channels_node->output(0), group_count},
                                   {fresh("per_group")}, "", fresh("div"), &node)
                         ->output(0);
  Node* target_node = graph.add_node("Concat", {group_count, per_group}, {fresh("target")}, "",
                                     fresh("concat"), &node);
  target_node->set_attribute(int_attribute("axis", 0));
  Value* column = int64_constant(graph, node, "column_axis", {1});
  Value* flat = int64_constant(graph, node, "flat", {-1});
  for (size_t index : {size_t{1}, size_t{2}}) {
    Value* per_group_values = node.input(index);
    if (!per_group_values) continue;
    const std::string what = index == 1 ? "scale" : "bias";
    Value* unsqueezed =
        graph
            .add_node("Unsqueeze", {per_group_values, column}, {fresh(what + "_column")}, "",
                      fresh(what + "_unsqueeze"), &node)
            ->output(0);
    Value* expanded = graph
                          .add_node("Expand", {unsqueezed, target_node->output(0)},
                                    {fresh(what + "_expanded")}, "", fresh(what + "_expand"), &node)
                          ->output(0);
    Value* per_channel = graph
                             .add_node("Reshape", {expanded, flat}, {fresh(what + "_channels")}, "",
                                       fresh(what + "_reshape"), &node)
                             ->output(0);
    graph.set_node_input(&node, index, per_channel);
  }
}

struct OpAdapter {
  int64_t to;  // the opset the adapter converts to (from to - 1)
  std::string_view op;
  Adapter adapter;
};

// The upward adapters past 17 that change nodes (onnx 1.23's version_converter/convert.h);
// LpPool 17 -> 18 sets ceil_mode 0, which is the default, so it needs nothing here.
constexpr OpAdapter kAdapters[] = {
    {18, "ReduceL1", axes_attribute_to_input},
    {18, "ReduceL2", axes_attribute_to_input},
    {18, "ReduceLogSum", axes_attribute_to_input},
    {18, "ReduceLogSumExp", axes_attribute_to_input},
    {18, "ReduceMax", axes_attribute_to_input},
    {18, "ReduceMean", axes_attribute_to_input},
    {18, "ReduceMin", axes_attribute_to_input},
    {18, "ReduceProd", axes_attribute_to_input},
    {18, "ReduceSumSquare", axes_attribute_to_input},
    {18, "Split", split_num_outputs},
    {20, "DFT", dft_axis_to_input},
    {20, "GridSample", grid_sample_modes},
    {21, "GroupNormalization", group_norm_per_channel},
};

void adapt_graph(Graph& graph, int64_t to) {
  for (Node* node : graph.nodes()) {
    for (Graph* sub : node->subgraphs()) adapt_graph(*sub, to);
    if (!node->domain().empty()) continue;
    for (const OpAdapter& adapter : kAdapters) {
      if (adapter.to == to && adapter.op == node->op_type()) adapter.adapter(graph, *node);
    }
  }
}

void set_opset(Model& model, int64_t version) {
  for (OpsetImport& opset : model.opset_imports) {
    if (canonical_domain(opset.domain).empty()) opset.version = version;
  }
}

}  // namespace

Status upgrade_opset(Model& model, int64_t target) {
  return capture([&] {
    const int64_t current = model.opset_version("");
    const int64_t known = max_known_opset("");
    if (current < known) fail("upgrading starts at opset {}; the model imports {}", known, current);
    if (target > kNewestTargetOpset) {
      fail("target opset {} is newer than the {} this build knows", target, kNewestTargetOpset);
    }
    for (int64_t to = current + 1; to <= target; ++to) {
      adapt_graph(model.graph(), to);
      set_opset(model, to);
    }
  });
}

Status convert_opset(Model& model, int64_t target) {
  return capture([&] {
    const int64_t current = model.opset_version("");
    const int64_t known = max_known_opset("");
    if (target < 1 || target > kNewestTargetOpset) {
      fail("target opset {} is outside what this build converts to (1 to {})", target,
           kNewestTargetOpset);
    }
    if (current == target) return;
    if (current > known && target < current) {
      fail("converting down from opset {} is not supported (libonnx {} knows opsets up to {})",
           current, libonnx_version(), known);
    }
    if (current < known || target < known) {
      convert_opset_libonnx(model, std::min(target, known)).throw_if_error();
    }
    if (target > known) upgrade_opset(model, target).throw_if_error();
  });
}

}  // namespace onnxkit
