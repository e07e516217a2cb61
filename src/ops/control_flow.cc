// Op family: control flow — If, Loop, Scan. Bodies are compiled once (at session creation)
// into child plans and run through the same executor; they read outer values by
// reference through the frame chain.
#include <cmath>
#include <limits>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

std::shared_ptr<const CompiledGraph> compile_body(const KernelCreateContext& context,
                                                  std::string_view attribute) {
  const Graph* graph = context.attr_graph(attribute);
  if (!graph) context.fail("required graph attribute '{}' is missing", attribute);
  return context.compile_subgraph(*graph);
}

bool read_condition(const KernelContext& context, const Tensor& tensor, std::string_view what) {
  if (tensor.numel() != 1) {
    context.fail("{} must hold one value, has shape {}", what, shape_to_string(tensor.shape()));
  }
  return read_scalar(tensor, what) != 0;
}

Tensor int64_scalar(int64_t value) {
  return Tensor::from_vector<int64_t>(DType::kInt64, {}, {value});
}
Tensor bool_scalar(bool value) {
  return Tensor::from_vector<bool>(DType::kBool, {}, {value});
}

// Stacks per-iteration outputs along `axis`; with no iterations, an empty tensor whose other
// dims come from the body's output type where known. Its element type must be known (declared,
// or inferred by the session's passes): a guess would change with the optimization level.
Tensor stack_iterations(const KernelContext& context, const std::vector<Tensor>& items,
                        const Value& declared, int64_t axis, bool reverse) {
  if (items.empty()) {
    Shape shape{0};
    const ValueType& type = declared.type();
    if (type.shape) {
      for (const Dim& dim : *type.shape) shape.push_back(dim.is_known() ? dim.value : 0);
    }
    if (!type.is_tensor() || type.elem_type == DType::kUndefined) {
      context.fail(
          "the body ran no iteration and its output '{}' has no known element type: declare "
          "it in the body, or run at a level that infers types",
          declared.name());
    }
    return Tensor(type.elem_type, shape);
  }
  if (!reverse) return stack_tensors(items, axis, context.node().describe());
  std::vector<Tensor> reversed(items.rbegin(), items.rend());
  return stack_tensors(reversed, axis, context.node().describe());
}

const Graph& required_graph(const KernelCreateContext& context, std::string_view attribute) {
  const Graph* graph = context.attr_graph(attribute);
  if (!graph) context.fail("required graph attribute '{}' is missing", attribute);
  return *graph;
}

// The element type a graph declares for its input or output, kUndefined where it says none.
DType declared_elem_type(const Value* value) {
  return value && value->type().is_tensor() ? value->type().elem_type : DType::kUndefined;
}

// If: each branch returns one value per output of the node, of the same element types.
void check_if(const KernelCreateContext& context) {
  const Graph& then_branch = required_graph(context, "then_branch");
  const Graph& else_branch = required_graph(context, "else_branch");
  const size_t outputs = context.node().outputs().size();
  for (const auto& [name, branch] :
       {std::pair{"then_branch", &then_branch}, std::pair{"else_branch", &else_branch}}) {
    if (branch->outputs().size() != outputs) {
      context.fail("{} returns {} values, the node has {} outputs", name, branch->outputs().size(),
                   outputs);
    }
  }
  for (size_t i = 0; i < outputs; ++i) {
    const DType then_type = declared_elem_type(then_branch.outputs()[i]);
    const DType else_type = declared_elem_type(else_branch.outputs()[i]);
    if (then_type != DType::kUndefined && else_type != DType::kUndefined &&
        then_type != else_type) {
      context.fail("output {}: then_branch returns {}, else_branch {}", i, dtype_name(then_type),
                   dtype_name(else_type));
    }
  }
}

// Loop(M?, cond?, carried...): body(iteration, cond, carried...) -> (cond, carried...,
// scans...), the node's outputs the carried values then the scans; a carried value keeps its
// element type from one iteration to the next.
void check_loop(const KernelCreateContext& context) {
  const Graph& body = required_graph(context, "body");
  const Node& node = context.node();
  if (node.inputs().size() < 2) context.fail("needs at least the M and cond inputs");
  const size_t carried = node.inputs().size() - 2;
  if (body.inputs().size() != carried + 2) {
    context.fail("body takes {} inputs, expected {} (iteration, condition and {} carried)",
                 body.inputs().size(), carried + 2, carried);
  }
  if (body.outputs().size() != node.outputs().size() + 1 || node.outputs().size() < carried) {
    context.fail(
        "body returns {} outputs, expected the condition and one per output of the "
        "node ({}, {} of them carried)",
        body.outputs().size(), node.outputs().size(), carried);
  }
  for (size_t i = 0; i < carried; ++i) {
    const DType taken = declared_elem_type(body.inputs()[2 + i]);
    const DType returned = declared_elem_type(body.outputs()[1 + i]);
    if (taken != DType::kUndefined && returned != DType::kUndefined && taken != returned) {
      context.fail("carried value {}: the body takes {} and returns {}", i, dtype_name(taken),
                   dtype_name(returned));
    }
  }
}

