// onnxkit::quantize: node selection, the dynamic rewrite (ONNX Runtime's IntegerOps
// patterns), QDQ insertion for static mode and its QOperator form.
#include "onnxkit/quantize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "core/status.h"
#include "ir/graph.h"
#include "ir/graph_clone.h"
#include "ir/model.h"
#include "quantize/calibration.h"
#include "quantize/quant_params.h"
#include "quantize/rewriter.h"
#include "quantize/static_quantizer.h"
#include "quantize/weight_file.h"

namespace onnxkit {
namespace {

using Clock = std::chrono::steady_clock;
using namespace quant;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Folded weights from this size up move to a mapped temporary file before calibration.
constexpr size_t kMappedWeightMinBytes = size_t{1} << 20;

const std::set<std::string> kDynamicOps = {"MatMul", "Gemm", "Conv", "Gather"};
// ONNX Runtime's quantize_dynamic defaults to its IntegerOps registry, which holds Gather
// (an embedding table: uint8 rows, DequantizeLinear after the Gather) beside MatMul and Conv.
const std::vector<std::string> kDynamicDefault = {"MatMul", "Gemm", "Gather"};

// Weights that are views of the mapped model file: their pages leave the resident set (read
// back from the file when touched again). Simplify's passes and calibration's kernels read
// every weight, and a model's pages resident beside the calibration session and the new int8
// weights would double the peak memory for nothing.
void release_weight_pages(const Graph& graph) {
  for (const Value* value : graph.initializers()) value->initializer().release_mapped_pages();
}

bool is_quantized_op(const Node& node) {
  static const std::set<std::string> ops = {
      "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
      "QLinearMatMul",  "MatMulInteger",    "ConvInteger",           "QGemm",
      "QLinearAdd",     "QLinearMul",       "DynamicQuantizeMatMul", "MatMulIntegerToFloat"};
  return ops.count(node.op_type()) > 0;
}

// ---------------------------------------------------------------------------------------
// Dynamic mode: DynamicQuantizeLinear(x) -> MatMulInteger / ConvInteger with int8 weights
// -> Cast -> Mul(x_scale * w_scale) (-> Add bias), ONNX Runtime's IntegerOps pattern.

class DynamicQuantizer {
 public:
  DynamicQuantizer(Graph& graph, const QuantizeOptions& options)
      : rewriter_(graph), options_(options) {}

  // Why `node` cannot be quantized, or "" when it can.
  std::string refuse(const Node& node) const {
    const Graph& graph = *node.graph();
    if (node.op_type() == "MatMul") {
      if (transposed_constant(graph, node.input(1))) return "";
      if (!is_float_constant(graph, node.input(1))) return "B is not a constant float weight";
      if (node.input(1)->initializer().rank() < 2) return "B is 1-D";
    } else if (node.op_type() == "Gemm") {
      if (int_attribute(node, "transA", 0) != 0) return "transA is set";
      if (!is_float_constant(graph, node.input(1))) return "B is not a constant float weight";
      const Value* c = node.input(2);
      if (c && c->has_initializer() && c->initializer().dtype() != DType::kFloat)
        return "C is not float";
    } else if (node.op_type() == "Conv") {
      if (!is_float_constant(graph, node.input(1))) return "W is not a constant float weight";
      if (node.input(2) && !is_float_constant(graph, node.input(2))) return "B is not constant";
    } else if (node.op_type() == "Gather") {
      // Only a constant table (an embedding): ONNX Runtime's is_valid_quantize_weight.
      if (!is_float_constant(graph, node.input(0))) return "data is not a constant float table";
      return "";
    }
    const Value* x = node.input(0);
    if (x->type().is_tensor() && x->type().elem_type != DType::kFloat &&
        x->type().elem_type != DType::kUndefined) {
      return "its input is not float";
    }
    return "";
  }

