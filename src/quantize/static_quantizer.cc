#include "quantize/static_quantizer.h"

#include <algorithm>
#include <cmath>

#include "core/status.h"
#include "ir/graph_clone.h"

namespace onnxkit::quant {
namespace {

// How static mode treats an op: which inputs carry quantized data and where the output's
// parameters come from.
enum class Role {
  kConv,         // x, weight (per channel on axis 0), int32 bias
  kMatMul,       // both inputs; a constant B is a weight (per channel on its last axis)
  kGemm,         // x, weight (per channel on N), int32 bias
  kAllInputs,    // every float input; the output has its own range (Add, Mul, Concat)
  kFirstInput,   // input 0; the output has its own range (Relu, Clip, GlobalAveragePool ...)
  kSameAsInput,  // input 0; the output reuses its parameters (data movement, pools), as
                 // ONNX Runtime's quantize_output_same_as_input does
};

const std::map<std::string, Role>& roles() {
  static const std::map<std::string, Role> table = {
      {"Conv", Role::kConv},
      {"MatMul", Role::kMatMul},
      {"Gemm", Role::kGemm},
      {"Add", Role::kAllInputs},
      {"Mul", Role::kAllInputs},
      {"Concat", Role::kAllInputs},
      {"Relu", Role::kFirstInput},
      {"Clip", Role::kFirstInput},
      {"LeakyRelu", Role::kFirstInput},
      {"Sigmoid", Role::kFirstInput},
      {"GlobalAveragePool", Role::kFirstInput},
      {"AveragePool", Role::kSameAsInput},
      {"MaxPool", Role::kSameAsInput},
      {"Reshape", Role::kSameAsInput},
      {"Transpose", Role::kSameAsInput},
      {"Squeeze", Role::kSameAsInput},
      {"Unsqueeze", Role::kSameAsInput},
      {"Flatten", Role::kSameAsInput},
      {"Slice", Role::kSameAsInput},
      {"Resize", Role::kSameAsInput},
  };
  return table;
}

bool float_or_unknown(const Value* value) {
  const ValueType& type = value->type();
  return !type.is_tensor() || type.elem_type == DType::kFloat ||
         type.elem_type == DType::kUndefined;
}

void set_axis(Node* node, int64_t axis) {
  Attribute a;
  a.name = "axis";
  a.type = AttrType::kInt;
  a.i = axis;
  node->set_attribute(std::move(a));
}

// Relu, and a Clip whose bounds hold 0 (ReLU6): quantizing the producer's output with the
// activation's calibrated range saturates where the activation clips, since that range
// holds 0 as every quantized range does.
bool removable_activation(const Node& node) {
  if (node.op_type() == "Relu") return true;
  if (node.op_type() != "Clip") return false;
  auto bound_holds_zero = [&](size_t input, const char* attribute, bool lower) {
    float bound = lower ? -INFINITY : INFINITY;
    if (const Attribute* a = node.find_attribute(attribute)) bound = a->f;
    if (const Value* v = node.input(input)) {
      if (!v->has_initializer() || v->initializer().dtype() != DType::kFloat ||
          v->initializer().numel() != 1) {
        return false;
      }
      bound = v->initializer().data<float>()[0];
    }
    return lower ? bound <= 0 : bound >= 0;
  };
  return bound_holds_zero(1, "min", true) && bound_holds_zero(2, "max", false);
}

}  // namespace

std::vector<std::string> static_op_types() {
  std::vector<std::string> ops;
  for (const auto& [op, role] : roles()) ops.push_back(op);
  return ops;
}

StaticQuantizer::StaticQuantizer(Graph& graph, const QuantizeOptions& options)
    : graph_(graph),
      options_(options),
      rewriter_(graph),
      per_channel_(options.per_channel.value_or(false)) {}

std::vector<StaticQuantizer::Slot> StaticQuantizer::slots(const Node& node) const {
  std::vector<Slot> result;
  const Role role = roles().at(node.op_type());
  auto data_input = [&](size_t i) {
    const Value* v = node.input(i);
    if (!v) return;
    result.push_back(
        {i, is_float_constant(graph_, v) ? Slot::Kind::kConstant : Slot::Kind::kActivation});
  };
  switch (role) {
    case Role::kConv:
      result.push_back({0, Slot::Kind::kActivation});
      result.push_back({1, Slot::Kind::kWeight, per_channel_ ? 0 : -1});
      if (node.input(2)) result.push_back({2, Slot::Kind::kBias});
      break;
    case Role::kGemm: {
      result.push_back({0, Slot::Kind::kActivation});
      const bool trans_b = int_attribute(node, "transB", 0) != 0;
      if (is_float_constant(graph_, node.input(1))) {
        result.push_back({1, Slot::Kind::kWeight, per_channel_ ? (trans_b ? 0 : 1) : -1});
      } else {
        result.push_back({1, Slot::Kind::kActivation});
      }
      const Value* c = node.input(2);
      if (c && is_float_constant(graph_, c) && c->initializer().rank() == 1 &&
          float_attribute(node, "beta", 1.0f) == 1.0f) {
        result.push_back({2, Slot::Kind::kBias});
      }
      break;
    }
    case Role::kMatMul: {
      data_input(0);
      const Value* b = node.input(1);
      if (is_float_constant(graph_, b)) {
        const int64_t rank = static_cast<int64_t>(b->initializer().rank());
        result.push_back({1, Slot::Kind::kWeight, per_channel_ && rank == 2 ? rank - 1 : -1});
      } else {
        data_input(1);
      }
      break;
    }
    case Role::kAllInputs:
      for (size_t i = 0; i < node.inputs().size(); ++i) data_input(i);
      break;
    case Role::kFirstInput:
    case Role::kSameAsInput:
      data_input(0);
      break;
  }
  return result;
}

bool StaticQuantizer::shares_input_params(const Node& node) const {
  return roles().at(node.op_type()) == Role::kSameAsInput;
}

std::vector<std::string> StaticQuantizer::select(const std::vector<Node*>& candidates,
                                                 QuantizeReport& report) {
  std::vector<std::string> tensors;
  std::set<std::string> seen;
  auto want = [&](const Value* v) {
    if (seen.insert(v->name()).second) tensors.push_back(v->name());
  };
  for (Node* node : candidates) {
    std::string why;
    const Role role = roles().at(node->op_type());
    if ((role == Role::kConv || role == Role::kGemm) &&
        !is_float_constant(graph_, node->input(1))) {
      why = role == Role::kConv ? "W is not a constant float weight" : "";
    }
    if (role == Role::kGemm && int_attribute(*node, "transA", 0) != 0) why = "transA is set";
    if (role == Role::kConv && node->input(2) && !is_float_constant(graph_, node->input(2))) {
      why = "B is not constant";
    }
    const std::vector<Slot> node_slots = slots(*node);
    for (const Slot& slot : node_slots) {
      if (slot.kind == Slot::Kind::kActivation && !float_or_unknown(node->input(slot.input))) {
        why = fmt::format("input '{}' is not float", node->input(slot.input)->name());
      }
    }
    if (node_slots.empty()) why = "no float input";
    // Its output would take the parameters of an activation that has none.
    if (role == Role::kSameAsInput && !node_slots.empty() &&
        node_slots.front().kind != Slot::Kind::kActivation) {
      why = "its data input is a constant";
    }
    if (!node->output(0) || !float_or_unknown(node->output(0))) why = "its output is not float";
    if (!why.empty()) {
      report.nodes.push_back({node_label(*node), node->op_type(), "left float: " + why});
      continue;
    }
    selected_.push_back(node);
  }
  if (options_.op_types.empty()) keep_float_joins_that_feed_float_ops(report);
  for (Node* node : selected_) {
    for (const Slot& slot : slots(*node)) {
      if (slot.kind == Slot::Kind::kActivation) want(node->input(slot.input));
    }
    want(node->output(0));  // kSameAsInput outputs too: a Relu may read them (fold_relus)
  }
  return tensors;
}

// With the default op types, an Add, Mul or Concat is quantized only between int8 ops: an
// input comes from a quantized op and every reader is quantized too. One that feeds a
// float op (LayerNorm's
// ReduceMean and Sub, GELU's Div, Softmax) or a graph output gains no int8 kernel, and its
// per-tensor range costs accuracy where it is widest: in a transformer these are the
// residual stream and LayerNorm's scale and shift, whose outlier channels one scale cannot
// hold (static BERT-base: cosine to fp32 0.992 with them int8, 0.997 without). Repeated
// until nothing changes, since leaving one float makes a float reader of its producers.
void StaticQuantizer::keep_float_joins_that_feed_float_ops(QuantizeReport& report) {
  bool changed = true;
  while (changed) {
    changed = false;
    std::set<const Node*> selected(selected_.begin(), selected_.end());
    for (Node* node : std::vector<Node*>(selected_)) {
      if (roles().at(node->op_type()) != Role::kAllInputs) continue;
      const Value* out = node->output(0);
      std::string why;
      if (graph_.is_output(out)) why = "its output is a graph output";
      for (const Use& use : out->uses()) {
        if (why.empty() && !use.node->is_return() && !selected.count(use.node)) {
          why = fmt::format("its output feeds float {} '{}'", use.node->op_type(),
                            node_label(*use.node));
        }
      }
      bool fed_by_int8 = false;
      for (const Slot& slot : slots(*node)) {
        const Node* producer = node->input(slot.input)->producer();
        if (slot.kind == Slot::Kind::kActivation && producer && selected.count(producer)) {
          fed_by_int8 = true;
        }
      }
      // Quantizing it would only add a rounding of float inputs (GELU's last Mul, whose
      // reader quantizes its output anyway).
      if (why.empty() && !fed_by_int8) why = "its inputs come from float ops";
      if (why.empty()) continue;
      std::erase(selected_, node);
      selected.erase(node);
      changed = true;
      report.nodes.push_back(
          {node_label(*node), node->op_type(),
           fmt::format("left float: {} (default op types quantize {} only between int8 ops; "
                       "name it in --op-types to quantize it)",
                       why, node->op_type())});
    }
  }
}

QParams StaticQuantizer::activation_params(const TensorRange& range) const {
  const bool symmetric = options_.symmetric_activations;
  return compute_qparams(range.rmin, range.rmax, qrange(options_.activation_type, false, symmetric),
                         symmetric);
}

// A Relu (or ReLU6-like Clip) right after a quantized Conv / MatMul / Gemm that only it
// reads is dropped: the producer's output is quantized with the activation output's range,
// whose ends clip as the activation did (ONNX Runtime's QDQRemovableActivation). Not with
// symmetric activations, whose range would keep the negatives.
void StaticQuantizer::fold_relus(const std::map<std::string, TensorRange>& ranges,
                                 QuantizeReport& report) {
  if (options_.symmetric_activations) return;
  std::set<const Node*> selected(selected_.begin(), selected_.end());
  for (Node* relu : std::vector<Node*>(selected_)) {
    if (!removable_activation(*relu)) continue;
    Value* x = relu->input(0);
    Node* producer = x->producer();
    if (!producer || !selected.count(producer) || x->uses().size() != 1 || graph_.is_output(x) ||
        !ranges.count(relu->output(0)->name())) {
      continue;
    }
    const std::string& op = producer->op_type();
    if (op != "Conv" && op != "MatMul" && op != "Gemm") continue;
    const std::string label = node_label(*relu);
    const std::string activation = relu->op_type();
    rewriter_.move_output(relu, 0, producer);
    graph_.remove_node(relu);
    if (x->uses().empty() && !x->producer()) graph_.remove_value(x);
    std::erase(selected_, relu);
    report.nodes.push_back(
        {label, activation, "folded into the quantization of " + node_label(*producer)});
  }
}

void StaticQuantizer::quantize_activation(Value* value, QParams params) {
  if (params_.count(value->name())) return;
  params_[value->name()] = params;
  const DType type = options_.activation_type;
  Value* scale =
      rewriter_.constant(value->name() + "_scale", scalar_tensor(DType::kFloat, params.scale));
  Value* zero_point =
      rewriter_.constant(value->name() + "_zero_point", scalar_tensor(type, params.zero_point));
  ValueType qtype = value->type();
  if (qtype.is_tensor()) {
    qtype.elem_type = type;
  } else {
    qtype = ValueType::tensor(type);
  }
  ValueType ftype = value->type().is_tensor() ? value->type() : ValueType::tensor(DType::kFloat);
  if (Node* producer = value->producer()) {
    // The producer writes a new value; the pair gives back the original one, so names,
    // graph outputs and every reader stay as they were.
    const size_t index = value->producer_output();
    Value* raw = graph_.create_value(graph_.unique_name(value->name() + "_prequant"));
    raw->set_type(ftype);
    graph_.set_node_output(producer, index, raw);
    Node* q = rewriter_.node("QuantizeLinear", {raw, scale, zero_point},
                             value->name() + "_QuantizeLinear_Output", qtype);
    Node* dq = graph_.add_node("DequantizeLinear", {q->output(0), scale, zero_point}, {""}, "",
                               rewriter_.node_name(value->name() + "_DequantizeLinear"));
    graph_.set_node_output(dq, 0, value);
    return;
  }
  // A graph input keeps its name: its readers move to the DQ output.
  std::vector<Use> uses = value->uses();
  Node* q = rewriter_.node("QuantizeLinear", {value, scale, zero_point},
                           value->name() + "_QuantizeLinear_Output", qtype);
  Node* dq = rewriter_.node("DequantizeLinear", {q->output(0), scale, zero_point},
                            value->name() + "_DequantizeLinear_Output", ftype);
  for (const Use& use : uses) {
    if (use.node->is_return()) continue;
    graph_.set_node_input(use.node, use.input, dq->output(0));
  }
}

Value* StaticQuantizer::dequantized_constant(Value* value, const Tensor& data, const Tensor& scale,
                                             const Tensor& zero_point, int64_t axis) {
  Value* q = rewriter_.constant(value->name() + "_quantized", data);
  Value* s = rewriter_.constant(value->name() + "_scale", scale);
  Value* z = rewriter_.constant(value->name() + "_zero_point", zero_point);
  Node* dq =
      rewriter_.node("DequantizeLinear", {q, s, z}, value->name() + "_DequantizeLinear_Output",
                     value->type().is_tensor() ? value->type() : ValueType::tensor(DType::kFloat));
  if (axis >= 0 && scale.rank() == 1) set_axis(dq, axis);
  return dq->output(0);
}

// A float constant in an activation's place (Add's bias, Mul's scale): quantized per
// tensor with the activation type over its own range.
Value* StaticQuantizer::quantized_constant(Value* value) {
  const Tensor& data = value->initializer();
  const float* x = data.data<float>();
  TensorRange range;
  if (data.numel() > 0) {
    auto [lo, hi] = std::minmax_element(x, x + data.numel());
    range = {*lo, *hi};
  }
  const QParams params = activation_params(range);
  const QRange qr = qrange(options_.activation_type, false, options_.symmetric_activations);
  Tensor q(options_.activation_type, data.shape());
  for (int64_t i = 0; i < data.numel(); ++i) {
    const int32_t level = quantize_value(x[i], params, qr);
    if (options_.activation_type == DType::kInt8) {
      q.mutable_data<int8_t>()[i] = static_cast<int8_t>(level);
    } else {
      q.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(level);
    }
  }
  return dequantized_constant(value, q, scalar_tensor(DType::kFloat, params.scale),
                              scalar_tensor(options_.activation_type, params.zero_point), -1);
}

void StaticQuantizer::apply(const std::map<std::string, TensorRange>& ranges,
                            QuantizeReport& report) {
  fold_relus(ranges, report);
  const bool symmetric_weights = weights_symmetric(options_);
  // Weights shared by several nodes are quantized once per axis.
  std::map<std::pair<const Value*, int64_t>, std::pair<Value*, std::vector<QParams>>> weights;
  std::map<const Value*, Value*> constants;
  for (Node* node : std::vector<Node*>(selected_)) {
    const std::vector<Slot> node_slots = slots(*node);
    std::string missing;
    for (const Slot& slot : node_slots) {
      const Value* v = node->input(slot.input);
      if (slot.kind == Slot::Kind::kActivation && !ranges.count(v->name()) &&
          !params_.count(v->name())) {
        missing = v->name();
      }
    }
    if (!shares_input_params(*node) && !ranges.count(node->output(0)->name())) {
      missing = node->output(0)->name();
    }
    if (!missing.empty()) {
      report.nodes.push_back(
          {node_label(*node), node->op_type(),
           fmt::format("left float: no float values of '{}' in calibration", missing)});
      std::erase(selected_, node);
      continue;
    }
    float input_scale = 1.0f;
    std::vector<QParams> weight_params;
    for (const Slot& slot : node_slots) {
      Value* v = node->input(slot.input);
      switch (slot.kind) {
        case Slot::Kind::kActivation: {
          auto known = params_.find(v->name());
          quantize_activation(
              v, known != params_.end() ? known->second : activation_params(ranges.at(v->name())));
          if (slot.input == 0) input_scale = params_.at(v->name()).scale;
          break;
        }
        case Slot::Kind::kWeight: {
          auto key = std::make_pair(static_cast<const Value*>(v), slot.axis);
          auto it = weights.find(key);
          if (it == weights.end()) {
            v->initializer().populate_mapped_pages();  // one call, not a fault per page
            QuantizedWeight w = quantize_weight(v->initializer(), options_.weight_type, slot.axis,
                                                options_.reduce_range, symmetric_weights);
            v->initializer().release_mapped_pages();
            Value* dq = dequantized_constant(v, w.data, w.scale, w.zero_point, slot.axis);
            it = weights.emplace(key, std::make_pair(dq, w.params)).first;
          }
          weight_params = it->second.second;
          graph_.set_node_input(node, slot.input, it->second.first);
          break;
        }
        case Slot::Kind::kBias: {
          QuantizedBias b = quantize_bias(v->initializer(), input_scale, weight_params);
          Tensor zero_point(DType::kInt32, b.scale.shape());
          graph_.set_node_input(
              node, slot.input,
              dequantized_constant(v, b.data, b.scale, zero_point, b.scale.rank() == 1 ? 0 : -1));
          break;
        }
        case Slot::Kind::kConstant: {
          auto it = constants.find(v);
          if (it == constants.end()) it = constants.emplace(v, quantized_constant(v)).first;
          graph_.set_node_input(node, slot.input, it->second);
          break;
        }
      }
    }
    Value* output = node->output(0);
    if (shares_input_params(*node)) {
      quantize_activation(output, params_.at(node->input(0)->name()));
    } else {
      quantize_activation(output, activation_params(ranges.at(output->name())));
    }
    report.nodes.push_back({node_label(*node), node->op_type(), "QDQ"});
    ++report.quantized[node->op_type()];
  }
  if (options_.format == QuantFormat::kQOperator) to_qoperator(report);
}

// DQ(x), DQ(w)[, DQ(bias)] -> Conv -> Q  ==>  QLinearConv; DQ(a), DQ(b) -> MatMul -> Q ==>
// QLinearMatMul. The rest keeps its Q/DQ pairs (ONNX has no standard int8 Add, pool ...).
void StaticQuantizer::to_qoperator(QuantizeReport& report) {
  auto dq_of = [](Value* v) -> Node* {
    Node* p = v ? v->producer() : nullptr;
    return p && p->op_type() == "DequantizeLinear" ? p : nullptr;
  };
  std::vector<Node*> dead;
  for (Node* node : std::vector<Node*>(selected_)) {
    const bool conv = node->op_type() == "Conv";
    if (!conv && node->op_type() != "MatMul") continue;
    Value* out = node->output(0);
    if (out->uses().size() != 1 || graph_.is_output(out)) continue;
    Node* q = out->uses()[0].node;
    if (q->is_return() || q->op_type() != "QuantizeLinear") continue;
    Node* dx = dq_of(node->input(0));
    Node* dw = dq_of(node->input(1));
    Node* db = node->input(2) ? dq_of(node->input(2)) : nullptr;
    if (!dx || !dw || (node->input(2) && !db)) continue;
    // QLinearMatMul's A parameters are per tensor; QLinearConv's x too.
    if (dx->input(1)->initializer().rank() != 0) continue;
    std::vector<Value*> inputs{dx->input(0), dx->input(1), dx->input(2), dw->input(0),
                               dw->input(1), dw->input(2), q->input(1),  q->input(2)};
    if (db) inputs.push_back(db->input(0));
    const std::string label = node_label(*node);
    Node* fused = rewriter_.node(conv ? "QLinearConv" : "QLinearMatMul", inputs,
                                 out->name() + "_qlinear", q->output(0)->type());
    fused->set_name(rewriter_.node_name(label + "_quant"));
    if (conv) {
      for (const Attribute& a : node->attributes()) {
        fused->set_attribute(clone_attribute(a, fused->graph(), {}));
      }
    }
    rewriter_.move_output(q, 0, fused);
    graph_.remove_node(q);
    graph_.remove_node(node);
    for (Node* dq : {dx, dw, db}) {
      if (dq && std::find(dead.begin(), dead.end(), dq) == dead.end()) dead.push_back(dq);
    }
    for (auto& entry : report.nodes) {
      if (entry.node == label && entry.how == "QDQ")
        entry.how = conv ? "QLinearConv" : "QLinearMatMul";
    }
  }
  // DequantizeLinear nodes the new ops made unused.
  for (Node* dq : dead) {
    if (dq->output(0)->uses().empty() && !graph_.is_output(dq->output(0))) graph_.remove_node(dq);
  }
}

}  // namespace onnxkit::quant
