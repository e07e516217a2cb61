// Op family: control flow — If, Loop, Scan. Bodies are compiled once (at session creation)
// into child plans and run through the same executor; they read outer values by
// reference through the frame chain.
#include <limits>

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
// dims come from the body's declared output type where known.
Tensor stack_iterations(const KernelContext& context, const std::vector<Tensor>& items,
                        const Value& declared, int64_t axis, bool reverse) {
  if (items.empty()) {
    Shape shape{0};
    const ValueType& type = declared.type();
    if (type.shape) {
      for (const Dim& dim : *type.shape) shape.push_back(dim.is_known() ? dim.value : 0);
    }
    DType dtype = type.elem_type == DType::kUndefined ? DType::kFloat : type.elem_type;
    return Tensor(dtype, shape);
  }
  if (!reverse) return stack_tensors(items, axis, context.node().describe());
  std::vector<Tensor> reversed(items.rbegin(), items.rend());
  return stack_tensors(reversed, axis, context.node().describe());
}

class IfKernel : public OpKernel {
 public:
  explicit IfKernel(const KernelCreateContext& context)
      : then_branch_(compile_body(context, "then_branch")),
        else_branch_(compile_body(context, "else_branch")) {}

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
class LoopKernel : public OpKernel {
 public:
  explicit LoopKernel(const KernelCreateContext& context)
      : body_(compile_body(context, "body")), body_graph_(*context.attr_graph("body")) {
    const size_t carried = context.node().inputs().size() - 2;
    if (context.node().inputs().size() < 2) context.fail("needs at least the M and cond inputs");
    if (body_graph_.inputs().size() != carried + 2) {
      context.fail("body takes {} inputs, expected {} (iteration, condition and {} carried)",
                   body_graph_.inputs().size(), carried + 2, carried);
    }
    if (body_graph_.outputs().size() < carried + 1) {
      context.fail("body returns {} outputs, expected at least {}", body_graph_.outputs().size(),
                   carried + 1);
    }
  }

  void compute(KernelContext& context) const override {
    int64_t max_trips = std::numeric_limits<int64_t>::max();
    if (context.has_input(0)) max_trips = static_cast<int64_t>(read_scalar(context.input(0), "M"));
    bool condition = true;
    if (context.has_input(1)) condition = read_condition(context, context.input(1), "cond");
    const size_t carried_count = context.num_inputs() - 2;
    const size_t scan_count = body_graph_.outputs().size() - 1 - carried_count;
    std::vector<RuntimeValue> carried;
    for (size_t i = 0; i < carried_count; ++i) carried.push_back(context.input_value(2 + i));
    std::vector<std::vector<Tensor>> scans(scan_count);

    for (int64_t trip = 0; trip < max_trips && condition; ++trip) {
      std::vector<RuntimeValue> inputs{RuntimeValue(int64_scalar(trip)),
                                       RuntimeValue(bool_scalar(condition))};
      inputs.insert(inputs.end(), carried.begin(), carried.end());
      auto results = context.subgraph_runner().run(*body_, std::move(inputs), context.frame());
      condition = read_condition(context, results[0].tensor(), "body condition output");
      for (size_t i = 0; i < carried_count; ++i) carried[i] = std::move(results[1 + i]);
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

void register_control_flow_ops(OpRegistry& registry) {
  // The later versions added value types (sequences and optionals in If and Loop from 11-16,
  // then bfloat16, float8, int4/uint4, float4 ... 19-25) that the kernels pass through
  // untouched; Loop 11 made `cond` optional and Scan 11 allowed negative axes, which the
  // kernels read at every version.
  registry.add("If", {1, 11, 13, 16, 19, 21, 23, 24, 25}, kernel_factory<IfKernel>());
  registry.add("Loop", {1, 11, 13, 16, 19, 21, 23, 24, 25}, kernel_factory<LoopKernel>());
  registry.add("Scan", {8, 9, 11, 16, 19, 21, 23, 24, 25}, kernel_factory<ScanKernel>());
}

}  // namespace onnxkit
