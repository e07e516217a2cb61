// Static quantization: QuantizeLinear -> DequantizeLinear pairs on the activations around the
// chosen ops, with ranges from calibration, and quantized weights and int32 biases behind a
// DequantizeLinear (ONNX Runtime's QDQ format); optionally turned into QLinearConv /
// QLinearMatMul where ONNX has an int8 op for the pattern (QOperator format).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnxkit/quantize.h"
#include "quantize/calibration.h"
#include "quantize/quant_params.h"
#include "quantize/rewriter.h"

namespace onnxkit::quant {

// The op types static mode can quantize.
std::vector<std::string> static_op_types();

class StaticQuantizer {
 public:
  StaticQuantizer(Graph& graph, const QuantizeOptions& options);
  // Keeps the candidates that can be quantized (the others go into the report with the
  // reason) and returns the activations whose ranges calibration must find.
  std::vector<std::string> select(const std::vector<Node*>& candidates, QuantizeReport& report);
  // Inserts the Q/DQ pairs and quantized constants (and the QOperator ops).
  void apply(const std::map<std::string, TensorRange>& ranges, QuantizeReport& report);

 private:
  struct Slot {
    size_t input;
    enum class Kind { kActivation, kWeight, kBias, kConstant } kind;
    int64_t axis = -1;  // a weight's channel axis when per channel
  };
  std::vector<Slot> slots(const Node& node) const;
  bool shares_input_params(const Node& node) const;
  void keep_float_joins_that_feed_float_ops(QuantizeReport& report);
  void fold_relus(const std::map<std::string, TensorRange>& ranges, QuantizeReport& report);
  QParams activation_params(const TensorRange& range) const;
  // The Q -> DQ pair on `value` (once per value): its readers then read the DQ output.
  void quantize_activation(Value* value, QParams params);
  Value* dequantized_constant(Value* value, const Tensor& data, const Tensor& scale,
                              const Tensor& zero_point, int64_t axis);
  Value* quantized_constant(Value* value);
  void to_qoperator(QuantizeReport& report);

  Graph& graph_;
  const QuantizeOptions& options_;
  Rewriter rewriter_;
  bool per_channel_;
  std::vector<Node*> selected_;
  std::map<std::string, QParams> params_;           // activations quantized so far
  std::map<const Node*, std::string> folded_into_;  // Relu nodes removed -> producer
};

}  // namespace onnxkit::quant