// Scan: N states then num_scan_inputs scanned inputs (after opset 8's sequence_lens); the body
// takes one value per state and scanned input and returns the states then one value per scan
// output, one per output of the node.
void check_scan(const KernelCreateContext& context) {
  const Graph& body = required_graph(context, "body");
  const Node& node = context.node();
  const int64_t scans = context.attr_int("num_scan_inputs");
  const size_t leading = context.opset() < 9 ? 1 : 0;
  const int64_t inputs = static_cast<int64_t>(node.inputs().size()) - static_cast<int64_t>(leading);
  if (scans < 1 || scans > inputs) {
    context.fail("num_scan_inputs {} does not fit {} inputs", scans, inputs);
  }
  if (body.inputs().size() != static_cast<size_t>(inputs)) {
    context.fail("body takes {} inputs, the node gives it {}", body.inputs().size(), inputs);
  }
  if (body.outputs().size() != node.outputs().size()) {
    context.fail("body returns {} outputs, the node has {}", body.outputs().size(),
                 node.outputs().size());
  }
  if (body.outputs().size() < static_cast<size_t>(inputs - scans)) {
    context.fail("body returns fewer outputs than there are states");
  }
}

class IfKernel : public OpKernel {
 public:
  explicit IfKernel(const KernelCreateContext& context)
      : then_branch_(compile_body(context, "then_branch")),
        else_branch_(compile_body(context, "else_branch")) {
    check_if(context);
  }

  void compute(KernelContext& context) const override {
    bool condition = read_condition(context, context.input(0), "condition");
    const CompiledGraph& branch = condition ? *then_branch_ : *else_branch_;
    auto results = context.subgraph_runner().run(branch, {}, context.frame());
    if (results.size() != context.num_outputs()) {
      context.fail("the {} branch returns {} values, the node has {} outputs",
                   condition ? "then" : "else", results.size(), context.num_outputs());
    }
    for (size_t i = 0; i < results.size(); ++i) context.set_output_value(i, std::move(results[i]));
  }

 private:
  std::shared_ptr<const CompiledGraph> then_branch_;
  std::shared_ptr<const CompiledGraph> else_branch_;
};

// Loop: inputs (M, cond, v_initial...); body (iteration, cond, v...) -> (cond, v..., scan...).
// M as int64. Exporters write 2^63 - 1 for "no bound" (a while loop): through a double it
// would round past int64 and wrap to a negative count, so the loop would not run at all.
int64_t read_trip_count(const KernelContext& context, const Tensor& m) {
  if (m.numel() != 1)
    context.fail("M must hold one value, got shape {}", shape_to_string(m.shape()));
  if (m.dtype() == DType::kInt64) return m.data<int64_t>()[0];
  const double value = read_scalar(m, "M");
  if (std::isnan(value)) context.fail("M is NaN");
  if (value >= 9.2e18) return std::numeric_limits<int64_t>::max();
  return value < 0 ? 0 : static_cast<int64_t>(value);
}

class LoopKernel : public OpKernel {
 public:
  explicit LoopKernel(const KernelCreateContext& context)
      : body_(compile_body(context, "body")), body_graph_(*context.attr_graph("body")) {
    check_loop(context);
  }