  // Gather(table, indices) -> Gather(uint8 table, indices) -> DequantizeLinear: ONNX
  // Runtime's GatherQuant in dynamic mode, where the table is quantized as an activation
  // (uint8, per tensor, never reduced; symmetric only when asked), so only the gathered
  // rows are dequantized.
  void quantize_gather(Node* node) {
    Value* table = node->input(0);
    auto it = tables_.find(table);
    if (it == tables_.end()) {
      const bool weight_typed = options_.activation_type == options_.weight_type;
      const bool symmetric =
          weight_typed ? weights_symmetric(options_) : options_.symmetric_activations;
      quant::QuantizedWeight q = quant::quantize_weight(
          table->initializer(), options_.activation_type, -1, false, symmetric);
      table->initializer().release_mapped_pages();
      const std::string base = table->name();
      it = tables_
               .emplace(table, Table{rewriter_.constant(base + "_quantized", q.data),
                                     rewriter_.constant(base + "_scale", q.scale),
                                     rewriter_.constant(base + "_zero_point", q.zero_point)})
               .first;
    }
    const Table& q = it->second;
    const std::string out = node->output(0)->name();
    ValueType gathered = node->output(0)->type();
    if (gathered.is_tensor()) {
      gathered.elem_type = options_.activation_type;
    } else {
      gathered = ValueType::tensor(options_.activation_type);
    }
    Node* gather = rewriter_.node("Gather", {q.data, node->input(1)}, out + "_quantized", gathered);
    for (const Attribute& a : node->attributes()) {
      gather->set_attribute(clone_attribute(a, gather->graph(), {}));
    }
    Node* dequantize =
        rewriter_.node("DequantizeLinear", {gather->output(0), q.scale, q.zero_point},
                       out + "_dequantized", ValueType::tensor(DType::kFloat));
    rewriter_.move_output(node, 0, dequantize);
    rewriter_.graph().remove_node(node);
  }

  void quantize(Node* node) {
    if (node->op_type() == "Gather") return quantize_gather(node);
    Graph& graph = rewriter_.graph();
    const bool per_channel = options_.per_channel.value_or(true);
    const bool symmetric = weights_symmetric(options_);
    const Activation& x = activation(node->input(0));
    Node* transpose = transposed_constant(graph, node->input(1));
    Tensor weight = transpose ? transpose_2d(transpose->input(0)->initializer())
                              : node->input(1)->initializer();
    const bool gemm = node->op_type() == "Gemm";
    const bool conv = node->op_type() == "Conv";
    if (gemm && int_attribute(*node, "transB", 0) != 0) weight = transpose_2d(weight);
    // Per channel: a scale per column of B; ConvInteger's filter zero point must be a
    // scalar in ONNX Runtime, so Conv weights stay per tensor.
    const int64_t axis = conv || !per_channel ? -1 : static_cast<int64_t>(weight.rank()) - 1;
    quant::QuantizedWeight w = quant::quantize_weight(weight, options_.weight_type, axis,
                                                      options_.reduce_range, symmetric);
    const std::string base = node->input(1)->name();
    if (gemm) {  // alpha folds into the weight's scale
      const float alpha = float_attribute(*node, "alpha", 1.0f);
      if (alpha != 1.0f) {
        float* s = w.scale.mutable_data<float>();
        for (int64_t i = 0; i < w.scale.numel(); ++i) s[i] *= alpha;
      }
    }
    Tensor scale = w.scale;
    if (conv && scale.rank() == 1) scale = broadcast_channels(scale, weight.rank());
    if (transpose) {
      transpose->input(0)->initializer().release_mapped_pages();
    } else {
      node->input(1)->initializer().release_mapped_pages();
    }
    Value* wq = rewriter_.constant(base + "_quantized", w.data);
    Value* wzp = rewriter_.constant(base + "_zero_point", w.zero_point);
    Value* ws = rewriter_.constant(base + "_scale", scale);
    const std::string out = node->output(0)->name();
    std::vector<Value*> inputs{x.quantized, wq, x.zero_point, wzp};
    Node* integer = nullptr;
    if (conv) {
      integer = rewriter_.node("ConvInteger", inputs, out + "_output_quantized",
                               ValueType::tensor(DType::kInt32));
      for (const Attribute& a : node->attributes()) {
        integer->set_attribute(clone_attribute(a, integer->graph(), {}));
      }
    } else {
      integer = rewriter_.node("MatMulInteger", inputs, out + "_output_quantized",
                               ValueType::tensor(DType::kInt32));
    }
    Node* cast = rewriter_.node("Cast", {integer->output(0)}, out + "_cast_output",
                                ValueType::tensor(DType::kFloat));
    Attribute to;
    to.name = "to";
    to.type = AttrType::kInt;
    to.i = static_cast<int64_t>(DType::kFloat);
    cast->set_attribute(std::move(to));
    Node* scales =
        rewriter_.node("Mul", {x.scale, ws}, out + "_scales_mul", ValueType::tensor(DType::kFloat));
    Node* result = rewriter_.node("Mul", {cast->output(0), scales->output(0)},
                                  out + "_output_scale_mul", ValueType::tensor(DType::kFloat));
    Value* bias = node->input(2);
    if (bias) {
      Value* added = bias;
      if (conv) {
        added = rewriter_.constant(bias->name() + "_reshaped",
                                   broadcast_channels(bias->initializer(), weight.rank()));
      } else if (gemm) {
        const float beta = float_attribute(*node, "beta", 1.0f);
        if (beta != 1.0f) {
          if (bias->has_initializer() && bias->initializer().dtype() == DType::kFloat) {
            Tensor scaled = bias->initializer();
            scaled.set_name("");
            float* c = scaled.mutable_data<float>();
            for (int64_t i = 0; i < scaled.numel(); ++i) c[i] *= beta;
            added = rewriter_.constant(bias->name() + "_scaled", scaled);
          } else {
            Value* b = rewriter_.constant(out + "_beta", quant::scalar_tensor(DType::kFloat, beta));
            added =
                rewriter_
                    .node("Mul", {bias, b}, out + "_bias_scaled", ValueType::tensor(DType::kFloat))
                    ->output(0);
          }
        }
      }
      result = rewriter_.node("Add", {result->output(0), added}, out + "_bias_add",
                              ValueType::tensor(DType::kFloat));
    }
    rewriter_.move_output(node, 0, result);
    graph.remove_node(node);
    if (transpose && transpose->output(0)->uses().empty() &&
        !graph.is_output(transpose->output(0))) {
      graph.remove_node(transpose);
    }
  }

