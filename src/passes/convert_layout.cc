// Pass convert_layout (level `layout`): keeps the activations of conv chains in the blocked
// layout (ops/blocked_ops.h, oneDNN's nChw16c) so that consecutive convs pay no reorder.
//
// Convs (Conv, FusedConv) become BlockedConv, pools their Blocked* forms; element-wise ops
// and channel Concats between them stay as they are but read and write blocked tensors.
// ReorderToBlocked is inserted where a chain reads a plain value, ReorderFromBlocked where a
// plain reader (or a graph output) needs a chain's value. A chain is converted only when it
// holds at least two convs or pools, so a lone conv keeps its plain in-kernel path.
// Requirements: float32, 2-D images (rank 4), channel counts known. Channel counts that are
// no multiple of 16 (MobileNet's 24, EfficientNet's 40) are padded to one, with zeros in the
// padding lanes (ops/blocked_ops.h): such values are blocked only when a conv writes them
// (a graph input of 3 channels, an RGB image, is read plain by the chain's first conv), and
// only pass through ops that keep zeros zero (Relu but not Sigmoid, Add but not Div, no
// Concat).
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "ir/graph_clone.h"
#include "ops/blocked_ops.h"
#include "ops/fused_ops.h"
#include "passes/fusion_util.h"
#include "passes/pass.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

// Elementwise ops work on the blocked layout unchanged: one-input ops (Clip's bounds
// aside) and two-input ops whose broadcasting holds in the blocked shape (see
// broadcasts_in_blocked_layout), float32 in and out. Through a padded value only those that
// keep zero padding lanes zero (OpTraits::keeps_zero) may stay blocked.
bool float_or_untyped(const Value* value) {
  const ValueType& type = value->type();
  if (!type.is_tensor()) return type.kind == ValueType::Kind::kNone;  // nothing inferred
  return type.elem_type == DType::kFloat || type.elem_type == DType::kUndefined;
}

bool is_unary_elementwise(const Node* node, const PassContext& context) {
  const OpTraits& traits = context.traits(node);
  return node->domain().empty() && traits.axes == AxisRule::kElementwise && !traits.broadcasting &&
         node->output(0) && float_or_untyped(node->output(0));
}

bool is_binary_elementwise(const Node* node, const PassContext& context) {
  const OpTraits& traits = context.traits(node);
  return node->domain().empty() && traits.broadcasting && node->inputs().size() == 2 &&
         node->output(0) && float_or_untyped(node->output(0));
}

// Fewest channels a conv writes in the blocked layout.
constexpr int64_t kMinPaddedChannels = kChannelBlock / 2;

// What the pass knows of a float32 NCHW value: its four dims (C known; others may not be).
struct Activation {
  std::vector<Dim> dims;
  int64_t channels() const { return dims[1].value; }
  bool padded() const { return channels() % kChannelBlock != 0; }
};

std::optional<Activation> from_type(const Value* value) {
  const ValueType& type = value->type();
  if (!type.is_tensor() || type.elem_type != DType::kFloat || !type.shape) return std::nullopt;
  if (type.shape->size() != 4 || !(*type.shape)[1].is_known()) return std::nullopt;
  return Activation{*type.shape};
}

ValueType blocked_type(const Activation& a) {
  std::vector<Dim> dims{a.dims[0], Dim::known(channel_blocks(a.channels())), a.dims[2], a.dims[3],
                        Dim::known(kChannelBlock)};
  return ValueType::tensor(DType::kFloat, dims);
}

bool is_one(const Dim& d) {
  return d.is_known() && d.value == 1;
}

// Numpy broadcasting of two rank-4 NCHW values (which the model guarantees is valid: every
// dim equal or 1 on one side) gives the same result on their blocked forms when C matches.
bool broadcasts_in_blocked_layout(const Activation& a, const Activation& b) {
  return a.channels() == b.channels();
}

enum class Role { kNone, kConv, kPool, kGlobalPool, kUnary, kBinary, kConcat };

class ConvertLayoutPass : public GraphPass {
 public:
  std::string_view name() const override { return "convert_layout"; }

  size_t run(Graph& graph, PassContext& context) override {
    if (graph.parent()) return 0;  // the main graph's chains only
    const std::vector<Node*> order = graph.topological_order();
    infer_activations(graph, order, context);
    std::map<const Node*, Role> roles;
    padded_blockable_.clear();
    for (Node* node : order) {  // producers first: a padded value's role decides its readers'
      const Role role = role_of(node, context);
      if (role == Role::kNone) continue;
      roles[node] = role;
      const Activation* y = activation(node->output(0));
      if (y && y->padded()) padded_blockable_.insert(node->output(0));
    }
    const std::vector<Node*> chosen = choose(order, roles);
    if (chosen.empty()) return 0;
    if (context.model && context.model->opset_version(kOnnxkitDomain) < kOnnxkitDomainVersion) {
      context.model->opset_imports.push_back({std::string(kOnnxkitDomain), kOnnxkitDomainVersion});
    }
    rewrite(graph, chosen, roles);
    return chosen.size();
  }

