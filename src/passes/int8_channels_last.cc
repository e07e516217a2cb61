// Pass int8_channels_last (level `layout`): keeps chains of int8 convolutions channels-last.
//
// The int8 convolution kernels (oneDNN's, and ONNX Runtime's MLAS) work on NHWC; a
// QLinearConv on NCHW pays a transpose of its input and of its output. In a QDQ model such
// as MobileNetV2 every conv reads another conv's output, directly or through per-tensor
// QuantizeLinear / DequantizeLinear and element-wise ops (a residual Add, Relu, Clip), so
// those transposes are most of what the int8 kernels cost besides the products. As ONNX
// Runtime's NHWC transformer does, QLinearConv becomes com.onnxkit ChannelsLastQLinearConv
// (ops/channels_last_ops.h) and the nodes between such convs read and write [N, H, W, C] values;
// Transposes are inserted only where the chain meets the rest of the graph.
//
// A chain grows forward from its convs: a node joins when it is a QLinearConv on a rank-4
// int8 X with constant weights, or when one of its activation inputs comes from a node
// that joined and it is layout-agnostic:
//   - an element-wise op by its traits (AxisRule::kElementwise) whose rank-4 inputs all
//     have the output's shape and whose other inputs hold one element (scales, zero points,
//     Clip's bounds): Relu, Clip, Add, ..., and any QLinear* element-wise op registered with
//     that trait (com.microsoft QLinearAdd / QLinearMul take part as soon as their
//     definitions carry it);
//   - QuantizeLinear / DequantizeLinear per tensor (one-element scale and zero point);
//   - a pool on its rank-4 int8 X: MaxPool (no Indices output), which becomes com.onnxkit
//     ChannelsLastMaxPool, and com.microsoft QLinearGlobalAveragePool, which takes
//     channels_last = 1 (ORT's own attribute). ResNet-50 pools between conv1 and layer1, both
//     networks before the classifier: without them the chain was cut there.
// Joined nodes that only feed the rest of the graph and widen their values (a trailing
// DequantizeLinear) leave again, so the transpose back happens on int8 bytes. A chain is
// converted when it holds at least two convs.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/domain.h"
#include "ir/graph_clone.h"
#include "ops/channels_last_ops.h"
#include "passes/pass.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

