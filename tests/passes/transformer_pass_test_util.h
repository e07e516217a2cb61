// Building the transformer subgraphs the extended-level fusion tests feed their passes.
#pragma once

#include <string>
#include <vector>

#include "onnx/onnx_checks.h"
#include "ops/fused_ops.h"
#include "pass_test_util.h"

namespace onnxkit::testing {

// A copyable attribute description (Attribute itself is move-only).
struct Attr {
  std::string name;
  AttrType type = AttrType::kUndefined;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;

  static Attr Int(std::string name, int64_t value) {
    return {std::move(name), AttrType::kInt, value, 0, {}, {}};
  }
  static Attr Float(std::string name, float value) {
    return {std::move(name), AttrType::kFloat, 0, value, {}, {}};
  }
  static Attr Ints(std::string name, std::vector<int64_t> values) {
    return {std::move(name), AttrType::kInts, 0, 0, {}, std::move(values)};
  }
  Attribute make() const {
    Attribute a;
    a.name = name;
    a.type = type;
    a.i = i;
    a.f = f;
    a.s = s;
    a.ints = ints;
    return a;
  }
};

// Adds inputs, constants and nodes to a model's main graph with generated names.
class GraphBuilder {
 public:
  explicit GraphBuilder(Model& model) : graph_(model.graph()) {}

  Graph& graph() { return graph_; }
  // A float graph input; -1 dims become the symbol "n".
  Value* input(const std::string& name, std::vector<int64_t> dims, DType dtype = DType::kFloat) {
    ValueType type = float_type(std::move(dims));
    type.elem_type = dtype;
    return graph_.add_input(name, type);
  }
  Value* input(const std::string& name, std::vector<Dim> dims, DType dtype) {
    return graph_.add_input(name, ValueType::tensor(dtype, std::move(dims)));
  }
  Value* constant(const Tensor& value) { return graph_.add_initializer(fresh("c"), value); }
  Value* scalar(float value) {
    return constant(Tensor::from_vector(DType::kFloat, {}, std::vector<float>{value}));
  }
  Value* ints(std::vector<int64_t> values) {
    const auto n = static_cast<int64_t>(values.size());
    return constant(Tensor::from_vector(DType::kInt64, {n}, values));
  }
  Node* node(const std::string& op, std::vector<Value*> inputs, std::vector<Attr> attributes = {},
             size_t outputs = 1, const std::string& domain = "") {
    const std::string base = fresh(op);
    std::vector<std::string> names;
    for (size_t i = 0; i < outputs; ++i) names.push_back(base + "_out" + std::to_string(i));
    Node* n = graph_.add_node(op, std::move(inputs), names, domain, base);
    for (const Attr& a : attributes) n->set_attribute(a.make());
    return n;
  }
  Value* op(const std::string& op, std::vector<Value*> inputs, std::vector<Attr> attributes = {}) {
    return node(op, std::move(inputs), std::move(attributes))->output(0);
  }
  Value* output(Value* value) {
    graph_.add_output(value);
    return value;
  }

 private:
  std::string fresh(const std::string& prefix) { return prefix + "_" + std::to_string(next_++); }
  Graph& graph_;
  int next_ = 0;
};

// Runs ONNX shape inference (the pipeline does before each round) so passes see value types.
inline void infer(Model& model) {
  Status status = infer_shapes(model);
  ASSERT_TRUE(status.ok()) << status.message();
}

inline size_t count_domain_ops(const Model& model, const std::string& op_type) {
  size_t count = 0;
  for (const Node* node : model.graph().nodes()) {
    count += node->op_type() == op_type && node->domain() == kOnnxkitDomain;
  }
  return count;
}

inline const Node* find_op(const Model& model, const std::string& op_type) {
  for (const Node* node : model.graph().nodes()) {
    if (node->op_type() == op_type) return node;
  }
  return nullptr;
}

inline float float_attribute_of(const Node* node, const std::string& name) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->f : std::numeric_limits<float>::quiet_NaN();
}

inline int64_t int_attribute_of(const Node* node, const std::string& name, int64_t fallback) {
  const Attribute* a = node->find_attribute(name);
  return a ? a->i : fallback;
}

}  // namespace onnxkit::testing