 private:
  // Activation facts for every value: from its type, else carried through the ops the pass
  // converts (shape inference does not know FusedConv).
  void infer_activations(const Graph& graph, const std::vector<Node*>& order,
                         const PassContext& context) {
    activations_.clear();
    auto note = [&](const Value* v) {
      if (auto a = from_type(v)) activations_[v] = *a;
    };
    for (const Value* v : graph.inputs()) note(v);
    for (Node* node : order) {
      for (const Value* out : node->outputs()) {
        if (out) note(out);
      }
      Value* y = node->output(0);
      if (!y || activations_.count(y) || node->outputs().size() != 1) continue;
      const Activation* x = activation(node->input(0));
      if (!x) continue;
      if (is_conv(node)) {
        const Tensor* w = constant_value(node->input(1), context);
        if (!w || w->rank() != 4) continue;
        activations_[y] = Activation{{x->dims[0], Dim::known(w->shape()[0]), Dim{}, Dim{}}};
      } else if (is_unary_elementwise(node, context)) {
        activations_[y] = *x;
      } else if (is_onnx_op(node, "MaxPool") || is_onnx_op(node, "AveragePool")) {
        activations_[y] = Activation{{x->dims[0], x->dims[1], Dim{}, Dim{}}};
      } else if (is_onnx_op(node, "GlobalAveragePool") || is_onnx_op(node, "GlobalMaxPool")) {
        activations_[y] = Activation{{x->dims[0], x->dims[1], Dim::known(1), Dim::known(1)}};
      } else if (is_binary_elementwise(node, context)) {
        const Activation* other = activation(node->input(1));
        if (!other) {
          const Tensor* c = constant_value(node->input(1), context);
          if (c && c->numel() == 1) activations_[y] = *x;
          continue;
        }
        if (other->channels() != x->channels()) continue;
        Activation result = *x;
        for (size_t d : {0, 2, 3}) {  // the non-1 side of each broadcast dim
          if (is_one(x->dims[d])) result.dims[d] = other->dims[d];
        }
        activations_[y] = result;
      } else if (is_onnx_op(node, "Concat") &&
                 (int_attr(node, "axis", 0) == 1 || int_attr(node, "axis", 0) == -3)) {
        Activation result = *x;
        for (size_t i = 1; i < node->inputs().size() && result.channels() > 0; ++i) {
          const Activation* part = activation(node->input(i));
          result.dims[1] = part ? Dim::known(result.channels() + part->channels()) : Dim{};
        }
        if (result.dims[1].is_known()) activations_[y] = result;
      }
    }
  }

  const Activation* activation(const Value* v) const {
    auto it = v ? activations_.find(v) : activations_.end();
    return it == activations_.end() ? nullptr : &it->second;
  }
  // Whether `v` can be blocked: 16k channels, or padded ones a converted op writes.
  bool blockable(const Value* v) const {
    const Activation* a = activation(v);
    return a && a->channels() > 0 && (!a->padded() || padded_blockable_.count(v));
  }
  bool padded(const Value* v) const {
    const Activation* a = activation(v);
    return a && a->padded();
  }

  // Clip with constant bounds around 0.
  static bool clip_keeps_zero(const Node* node, const PassContext& context) {
    const auto bounds = clip_bounds(node, context);
    return bounds && (*bounds)[0] <= 0.0f && (*bounds)[1] >= 0.0f;
  }

  static bool is_conv(const Node* node) {
    return is_onnx_op(node, "Conv") || is_onnxkit_op(node, "FusedConv");
  }

  Role role_of(const Node* node, const PassContext& context) const {
    if (!node->subgraphs().empty() || !node->output(0)) return Role::kNone;
    for (size_t i = 1; i < node->outputs().size(); ++i) {
      if (node->output(i)) return Role::kNone;  // MaxPool's Indices
    }
    const std::string& op = node->op_type();
    if (is_conv(node)) {
      const Activation* x = activation(node->input(0));
      const Tensor* w = constant_value(node->input(1), context);
      const Activation* y = activation(node->output(0));
      // The conv kernel leaves Y's padding zero whatever its activation. Fewer than 8
      // channels would compute more padding lanes than channels (a 3-channel image out).
      if (!x || !w || w->rank() != 4 || !y || y->channels() < kMinPaddedChannels) {
        return Role::kNone;
      }
      if (node->input(3) && !blockable(node->input(3))) return Role::kNone;
      return Role::kConv;
    }
    if (!node->domain().empty() || !blockable(node->input(0))) return Role::kNone;
    if (op == "MaxPool" || op == "AveragePool") {
      // Blocked pools take opset-10+ attributes (ceil_mode, dilations).
      const Attribute* kernel = node->find_attribute("kernel_shape");
      if (context.opset("") < 10 || !kernel || kernel->ints.size() != 2) return Role::kNone;
      return Role::kPool;
    }
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return Role::kGlobalPool;
    const bool padded_x = padded(node->input(0));
    if (is_unary_elementwise(node, context)) {
      for (size_t i = 1; i < node->inputs().size(); ++i) {  // Clip's min / max
        if (node->input(i) && !constant_value(node->input(i), context)) return Role::kNone;
      }
      if (padded_x && !context.traits(node).keeps_zero &&
          !(op == "Clip" && clip_keeps_zero(node, context))) {
        return Role::kNone;
      }
      return Role::kUnary;
    }
    if (is_binary_elementwise(node, context)) {
      const Activation* a = activation(node->input(0));
      const Value* other = node->input(1);
      if (blockable(other)) {
        if (padded_x && !context.traits(node).keeps_zero) return Role::kNone;
        return broadcasts_in_blocked_layout(*a, *activation(other)) ? Role::kBinary : Role::kNone;
      }
      const Tensor* c = constant_value(other, context);
      if (padded_x && op != "Mul") return Role::kNone;  // scalar * 0 = 0
      return c && c->numel() == 1 ? Role::kBinary : Role::kNone;
    }
    if (op == "Concat") {  // padding inside would misplace the channels after it
      const int64_t axis = int_attr(node, "axis", 0);
      if (axis != 1 && axis != -3) return Role::kNone;
      for (const Value* input : node->inputs()) {
        if (!blockable(input) || padded(input)) return Role::kNone;
      }
      return Role::kConcat;
    }
    return Role::kNone;
  }

