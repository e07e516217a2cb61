// Pass compute_fp16_in_fp32 (sessions only): float16 and bfloat16 nodes compute in float32,
// with conversions only where the graph's 16-bit values meet the converted region.
//
// Why: the CPU has no 16-bit float arithmetic that oneDNN 2.6 or onnxkit's SIMD kernels use,
// so 16-bit nodes ran on reference kernels (ResNet-50 in fp16: 2.3 s against ORT's 146 ms,
// one thread). ONNX Runtime's CPU provider does what this pass does (its InsertCast
// transformer): a node without a 16-bit kernel reads float32 copies of its inputs. Here the
// whole connected region converts, so the casts sit at its edges only: graph inputs and
// outputs, explicit Cast nodes, and nodes that must stay 16-bit. Results are at least as
// precise as 16-bit compute; the model's interface (input and output dtypes) is unchanged.
//
// A node converts when its own type rule says its 16-bit outputs follow its 16-bit inputs:
// run with float32 in place of every 16-bit input, each 16-bit output becomes float32 and
// every other output keeps its dtype. That leaves out ops whose output dtype comes from an
// attribute (Cast, ConstantOfShape, RandomNormal, EyeLike), CastLike (an explicit rounding
// step, kept as the model states it), nodes with subgraphs, and nodes whose 16-bit outputs
// nested subgraphs read, and nodes without a 16-bit input. A node with no 16-bit output (Shape,
// Equal) converts only when its 16-bit inputs are float32 already, so it never adds a cast.
// Initializers read only by
// converted nodes are converted once (exactly: every 16-bit value is a float32 value).
#include <map>
#include <span>

#include "core/half.h"
#include "ops/type_inference.h"
#include "passes/passes.h"

namespace onnxkit {
namespace {

bool is_narrow_float(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

// An initializer's value may carry no type of its own: its tensor says.
bool is_narrow_float_tensor(const Value* value) {
  if (!value) return false;
  if (value->type().is_tensor()) return is_narrow_float(value->type().elem_type);
  return value->has_initializer() && is_narrow_float(value->initializer().dtype());
}

ValueType tensor_type_of(const Value* value) {
  if (value->type().is_tensor() || !value->has_initializer()) return value->type();
  const Tensor& tensor = value->initializer();
  std::vector<Dim> dims;
  for (int64_t d : tensor.shape()) dims.push_back(Dim::known(d));
  return ValueType::tensor(tensor.dtype(), std::move(dims));
}

ValueType as_float32(ValueType type) {
  type.elem_type = DType::kFloat;
  return type;
}

Tensor widen(const Tensor& narrow) {
  Tensor wide(DType::kFloat, narrow.shape());
  float* out = wide.mutable_data<float>();
  const int64_t n = narrow.numel();
  if (narrow.dtype() == DType::kFloat16) {
    const uint16_t* in = static_cast<const uint16_t*>(narrow.raw_data());
    for (int64_t i = 0; i < n; ++i) out[i] = Float16::to_float(in[i]);
  } else {
    const uint16_t* in = static_cast<const uint16_t*>(narrow.raw_data());
    for (int64_t i = 0; i < n; ++i) out[i] = BFloat16::to_float(in[i]);
  }
  return wide;
}

// The node's type rule, asked with float32 in place of its 16-bit inputs.
class WidenedInputs : public TypeInferenceContext {
 public:
  WidenedInputs(const Node& node, int64_t opset, const PassContext& pass)
      : node_(node), opset_(opset), pass_(pass), outputs_(node.outputs().size()) {
    for (const Value* input : node.inputs()) {
      const ValueType type = input ? tensor_type_of(input) : ValueType();
      inputs_.push_back(
          type.kind != ValueType::Kind::kNone
              ? std::optional<ValueType>(is_narrow_float_tensor(input) ? as_float32(type) : type)
              : std::nullopt);
    }
  }
  const Node& node() const override { return node_; }
  int64_t opset() const override { return opset_; }
  const ValueType* input_type(size_t i) const override {
    return i < inputs_.size() && inputs_[i] ? &*inputs_[i] : nullptr;
  }
  const Tensor* input_value(size_t i) const override {
    const Value* input = node_.input(i);
    return is_narrow_float_tensor(input) ? nullptr : constant_value(input, pass_);
  }
  std::vector<ValueType> infer_subgraph(const Graph&, std::span<const ValueType>) override {
    return {};
  }
  void set_output(size_t i, ValueType type) override {
    if (has_output(i)) outputs_[i] = std::move(type);
  }
  const std::vector<ValueType>& outputs() const { return outputs_; }

 private:
  const Node& node_;
  int64_t opset_;
  const PassContext& pass_;
  std::vector<std::optional<ValueType>> inputs_;
  std::vector<ValueType> outputs_;
};

bool outputs_follow_inputs(const Node* node, const PassContext& context) {
  const int64_t opset = context.opset(node->domain());
  const OpRegistration* registration = context.ops().find(node->domain(), node->op_type(), opset);
  if (!registration || !registration->definition.infer_types) return false;
  WidenedInputs widened(*node, opset, context);
  try {
    registration->definition.infer_types(widened);
  } catch (const Error&) {
    return false;
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    const Value* output = node->output(i);
    if (!output) continue;
    const ValueType& inferred = widened.outputs()[i];
    if (!inferred.is_tensor() && is_narrow_float_tensor(output)) return false;
    // An output of unknown type might be 16-bit: its readers could not be told apart.
    if (output->type().kind == ValueType::Kind::kNone) return false;
    if (!output->type().is_tensor()) continue;
    const DType expected =
        is_narrow_float(output->type().elem_type) ? DType::kFloat : output->type().elem_type;
    if (!inferred.is_tensor() || inferred.elem_type != expected) return false;
  }
  return true;
}

// True when every reader of `value` is a node of its own graph (or the graph's outputs):
// a value a nested subgraph reads keeps its dtype, so the subgraph stays valid.
bool read_in_own_graph_only(const Value* value) {
  for (const Use& use : value->uses()) {
    if (use.node->is_return() || use.node->graph() != value->graph()) return false;
  }
  return true;
}

class ComputeFp16InFp32Pass : public GraphPass {
 public:
  std::string_view name() const override { return "compute_fp16_in_fp32"; }

  size_t run(Graph& graph, PassContext& context) override {
    converted_values_.clear();
    wide_copies_.clear();
    narrow_copies_.clear();
    size_t changes = 0;
    for (Node* node : graph.topological_order()) {
      if (should_convert(node, context)) {
        convert(graph, node, context);
        ++changes;
      } else {
        for (size_t i = 0; i < node->inputs().size(); ++i) {
          Value* input = node->input(i);
          auto original = converted_values_.find(input);
          if (original == converted_values_.end()) continue;
          graph.set_node_input(node, i, narrow_copy(graph, input, original->second, node));
        }
      }
    }
    // Graph outputs keep their names and 16-bit dtypes: a cast back takes the name.
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      Value* output = graph.outputs()[i];
      auto original = converted_values_.find(output);
      if (original == converted_values_.end() || output->graph() != &graph) continue;
      const std::string name = output->name();
      graph.rename_value(output, graph.unique_name(name + "_fp32"));
      Node* cast = graph.add_node("Cast", {output}, {graph.unique_name(name + "_narrow")}, "",
                                  graph.unique_name(name + "_to_fp16"));
      cast->set_attribute(int_attribute("to", static_cast<int64_t>(original->second)));
      Value* narrow = cast->output(0);
      narrow->set_type(ValueType::tensor(original->second, output->type().shape));
      graph.set_output(i, narrow);
      graph.rename_value(narrow, name);
    }
    return changes;
  }

 private:
  bool should_convert(const Node* node, const PassContext& context) const {
    if (!node->subgraphs().empty() || is_onnx_op(node, "Cast") || is_onnx_op(node, "CastLike")) {
      return false;
    }
    bool narrow_output = false;
    for (const Value* output : node->outputs()) {
      if (!is_narrow_float_tensor(output)) continue;
      if (!read_in_own_graph_only(output)) return false;
      narrow_output = true;
    }
    bool narrow_input = false;
    for (const Value* input : node->inputs()) {
      if (!is_narrow_float_tensor(input) && !converted_values_.count(input)) continue;
      narrow_input = true;
      // Without a 16-bit output, convert only where no cast has to be added for it.
      if (!narrow_output && !converted_values_.count(input) && !constant_value(input, context)) {
        return false;
      }
    }
    // A 16-bit output needs 16-bit inputs to follow: without any, its type is an attribute's
    // or a declaration the computation does not bear out (Relu of float32 declared bfloat16).
    if (!narrow_input) return false;
    return outputs_follow_inputs(node, context);
  }

  void convert(Graph& graph, Node* node, const PassContext& context) {
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      Value* input = node->input(i);
      if (!is_narrow_float_tensor(input)) continue;  // float32 already, or not a float
      graph.set_node_input(node, i, wide_copy(graph, input, node, context));
    }
    for (Value* output : node->outputs()) {
      if (!is_narrow_float_tensor(output)) continue;
      converted_values_[output] = output->type().elem_type;
      output->set_type(as_float32(output->type()));
    }
  }