const std::vector<int64_t> kToChannelsLast{0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst{0, 3, 1, 2};

// The four dims of a rank-4 tensor value, or nullptr.
const std::vector<Dim>* rank4_dims(const Value* value) {
  if (!value) return nullptr;
  const ValueType& type = value->type();
  if (!type.is_tensor() || !type.shape || type.shape->size() != 4) return nullptr;
  return &*type.shape;
}

DType dtype_of(const Value* value) {
  if (value->has_initializer()) return value->initializer().dtype();
  return value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
}

bool is_int8(DType dtype) {
  return dtype == DType::kUInt8 || dtype == DType::kInt8;
}

// A value known to hold one element whatever the layout (a scalar, [1], [1, 1, 1, 1]).
bool one_element(const Value* value) {
  if (!value) return true;  // an omitted optional input
  if (value->has_initializer()) return value->initializer().numel() == 1;
  const ValueType& type = value->type();
  if (!type.is_tensor() || !type.shape) return false;
  for (const Dim& dim : *type.shape) {
    if (!dim.is_known() || dim.value != 1) return false;
  }
  return true;
}

std::vector<Dim> permuted(const std::vector<Dim>& dims, const std::vector<int64_t>& perm) {
  std::vector<Dim> out;
  for (int64_t axis : perm) out.push_back(dims[static_cast<size_t>(axis)]);
  return out;
}

enum class Role { kNone, kConv, kLayoutAgnostic, kPool };

class Int8ChannelsLastPass : public GraphPass {
 public:
  std::string_view name() const override { return "int8_channels_last"; }

  size_t run(Graph& graph, PassContext& context) override {
    if (graph.parent()) return 0;  // the main graph's chains only
    activation_inputs_.clear();
    const std::vector<Node*> order = graph.topological_order();
    std::map<const Node*, Role> roles;
    for (Node* node : order) {
      const Role role = role_of(node, roles, context);
      if (role != Role::kNone) roles[node] = role;
    }
    prune_widening_leaves(order, roles);
    const std::vector<Node*> chosen = choose(order, roles);
    if (chosen.empty()) return 0;
    if (context.model && context.model->opset_version(kOnnxkitDomain) < kOnnxkitDomainVersion) {
      context.model->opset_imports.push_back({std::string(kOnnxkitDomain), kOnnxkitDomainVersion});
    }
    rewrite(graph, chosen, roles);
    return chosen.size();
  }

 private:
  static bool is_conv(const Node* node) {
    if (!is_onnx_op(node, "QLinearConv") || node->inputs().size() < 8) return false;
    const Value* x = node->input(0);
    const Value* w = node->input(3);
    const std::vector<Dim>* dims = rank4_dims(x);
    return dims && is_int8(dtype_of(x)) && w && w->has_initializer() &&
           w->initializer().rank() == 4 && rank4_dims(node->output(0));
  }

  // A pool that has a channels-last form, on a rank-4 int8 X.
  static bool is_pool(const Node* node) {
    if (node->outputs().empty() || !rank4_dims(node->input(0)) ||
        !is_int8(dtype_of(node->input(0))) || !rank4_dims(node->output(0))) {
      return false;
    }
    if (is_onnx_op(node, "MaxPool")) {
      const bool indices =
          node->outputs().size() > 1 && node->output(1) && !is_unused(node->output(1));
      return !indices;
    }
    if (node->domain() == kMicrosoftDomain && node->op_type() == "QLinearGlobalAveragePool") {
      if (int_attr(node, "channels_last", 0) != 0 || node->inputs().size() != 5) return false;
      for (size_t i = 1; i < 5; ++i) {
        if (!one_element(node->input(i))) return false;
      }
      return true;
    }
    return false;
  }

  // The inputs of `node` that carry activations (rank-4 values with the output's shape),
  // or nullopt when the node is not layout-agnostic.
  static std::optional<std::vector<size_t>> activation_inputs(const Node* node,
                                                              const PassContext& context) {
    if (node->outputs().size() != 1) return std::nullopt;
    const std::vector<Dim>* y = rank4_dims(node->output(0));
    if (!y) return std::nullopt;
    const bool quantizer =
        is_onnx_op(node, "QuantizeLinear") || is_onnx_op(node, "DequantizeLinear");
    if (quantizer) {
      if (int_attr(node, "block_size", 0) != 0 || node->inputs().size() < 2 ||
          !one_element(node->input(1)) ||
          (node->inputs().size() > 2 && !one_element(node->input(2)))) {
        return std::nullopt;
      }
    } else if (context.traits(node).axes != AxisRule::kElementwise) {
      return std::nullopt;
    }
    std::vector<size_t> activations;
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Value* input = node->input(i);
      if (quantizer && i > 0) break;
      const std::vector<Dim>* dims = rank4_dims(input);
      if (dims && *dims == *y && !one_element(input)) {
        activations.push_back(i);
      } else if (!one_element(input)) {
        return std::nullopt;
      }
    }
    if (activations.empty()) return std::nullopt;
    return activations;
  }

  Role role_of(const Node* node, const std::map<const Node*, Role>& roles,
               const PassContext& context) {
    if (is_conv(node)) return Role::kConv;
    if (is_pool(node)) {
      const Node* producer = node->input(0)->producer();
      return producer && roles.count(producer) ? Role::kPool : Role::kNone;
    }
    const auto inputs = activation_inputs(node, context);
    if (!inputs) return Role::kNone;
    for (size_t i : *inputs) {
      const Node* producer = node->input(i)->producer();
      if (producer && roles.count(producer)) {
        activation_inputs_[node] = *inputs;
        return Role::kLayoutAgnostic;
      }
    }
    return Role::kNone;
  }

  // Drops joined non-conv nodes whose output no joined node reads and is wider than int8:
  // the chain hands back its int8 value instead (a quarter of the bytes to transpose).
  static void prune_widening_leaves(const std::vector<Node*>& order,
                                    std::map<const Node*, Role>& roles) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const Node* node = *it;
        auto role = roles.find(node);
        if (role == roles.end() || role->second == Role::kConv) continue;
        if (is_int8(dtype_of(node->output(0)))) continue;
        bool read_by_chain = false;
        for (const Use& use : node->output(0)->uses()) {
          read_by_chain = read_by_chain || roles.count(use.node) > 0;
        }
        if (!read_by_chain) {
          roles.erase(role);
          changed = true;
        }
      }
    }
  }

  // Connected chains with at least two convs, in graph order.
  static std::vector<Node*> choose(const std::vector<Node*>& order,
                                   const std::map<const Node*, Role>& roles) {
    return nodes_of_anchored_chains(
        order, roles, [](Role role) { return role == Role::kConv; }, 2);
  }

  void rewrite(Graph& graph, const std::vector<Node*>& chosen,
               const std::map<const Node*, Role>& roles) {
    std::map<const Value*, Value*> twin;  // NCHW value -> its channels-last form
    auto transposed = [&](Value* v, const std::vector<int64_t>& perm, const std::string& suffix) {
      Node* transpose = graph.add_node("Transpose", {v}, {graph.unique_name(v->name() + suffix)});
      transpose->set_attribute(ints_attribute("perm", perm));
      return transpose->output(0);
    };
    auto channels_last_form = [&](Value* v) {
      if (auto it = twin.find(v); it != twin.end()) return it->second;
      Value* out = transposed(v, kToChannelsLast, "_nhwc");
      out->set_type(ValueType::tensor(dtype_of(v), permuted(*rank4_dims(v), kToChannelsLast)));
      return twin[v] = out;
    };
    for (Node* node : chosen) {
      const Role role = roles.at(node);
      std::vector<Value*> inputs(node->inputs().begin(), node->inputs().end());
      const std::vector<size_t> activations =
          role == Role::kLayoutAgnostic ? activation_inputs_.at(node) : std::vector<size_t>{0};
      for (size_t i : activations) inputs[i] = channels_last_form(inputs[i]);
      Value* y = node->output(0);
      std::string op_type = node->op_type(), domain = node->domain();
      if (role == Role::kConv) {
        op_type = kChannelsLastQLinearConv;
        domain = kOnnxkitDomain;
      } else if (role == Role::kPool && is_onnx_op(node, "MaxPool")) {
        op_type = kChannelsLastMaxPool;
        domain = kOnnxkitDomain;
      }
      Node* rewritten = graph.add_node(op_type, inputs, {graph.unique_name(y->name() + "_nhwc")},
                                       domain, node->name());
      for (const Attribute& attribute : node->attributes()) {
        // MaxPool's storage_order only orders its Indices output, which the chain has none of.
        if (attribute.name == "storage_order" || attribute.name == "channels_last") continue;
        rewritten->set_attribute(clone_attribute(attribute, &graph, {}));
      }
      if (role == Role::kPool && domain == kMicrosoftDomain) {
        rewritten->set_attribute(int_attribute("channels_last", 1));
      }
      rewritten->output(0)->set_type(
          ValueType::tensor(y->type().elem_type, permuted(*rank4_dims(y), kToChannelsLast)));
      twin[y] = rewritten->output(0);
    }
    // Readers outside the chain and graph outputs get NCHW back through one Transpose each;
    // the original nodes go (readers first, so each one's remaining uses are outside ones).
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      Node* node = *it;
      Value* y = node->output(0);
      if (!is_unused(y)) {
        Value* back = transposed(twin.at(y), kToChannelsFirst, "_nchw");
        back->set_type(y->type());
        replace_value(graph, y, back);
      }
      graph.remove_node(node);
    }
  }

  std::map<const Node*, std::vector<size_t>> activation_inputs_;
};

}  // namespace

std::unique_ptr<GraphPass> make_int8_channels_last_pass() {
  return std::make_unique<Int8ChannelsLastPass>();
}

}  // namespace onnxkit
