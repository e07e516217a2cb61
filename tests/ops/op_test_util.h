// Running one op through a Session, for op-family unit tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../attribute_test_util.h"
#include "core/half.h"
#include "onnxkit/session.h"

namespace onnxkit::testing {

// Builds a one-node model (inputs become graph inputs "in0", "in1", ...; a default-
// constructed Tensor is an omitted optional input), runs it and returns every output.
inline std::vector<RuntimeValue> run_op(const std::string& op, std::vector<Tensor> inputs,
                                        int64_t opset, size_t num_outputs = 1,
                                        const std::function<void(Node*)>& set_attributes = {},
                                        const std::string& domain = "") {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", opset}};
  if (!domain.empty()) model.opset_imports.push_back({domain, 1});
  Graph& graph = model.graph();
  std::vector<Value*> node_inputs;
  NamedValues feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      node_inputs.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    node_inputs.push_back(graph.add_input(name, ValueType::tensor(inputs[i].dtype())));
    feeds.emplace_back(name, inputs[i]);
  }
  std::vector<std::string> outputs;
  for (size_t i = 0; i < num_outputs; ++i) outputs.push_back("out" + std::to_string(i));
  Node* node = graph.add_node(op, node_inputs, outputs, domain, "node0");
  if (set_attributes) set_attributes(node);
  for (Value* output : node->outputs()) graph.add_output(output);
  auto session = Session::create(std::move(model), SessionOptions::reference());
  if (!session) throw Error(session.error());
  auto result = session.value()->run(feeds);
  if (!result) throw Error(result.error());
  std::vector<RuntimeValue> values;
  for (auto& [name, value] : result.value()) values.push_back(std::move(value));
  return values;
}

}  // namespace onnxkit::testing