  void compute(KernelContext& context) const override {
    int64_t max_trips = std::numeric_limits<int64_t>::max();
    if (context.has_input(0)) max_trips = read_trip_count(context, context.input(0));
    bool condition = true;
    if (context.has_input(1)) condition = read_condition(context, context.input(1), "cond");
    const size_t carried_count = context.num_inputs() - 2;
    const size_t scan_count = body_graph_.outputs().size() - 1 - carried_count;
    std::vector<RuntimeValue> carried;
    for (size_t i = 0; i < carried_count; ++i) carried.push_back(context.input_value(2 + i));
    std::vector<std::vector<Tensor>> scans(scan_count);

    const int64_t max_iterations = current_max_loop_iterations();
    for (int64_t trip = 0; trip < max_trips && condition; ++trip) {
      if (trip >= max_iterations) {
        fail_resource_limit(
            "{}: stopped after {} iterations (the bound; --max-loop-iterations): trip count {}, "
            "condition still true",
            context.node().describe(), max_iterations,
            context.has_input(0) ? fmt::format("{}", max_trips) : "none");
      }
      std::vector<RuntimeValue> inputs{RuntimeValue(int64_scalar(trip)),
                                       RuntimeValue(bool_scalar(condition))};
      inputs.insert(inputs.end(), carried.begin(), carried.end());
      auto results = context.subgraph_runner().run(*body_, std::move(inputs), context.frame());
      condition = read_condition(context, results[0].tensor(), "body condition output");
      for (size_t i = 0; i < carried_count; ++i) {
        // A body that changes a carried value's type would hand the next iteration (and the
        // node's output) a value of another type than the model declares.
        if (carried[i].is_tensor() && results[1 + i].is_tensor() &&
            carried[i].tensor().dtype() != results[1 + i].tensor().dtype()) {
          context.fail("carried value {} enters iteration {} as {} and leaves it as {}", i, trip,
                       dtype_name(carried[i].tensor().dtype()),
                       dtype_name(results[1 + i].tensor().dtype()));
        }
        carried[i] = std::move(results[1 + i]);
      }
      for (size_t k = 0; k < scan_count; ++k) {
        scans[k].push_back(results[1 + carried_count + k].tensor());
      }
    }
    for (size_t i = 0; i < carried_count; ++i) context.set_output_value(i, std::move(carried[i]));
    for (size_t k = 0; k < scan_count; ++k) {
      const Value& declared = *body_graph_.outputs()[1 + carried_count + k];
      context.set_output(carried_count + k,
                         stack_iterations(context, scans[k], declared, 0, false));
    }
  }

 private:
  std::shared_ptr<const CompiledGraph> body_;
  const Graph& body_graph_;
};

// Scan (opset 9+): N state inputs then M scan inputs; body (states, slices) -> (states, outs).
// Opset 8 adds a leading batch axis and an optional sequence_lens input; it is run here as
// one opset-9 scan per batch entry.
class ScanKernel : public OpKernel {
 public:
  explicit ScanKernel(const KernelCreateContext& context)
      : body_(compile_body(context, "body")),
        body_graph_(*context.attr_graph("body")),
        batched_(context.opset() < 9),
        scan_inputs_(context.attr_int("num_scan_inputs")) {
    check_scan(context);
    const size_t leading = batched_ ? 1 : 0;
    const int64_t inputs = static_cast<int64_t>(context.node().inputs().size() - leading);
    states_ = inputs - scan_inputs_;
    if (scan_inputs_ < 1 || states_ < 0) {
      context.fail("num_scan_inputs {} does not fit {} inputs", scan_inputs_, inputs);
    }
    scan_outputs_ = static_cast<int64_t>(body_graph_.outputs().size()) - states_;
    if (scan_outputs_ < 0) context.fail("body returns fewer outputs than there are states");
    auto defaulted = [&](const char* name, int64_t count) {
      auto values = context.attr_ints(name, std::vector<int64_t>(static_cast<size_t>(count), 0));
      if (static_cast<int64_t>(values.size()) != count) {
        context.fail("attribute '{}' has {} entries, expected {}", name, values.size(), count);
      }
      return values;
    };
    if (batched_) {
      directions_in_ = defaulted("directions", scan_inputs_);
      axes_in_.assign(static_cast<size_t>(scan_inputs_), 0);
      directions_out_.assign(static_cast<size_t>(scan_outputs_), 0);
      axes_out_.assign(static_cast<size_t>(scan_outputs_), 0);
    } else {
      axes_in_ = defaulted("scan_input_axes", scan_inputs_);
      directions_in_ = defaulted("scan_input_directions", scan_inputs_);
      axes_out_ = defaulted("scan_output_axes", scan_outputs_);
      directions_out_ = defaulted("scan_output_directions", scan_outputs_);
    }
  }