 private:
  // B = Transpose(a 2-D float constant): a tied weight that simplify leaves unfolded rather
  // than hold it twice (GPT-2's LM head reads the embedding table, which a Gather also
  // reads). ONNX Runtime's quant_pre_process folds it; quantizing the transposed values
  // gives the same int8 weight.
  static Node* transposed_constant(const Graph& graph, const Value* b) {
    Node* producer = b->producer();
    if (!producer || producer->op_type() != "Transpose" || !producer->domain().empty()) {
      return nullptr;
    }
    const Value* source = producer->input(0);
    if (!source || !is_float_constant(graph, source) || source->initializer().rank() != 2) {
      return nullptr;
    }
    if (const Attribute* perm = producer->find_attribute("perm")) {
      if (perm->ints != std::vector<int64_t>{1, 0}) return nullptr;
    }
    return producer;
  }

  struct Activation {
    Value* quantized;
    Value* scale;
    Value* zero_point;
  };

  // One DynamicQuantizeLinear per activation, shared by its readers.
  const Activation& activation(Value* x) {
    auto it = activations_.find(x);
    if (it != activations_.end()) return it->second;
    Graph& graph = rewriter_.graph();
    const std::string q = graph.unique_name(x->name() + "_quantized");
    const std::string s = graph.unique_name(x->name() + "_scale");
    const std::string z = graph.unique_name(x->name() + "_zero_point");
    Node* node = graph.add_node("DynamicQuantizeLinear", {x}, {q, s, z}, "",
                                rewriter_.node_name(x->name() + "_QuantizeLinear"));
    ValueType qtype = x->type();
    qtype.elem_type = DType::kUInt8;
    if (!qtype.is_tensor()) qtype = ValueType::tensor(DType::kUInt8);
    node->output(0)->set_type(qtype);
    node->output(1)->set_type(ValueType::tensor(DType::kFloat, std::vector<Dim>{}));
    node->output(2)->set_type(ValueType::tensor(DType::kUInt8, std::vector<Dim>{}));
    return activations_[x] = {node->output(0), node->output(1), node->output(2)};
  }