  // The candidates grouped into chains (connected through the values they pass each other);
  // the nodes of chains with at least two convs or pools, in topological order.
  static std::vector<Node*> choose(const std::vector<Node*>& order,
                                   const std::map<const Node*, Role>& roles) {
    return nodes_of_anchored_chains(
        order, roles,
        [](Role role) {
          return role == Role::kConv || role == Role::kPool || role == Role::kGlobalPool;
        },
        2);
  }

  void rewrite(Graph& graph, const std::vector<Node*>& chosen,
               const std::map<const Node*, Role>& roles) {
    std::map<const Value*, Value*> twin;  // plain value -> its blocked form
    auto blocked_form = [&](Value* v) {
      if (auto it = twin.find(v); it != twin.end()) return it->second;
      Node* reorder =
          graph.add_node(std::string(kReorderToBlocked), {v},
                         {graph.unique_name(v->name() + "_blocked")}, std::string(kOnnxkitDomain));
      Value* out = reorder->output(0);
      out->set_type(blocked_type(*activation(v)));
      return twin[v] = out;
    };
    for (Node* node : chosen) {
      const Role role = roles.at(node);
      std::vector<Value*> inputs(node->inputs().begin(), node->inputs().end());
      for (size_t i = 0; i < inputs.size(); ++i) {
        Value* v = inputs[i];
        bool activation_input = false;
        switch (role) {
          case Role::kConv:  // X when it can be blocked (else the conv reads it plain), Z
            activation_input = (i == 0 && blockable(v)) || i == 3;
            break;
          case Role::kBinary:
          case Role::kConcat:
            activation_input = blockable(v);
            break;
          default:
            activation_input = i == 0;
        }
        if (v && activation_input) inputs[i] = blocked_form(v);
      }
      std::string op_type = node->op_type(), domain = node->domain();
      if (role == Role::kConv || role == Role::kPool || role == Role::kGlobalPool) {
        op_type = role == Role::kConv ? std::string(kBlockedConv) : "Blocked" + op_type;
        domain = std::string(kOnnxkitDomain);
      }
      Value* y = node->output(0);
      Node* blocked = graph.add_node(op_type, inputs, {graph.unique_name(y->name() + "_blocked")},
                                     domain, node->name());
      for (const Attribute& attribute : node->attributes()) {
        blocked->set_attribute(clone_attribute(attribute, &graph, {}));
      }
      if (const Activation* a = activation(y); a && role != Role::kGlobalPool) {
        blocked->output(0)->set_type(blocked_type(*a));
      } else if (a) {
        blocked->output(0)->set_type(
            blocked_type(Activation{{a->dims[0], a->dims[1], Dim::known(1), Dim::known(1)}}));
      }
      twin[y] = blocked->output(0);
    }
    // Plain readers and graph outputs get the value back through one reorder each; the
    // original nodes go (readers first, so each one's remaining uses are plain ones).
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
      Node* node = *it;
      Value* y = node->output(0);
      if (!is_unused(y)) {
        Node* reorder =
            graph.add_node(std::string(kReorderFromBlocked), {twin.at(y)},
                           {graph.unique_name(y->name() + "_plain")}, std::string(kOnnxkitDomain));
        if (const Activation* a = activation(y); a && a->padded()) {
          reorder->set_attribute(int_attribute(std::string(kChannelsAttribute), a->channels()));
        }
        reorder->output(0)->set_type(y->type());
        replace_value(graph, y, reorder->output(0));
      }
      graph.remove_node(node);
    }
  }

  std::map<const Value*, Activation> activations_;
  std::set<const Value*> padded_blockable_;  // padded values that converted ops write
};

}  // namespace

std::unique_ptr<GraphPass> make_convert_layout_pass() {
  return std::make_unique<ConvertLayoutPass>();
}

}  // namespace onnxkit