  void compute(KernelContext& context) const override {
    if (!batched_) {
      std::vector<RuntimeValue> inputs;
      for (size_t i = 0; i < context.num_inputs(); ++i) inputs.push_back(context.input_value(i));
      auto outputs = scan(context, std::move(inputs), -1);
      for (size_t i = 0; i < outputs.size(); ++i) context.set_output(i, std::move(outputs[i]));
      return;
    }
    // Opset 8: input 0 is sequence_lens, then [batch, ...] states and [batch, seq, ...] scans.
    const int64_t batch = context.input(1).shape().at(0);
    std::vector<int64_t> lengths;
    if (context.has_input(0)) lengths = read_int64s(context.input(0), "sequence_lens");
    std::vector<std::vector<Tensor>> per_output(static_cast<size_t>(states_ + scan_outputs_));
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<RuntimeValue> inputs;
      for (size_t i = 1; i < context.num_inputs(); ++i) {
        inputs.push_back(select_along_axis(context.input(i), 0, b));
      }
      int64_t length = lengths.empty() ? -1 : lengths.at(static_cast<size_t>(b));
      auto outputs = scan(context, std::move(inputs), length);
      for (size_t i = 0; i < outputs.size(); ++i) per_output[i].push_back(std::move(outputs[i]));
    }
    for (size_t i = 0; i < per_output.size(); ++i) {
      context.set_output(i, stack_tensors(per_output[i], 0, context.node().describe()));
    }
  }

 private:
  // One unbatched scan; `length` < 0 scans the whole sequence.
  std::vector<Tensor> scan(KernelContext& context, std::vector<RuntimeValue> inputs,
                           int64_t length) const {
    std::vector<RuntimeValue> states(inputs.begin(), inputs.begin() + states_);
    std::vector<Tensor> sequences;
    std::vector<int64_t> axes;
    int64_t steps = -1;
    for (int64_t j = 0; j < scan_inputs_; ++j) {
      const Tensor& sequence = inputs[static_cast<size_t>(states_ + j)].tensor();
      int64_t axis = normalize_axis(axes_in_[static_cast<size_t>(j)],
                                    static_cast<int64_t>(sequence.rank()), "scan_input_axes");
      int64_t count = sequence.shape()[static_cast<size_t>(axis)];
      if (steps >= 0 && count != steps) {
        context.fail("scan inputs have different sequence lengths ({} and {})", steps, count);
      }
      steps = count;
      sequences.push_back(sequence);
      axes.push_back(axis);
    }
    if (length >= 0) steps = std::min(steps, length);
    std::vector<std::vector<Tensor>> outs(static_cast<size_t>(scan_outputs_));
    for (int64_t t = 0; t < steps; ++t) {
      std::vector<RuntimeValue> body_inputs = states;
      for (int64_t j = 0; j < scan_inputs_; ++j) {
        int64_t index = directions_in_[static_cast<size_t>(j)] ? steps - 1 - t : t;
        body_inputs.push_back(select_along_axis(sequences[static_cast<size_t>(j)],
                                                axes[static_cast<size_t>(j)], index));
      }
      auto results = context.subgraph_runner().run(*body_, std::move(body_inputs), context.frame());
      for (int64_t i = 0; i < states_; ++i)
        states[static_cast<size_t>(i)] = std::move(results[static_cast<size_t>(i)]);
      for (int64_t k = 0; k < scan_outputs_; ++k) {
        outs[static_cast<size_t>(k)].push_back(results[static_cast<size_t>(states_ + k)].tensor());
      }
    }
    std::vector<Tensor> outputs;
    for (const RuntimeValue& state : states) outputs.push_back(state.tensor());
    for (int64_t k = 0; k < scan_outputs_; ++k) {
      const Value& declared = *body_graph_.outputs()[static_cast<size_t>(states_ + k)];
      int64_t rank = outs[static_cast<size_t>(k)].empty()
                         ? 1
                         : static_cast<int64_t>(outs[static_cast<size_t>(k)][0].rank()) + 1;
      int64_t axis = normalize_axis(axes_out_[static_cast<size_t>(k)], rank, "scan_output_axes");
      outputs.push_back(stack_iterations(context, outs[static_cast<size_t>(k)], declared, axis,
                                         directions_out_[static_cast<size_t>(k)] != 0));
    }
    return outputs;
  }

  std::shared_ptr<const CompiledGraph> body_;
  const Graph& body_graph_;
  bool batched_;
  int64_t scan_inputs_;
  int64_t states_ = 0;
  int64_t scan_outputs_ = 0;
  std::vector<int64_t> axes_in_, directions_in_, axes_out_, directions_out_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// The type a value has on either of two paths (If's branches): what both agree on; where