  static Tensor transpose_2d(const Tensor& w) {
    const int64_t rows = w.shape()[0], cols = w.shape()[1];
    Tensor t(DType::kFloat, {cols, rows});
    const float* src = w.data<float>();
    float* dst = t.mutable_data<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
    return t;
  }

  // [M] -> [1, M, 1, ...] of `rank` dims, to broadcast over a conv output.
  static Tensor broadcast_channels(const Tensor& v, size_t rank) {
    Shape shape(rank, 1);
    shape[1] = v.numel();
    Tensor out = Tensor::from_buffer(v.dtype(), shape, v.buffer());
    return out;
  }

  struct Table {
    Value* data;
    Value* scale;
    Value* zero_point;
  };

  Rewriter rewriter_;
  const QuantizeOptions& options_;
  std::unordered_map<Value*, Activation> activations_;
  std::unordered_map<Value*, Table> tables_;  // quantized embedding tables, shared by Gathers
};

// Op types the options ask for, checked against what the mode can quantize.
std::set<std::string> chosen_op_types(const QuantizeOptions& options) {
  std::vector<std::string> known;
  if (options.mode == QuantizeMode::kDynamic) {
    known.assign(kDynamicOps.begin(), kDynamicOps.end());
  } else {
    known = static_op_types();
  }
  if (options.op_types.empty()) {
    if (options.mode == QuantizeMode::kDynamic)
      return {kDynamicDefault.begin(), kDynamicDefault.end()};
    return {known.begin(), known.end()};
  }
  for (const std::string& op : options.op_types) {
    if (std::find(known.begin(), known.end(), op) == known.end()) {
      fail("op type '{}' cannot be quantized in {} mode (op types: {})", op,
           options.mode == QuantizeMode::kDynamic ? "dynamic" : "static", join(known));
    }
  }
  return {options.op_types.begin(), options.op_types.end()};
}

void check_options(const QuantizeOptions& options) {
  if (options.weight_type != DType::kInt8 && options.weight_type != DType::kUInt8) {
    fail("weight type must be int8 or uint8, not {}", dtype_name(options.weight_type));
  }
  if (options.activation_type != DType::kInt8 && options.activation_type != DType::kUInt8) {
    fail("activation type must be uint8 or int8, not {}", dtype_name(options.activation_type));
  }
  if (options.mode == QuantizeMode::kDynamic && options.activation_type != DType::kUInt8) {
    fail("dynamic mode quantizes activations to uint8 (DynamicQuantizeLinear's output type)");
  }
  if (options.mode == QuantizeMode::kStatic && options.calibration_samples == 0) {
    fail("static mode needs at least one calibration sample");
  }
  if (options.percentile <= 0 || options.percentile > 100) {
    fail("percentile must be in (0, 100], not {}", options.percentile);
  }
}

QuantizeReport quantize_model(Model& model, const QuantizeOptions& options) {
  check_options(options);
  const std::set<std::string> op_types = chosen_op_types(options);
  Graph& graph = model.graph();
  for (Node* node : graph.nodes()) {
    if (is_quantized_op(*node)) {
      fail("the model is already quantized: {} is a quantized op; quantize its float source",
           node->describe());
    }
  }
  QuantizeReport report;
  // Per-axis QuantizeLinear / DequantizeLinear and per-column MatMulInteger zero points
  // need opset 13.
  const int64_t opset = model.opset_version("");
  auto start = Clock::now();
  if (options.simplify_first) {
    SimplifyOptions simplify_options = options.simplify;
    simplify_options.check_n = 0;
    if (opset < 13 && simplify_options.target_opset < 13) simplify_options.target_opset = 13;
    auto simplified = simplify(model, simplify_options);
    if (!simplified) fail("simplify: {}", simplified.error());
    report.simplify = std::move(simplified).value();
  } else if (opset < 13) {
    fail(
        "the model imports ai.onnx opset {}; quantization needs 13 or later (simplify first, "
        "or convert it)",
        opset);
  }
  report.seconds_simplify = seconds_since(start);
  release_weight_pages(graph);

  // Candidates: main-graph nodes of the chosen types, filtered by name.
  std::set<std::string> names_seen;
  std::set<std::string> ops_seen;
  std::vector<Node*> candidates;
  for (Node* node : graph.nodes()) {
    names_seen.insert(node->name());
    if (node->domain().empty()) ops_seen.insert(node->op_type());
    if (!node->domain().empty() || !op_types.count(node->op_type())) continue;
    const std::string label = node_label(*node);
    if (options.nodes_to_exclude.count(node->name())) {
      report.nodes.push_back({label, node->op_type(), "excluded (--nodes-to-exclude)"});
      continue;
    }
    if (!options.nodes_to_quantize.empty() && !options.nodes_to_quantize.count(node->name())) {
      report.nodes.push_back({label, node->op_type(), "not listed in --nodes-to-quantize"});
      continue;
    }
    candidates.push_back(node);
  }
  for (const auto& list : {options.nodes_to_exclude, options.nodes_to_quantize}) {
    for (const std::string& name : list) {
      if (!names_seen.count(name)) {
        report.warnings.push_back(fmt::format("no node named '{}' in the model{}", name,
                                              options.simplify_first ? " (after simplify)" : ""));
      }
    }
  }
  for (const std::string& op : options.op_types) {
    if (!ops_seen.count(op)) report.warnings.push_back(fmt::format("no {} node in the model", op));
  }
  for (Value* value : graph.initializers()) {
    if (value->initializer().dtype() == DType::kFloat) {
      report.float_weight_bytes += value->initializer().nbytes();
    }
  }

  start = Clock::now();
  if (options.mode == QuantizeMode::kDynamic) {
    DynamicQuantizer quantizer(graph, options);
    for (Node* node : candidates) {
      const std::string label = node_label(*node);
      const std::string op = node->op_type();
      std::string why = quantizer.refuse(*node);
      if (!why.empty()) {
        report.nodes.push_back({label, op, "left float: " + why});
        continue;
      }
      quantizer.quantize(node);
      report.nodes.push_back({label, op,
                              op == "Conv"     ? "ConvInteger"
                              : op == "Gather" ? "Gather (uint8 table) + DequantizeLinear"
                                               : "MatMulInteger"});
      ++report.quantized[op];
    }
  } else {
    StaticQuantizer quantizer(graph, options);
    std::vector<std::string> tensors = quantizer.select(candidates, report);
    // Calibration's kernels pack the weights; folded ones (not views of the model file)
    // would stay resident beside their packed copies.
    try {
      quant::map_anonymous_weights(graph, kMappedWeightMinBytes);
    } catch (const Error& e) {
      report.warnings.push_back(
          fmt::format("folded weights stay in memory during calibration: {}", e.what()));
    }
    auto calibrate_start = Clock::now();
    auto ranges = quant::calibrate(model, tensors, options, report.calibration_samples);
    report.seconds_calibrate = seconds_since(calibrate_start);
    release_weight_pages(graph);
    report.calibrated_tensors = ranges.size();
    quantizer.apply(ranges, report);
  }
  if (report.quantized.empty()) {
    report.warnings.push_back("no node was quantized (see the reasons per node)");
  }
  // Float weights nothing reads any more.
  for (Value* value : std::vector<Value*>(graph.initializers())) {
    if (value->uses().empty() && !graph.is_output(value) && !graph.is_input(value)) {
      graph.remove_value(value);
    }
  }
  graph.sort_topologically();
  for (Value* value : graph.initializers()) {
    const DType type = value->initializer().dtype();
    if (type == DType::kInt8 || type == DType::kUInt8 || type == DType::kInt32) {
      report.quantized_weight_bytes += value->initializer().nbytes();
    }
  }
  report.seconds_quantize = seconds_since(start) - report.seconds_calibrate;
  return report;
}

}  // namespace

Result<QuantizeReport> quantize(Model& model, const QuantizeOptions& options) {
  return capture([&] { return quantize_model(model, options); });
}

}  // namespace onnxkit
