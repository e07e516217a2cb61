// What the dynamic and static quantizers share: reading a node's attributes and
// constants, and adding nodes and initializers with fresh names.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "onnxkit/quantize.h"

namespace onnxkit::quant {

std::string join(const std::vector<std::string>& items);
// The node's name, or its first output's when it has none.
std::string node_label(const Node& node);
int64_t int_attribute(const Node& node, std::string_view name, int64_t fallback);
float float_attribute(const Node& node, std::string_view name, float fallback);
// An initializer of float data that no graph input overrides.
bool is_float_constant(const Graph& graph, const Value* value);
// Unset symmetric_weights: symmetric for int8 weights (ONNX Runtime's WeightSymmetric).
bool weights_symmetric(const QuantizeOptions& options);

class Rewriter {
 public:
  explicit Rewriter(Graph& graph);
  // A new initializer named `prefix` (or prefix_N).
  Value* constant(const std::string& prefix, Tensor tensor);
  // A new one-output node; its output is named after `output_prefix`.
  Node* node(std::string op_type, std::vector<Value*> inputs, const std::string& output_prefix,
             const ValueType& output_type);
  // Makes `to` produce the value that `from` produced as output `index` (names, graph
  // outputs and readers stay); `from` is left with an unused placeholder output.
  void move_output(Node* from, size_t index, Node* to);
  // A node name no node of the graph has: `prefix` or prefix_N.
  std::string node_name(const std::string& prefix);
  Graph& graph() { return graph_; }

 private:
  Graph& graph_;
  std::set<std::string> node_names_;
};

}  // namespace onnxkit::quant