// one path knows nothing, the other's kind and dtype without its shape.
ValueType either_type(const ValueType& a, const ValueType& b) {
  if (a.kind == ValueType::Kind::kNone || b.kind == ValueType::Kind::kNone) {
    ValueType known = a.kind == ValueType::Kind::kNone ? b : a;
    known.shape.reset();
    known.element.clear();
    return known;
  }
  return merge_types(a, b);
}

void infer_if(TypeInferenceContext& context) {
  const KernelCreateContext attributes = attribute_reader(context);
  const Graph* then_branch = attributes.attr_graph("then_branch");
  const Graph* else_branch = attributes.attr_graph("else_branch");
  if (!then_branch || !else_branch) fail("needs the graph attributes then_branch and else_branch");
  const std::vector<ValueType> then_types = context.infer_subgraph(*then_branch, {});
  const std::vector<ValueType> else_types = context.infer_subgraph(*else_branch, {});
  if (then_types.size() != else_types.size()) {
    fail("then_branch has {} outputs, else_branch {}", then_types.size(), else_types.size());
  }
  for (size_t i = 0; i < std::min(then_types.size(), context.num_outputs()); ++i) {
    const ValueType type = either_type(then_types[i], else_types[i]);
    if (type.kind != ValueType::Kind::kNone) context.set_output(i, type);
  }
}

ValueType input_or_none(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  return type ? *type : ValueType{};
}

// A scan output's type: the per-iteration type with the iterations' dim inserted at `axis`.
ValueType stacked_type(const ValueType& item, const Dim& iterations, int64_t axis = 0) {
  if (!item.is_tensor()) return item.kind == ValueType::Kind::kNone ? ValueType{} : item;
  if (!item.shape) return tensor_type(item.elem_type);
  std::vector<Dim> dims = *item.shape;
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(rule_axis(axis, dims.size() + 1)),
              iterations);
  return tensor_type(item.elem_type, std::move(dims));
}

// Runs the body's inference with `fixed` inputs then the carried values' types, and again
// with the carried types merged with what the body returns for them where they differ (a
// carried value that grows); the carried outputs are the merged types.
std::vector<ValueType> infer_carried_body(TypeInferenceContext& context, const Graph& body,
                                          const std::vector<ValueType>& fixed_before,
                                          std::vector<ValueType> carried,
                                          const std::vector<ValueType>& fixed_after,
                                          size_t carried_outputs_at) {
  std::vector<ValueType> outputs;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<ValueType> inputs = fixed_before;
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    inputs.insert(inputs.end(), fixed_after.begin(), fixed_after.end());
    outputs = context.infer_subgraph(body, inputs);
    bool changed = false;
    for (size_t i = 0; i < carried.size(); ++i) {
      const size_t out = carried_outputs_at + i;
      // A carried value the loop gives a type of its own (an optional initial value the
      // body returns as a sequence, an unknown one) takes the body's.
      const ValueType& returned = out < outputs.size() ? outputs[out] : ValueType{};
      const ValueType merged =
          carried[i].kind == returned.kind || returned.kind == ValueType::Kind::kNone
              ? merge_types(carried[i], returned)
              : returned;
      changed = changed || merged != carried[i];
      carried[i] = merged;
    }
    if (!changed) break;
  }
  for (size_t i = 0; i < carried.size() && carried_outputs_at + i < outputs.size(); ++i) {
    outputs[carried_outputs_at + i] = carried[i];
  }
  return outputs;
}

// Loop(M?, cond?, carried...): body(iteration int64, cond bool, carried...) -> (cond,
// carried..., scan outputs...); the scan outputs stack an unknown number of iterations.
void infer_loop(TypeInferenceContext& context) {
  const Graph* body = attribute_reader(context).attr_graph("body");
  if (!body) fail("required graph attribute 'body' is missing");
  std::vector<ValueType> carried;
  for (size_t i = 2; i < context.num_inputs(); ++i) carried.push_back(input_or_none(context, i));
  const std::vector<ValueType> fixed{tensor_type(DType::kInt64, std::vector<Dim>{}),
                                     tensor_type(DType::kBool, std::vector<Dim>{})};
  const std::vector<ValueType> outputs = infer_carried_body(context, *body, fixed, carried, {}, 1);
  for (size_t i = 0; i < context.num_outputs() && i + 1 < outputs.size(); ++i) {
    const ValueType type =
        i < carried.size() ? outputs[i + 1] : stacked_type(outputs[i + 1], Dim{});
    if (type.kind != ValueType::Kind::kNone) context.set_output(i, type);
  }
}