  // A float32 version of the 16-bit `value`, made once: an initializer converted in place of
  // a copy, or a Cast placed before the first node that needs it.
  Value* wide_copy(Graph& graph, Value* value, Node* before, const PassContext& context) {
    auto found = wide_copies_.find(value);
    if (found != wide_copies_.end()) return found->second;
    Value* wide = nullptr;
    if (const Tensor* constant = constant_value(value, context);
        constant && value->graph() == &graph) {
      wide = graph.add_initializer(graph.unique_name(value->name() + "_fp32"), widen(*constant));
      wide->set_type(as_float32(tensor_type_of(value)));
    } else {
      Node* cast = graph.add_node("Cast", {value}, {graph.unique_name(value->name() + "_fp32")}, "",
                                  graph.unique_name(value->name() + "_to_fp32"), before);
      cast->set_attribute(int_attribute("to", static_cast<int64_t>(DType::kFloat)));
      wide = cast->output(0);
      wide->set_type(as_float32(tensor_type_of(value)));
    }
    wide_copies_[value] = wide;
    return wide;
  }

  // The 16-bit version of a converted value, for a node that stays 16-bit.
  Value* narrow_copy(Graph& graph, Value* value, DType dtype, Node* before) {
    auto found = narrow_copies_.find(value);
    if (found != narrow_copies_.end()) return found->second;
    Node* cast = graph.add_node("Cast", {value}, {graph.unique_name(value->name() + "_narrow")}, "",
                                graph.unique_name(value->name() + "_to_fp16"), before);
    cast->set_attribute(int_attribute("to", static_cast<int64_t>(dtype)));
    Value* narrow = cast->output(0);
    narrow->set_type(ValueType::tensor(dtype, value->type().shape));
    narrow_copies_[value] = narrow;
    return narrow;
  }

  // Values this run retyped from 16-bit to float32, with their original dtype.
  std::map<const Value*, DType> converted_values_;
  std::map<Value*, Value*> wide_copies_;
  std::map<Value*, Value*> narrow_copies_;
};

}  // namespace

std::unique_ptr<GraphPass> make_compute_fp16_in_fp32_pass() {
  return std::make_unique<ComputeFp16InFp32Pass>();
}

}  // namespace onnxkit