// Scan: from opset 9, N states then M scan inputs sliced along scan_input_axes; body(states,
// slices) -> (states, outputs), the outputs stacked along scan_output_axes. Opset 8 has
// sequence_lens first and a leading batch axis on every input and output, the scan axis 1.
void infer_scan(TypeInferenceContext& context) {
  const KernelCreateContext attributes = attribute_reader(context);
  const Graph* body = attributes.attr_graph("body");
  if (!body) fail("required graph attribute 'body' is missing");
  const bool batched = context.opset() < 9;
  const size_t leading = batched ? 1 : 0;
  const auto scans = static_cast<size_t>(attributes.attr_int("num_scan_inputs"));
  if (context.num_inputs() < leading + scans) {
    fail("num_scan_inputs {} does not fit {} inputs", scans, context.num_inputs());
  }
  const size_t states = context.num_inputs() - leading - scans;
  const std::vector<int64_t> input_axes =
      batched ? std::vector<int64_t>(scans, 1)
              : attributes.attr_ints("scan_input_axes", std::vector<int64_t>(scans, 0));
  // Drops the batch axis (opset 8) from a type.
  Dim batch;
  const auto unbatched = [&](ValueType type) {
    if (batched && type.is_tensor() && type.shape && !type.shape->empty()) {
      if (!batch.is_known()) batch = type.shape->front();
      type.shape->erase(type.shape->begin());
    }
    return type;
  };
  std::vector<ValueType> carried;
  for (size_t i = 0; i < states; ++i)
    carried.push_back(unbatched(input_or_none(context, leading + i)));
  std::vector<ValueType> slices;
  Dim iterations;
  for (size_t j = 0; j < scans; ++j) {
    const ValueType type = input_or_none(context, leading + states + j);
    if (!type.is_tensor() || !type.shape) {
      slices.push_back(type.is_tensor() ? tensor_type(type.elem_type) : ValueType{});
      continue;
    }
    std::vector<Dim> dims = *type.shape;
    const size_t axis = rule_axis(input_axes.at(j), dims.size(), "scan_input_axes");
    if (batched && !batch.is_known()) batch = dims.front();
    if (!iterations.is_known() && !iterations.is_symbolic()) iterations = dims[axis];
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
    if (batched) dims.erase(dims.begin());
    slices.push_back(tensor_type(type.elem_type, std::move(dims)));
  }
  const std::vector<ValueType> outputs = infer_carried_body(context, *body, {}, carried, slices, 0);
  const size_t scan_outputs = outputs.size() > states ? outputs.size() - states : 0;
  const std::vector<int64_t> output_axes =
      batched ? std::vector<int64_t>(scan_outputs, 0)
              : attributes.attr_ints("scan_output_axes", std::vector<int64_t>(scan_outputs, 0));
  for (size_t i = 0; i < context.num_outputs() && i < outputs.size(); ++i) {
    ValueType type =
        i < states ? outputs[i] : stacked_type(outputs[i], iterations, output_axes.at(i - states));
    if (batched) type = stacked_type(type, batch);
    if (type.kind != ValueType::Kind::kNone) context.set_output(i, type);
  }
}

}  // namespace

void register_control_flow_ops(OpRegistry& registry) {
  // The later versions added value types (sequences and optionals in If and Loop from 11-16,
  // then bfloat16, float8, int4/uint4, float4 ... 19-25) that the kernels pass through
  // untouched; Loop 11 made `cond` optional and Scan 11 allowed negative axes, which the
  // kernels read at every version.
  registry.add("If", {1, 11, 13, 16, 19, 21, 23, 24, 25}, kernel_factory<IfKernel>());
  registry.add("Loop", {1, 11, 13, 16, 19, 21, 23, 24, 25}, kernel_factory<LoopKernel>());
  registry.add("Scan", {8, 9, 11, 16, 19, 21, 23, 24, 25}, kernel_factory<ScanKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "If", infer_if);
  registry.set_type_rule("", "Loop", infer_loop);
  registry.set_type_rule("", "Scan", infer_scan);
  registry.set_node_check("", "If", check_if);
  registry.set_node_check("", "Loop", check_loop);
  registry.set_node_check("", "Scan", check_scan);
}

}  // namespace onnxkit
