// Unit tests of the ai.onnx.ml family (ArrayFeatureExtractor, Binarizer, LabelEncoder,
// TreeEnsemble).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/registry.h"
#include "ops/type_inference.h"
#include "registry/builtin_registry.h"

namespace onnxkit {
namespace {

using namespace onnxkit::testing;

// Runs one ai.onnx.ml node, the domain imported at `ml_opset`.
Tensor run_ml(const std::string& op, std::vector<Tensor> inputs, int64_t ml_opset,
              const SetAttributes& attrs = {}) {
  NodeCase c(op, std::move(inputs), 21, attrs);
  c.domain = "ai.onnx.ml";
  Model model = make_model(c);
  for (auto& [domain, version] : model.opset_imports) {
    if (domain == c.domain) version = ml_opset;
  }
  return tensors_of(run_model(std::move(model), feeds_of(c)))[0];
}

void set_tensor(Node* node, const std::string& name, Tensor value) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kTensor;
  a.t = std::move(value);
  node->set_attribute(std::move(a));
}

TEST(ArrayFeatureExtractor, PicksColumns) {
  Tensor x = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = run_ml("ArrayFeatureExtractor", {x, int64s({2}, {2, 0})}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{3, 1, 6, 4}));
  Tensor v = run_ml("ArrayFeatureExtractor", {floats({3}, {7, 8, 9}), int64s({1}, {1})}, 1);
  EXPECT_EQ(v.shape(), (Shape{1, 1}));
  expect_error(
      [&] {
        run_ml("ArrayFeatureExtractor", {x, int64s({1}, {3})}, 1);
      },
      "index 3 is out of range");
}

TEST(Binarizer, ComparesWithThreshold) {
  Tensor y = run_ml("Binarizer", {floats({3}, {0.5f, 1.0f, 1.5f})}, 1,
                    [](Node* n) { set_float(n, "threshold", 1.0f); });
  EXPECT_EQ(values_of<float>(y), (std::vector<float>{0, 0, 1}));
}

TEST(LabelEncoder, ListsAndTensors) {
  Tensor x = Tensor::from_strings({4}, {"a", "c", "z", "b"});
  Tensor y = run_ml("LabelEncoder", {x}, 2, [](Node* n) {
    set_strings(n, "keys_strings", {"a", "b", "c"});
    set_ints(n, "values_int64s", {0, 1, 2});
  });
  EXPECT_EQ(values_of<int64_t>(y), (std::vector<int64_t>{0, 2, -1, 1}));  // default -1
  Tensor t = run_ml("LabelEncoder", {x}, 4, [](Node* n) {
    set_tensor(n, "keys_tensor", Tensor::from_strings({3}, {"a", "b", "c"}));
    set_tensor(n, "values_tensor", Tensor::from_vector<int16_t>(DType::kInt16, {3}, {5, 6, 7}));
    set_tensor(n, "default_tensor", Tensor::from_vector<int16_t>(DType::kInt16, {1}, {42}));
  });
  EXPECT_EQ(values_of<int16_t>(t), (std::vector<int16_t>{5, 7, 42, 6}));
  // Float keys: NaN is one key.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor f = run_ml("LabelEncoder", {floats({2}, {nan, 2.0f})}, 2, [](Node* n) {
    set_floats(n, "keys_floats", {std::numeric_limits<float>::quiet_NaN(), 1.0f});
    set_strings(n, "values_strings", {"nan", "one"});
  });
  EXPECT_EQ(f.strings(), (std::vector<std::string>{"nan", "_Unused"}));
  expect_error(
      [&] {
        run_ml("LabelEncoder", {x}, 2, [](Node* n) {
          set_strings(n, "keys_strings", {"a"});
          set_ints(n, "values_int64s", {0, 1});
        });
      },
      "1 keys but 2 values");
}

// One tree: x0 <= 1 ? leaf 0 : (x0 in {2, 3} ? leaf 1 : leaf 2), two targets.
SetAttributes tree_attributes(int64_t aggregate, int64_t post_transform) {
  return [=](Node* n) {
    set_tensor(n, "nodes_splits", floats({2}, {1.0f, 0.0f}));
    set_ints(n, "nodes_featureids", {0, 0});
    set_tensor(n, "nodes_modes", Tensor::from_vector<uint8_t>(DType::kUInt8, {2}, {0, 6}));
    set_ints(n, "nodes_truenodeids", {0, 1});
    set_ints(n, "nodes_trueleafs", {1, 1});
    set_ints(n, "nodes_falsenodeids", {1, 2});
    set_ints(n, "nodes_falseleafs", {0, 1});
    set_tensor(n, "membership_values",
               floats({3}, {2.0f, 3.0f, std::numeric_limits<float>::quiet_NaN()}));
    set_ints(n, "leaf_targetids", {0, 1, 1});
    set_tensor(n, "leaf_weights", floats({3}, {1.0f, 2.0f, 4.0f}));
    set_ints(n, "tree_roots", {0, 0});  // the same tree twice
    set_int(n, "n_targets", 2);
    set_int(n, "aggregate_function", aggregate);
    set_int(n, "post_transform", post_transform);
  };
}

TEST(TreeEnsemble, BranchesMembershipAndAggregates) {
  Tensor x = floats({3, 1}, {0.5f, 3.0f, 7.0f});
  Tensor sum = run_ml("TreeEnsemble", {x}, 5, tree_attributes(1, 0));
  EXPECT_EQ(sum.shape(), (Shape{3, 2}));
  EXPECT_EQ(values_of<float>(sum), (std::vector<float>{2, 0, 0, 4, 0, 8}));
  Tensor average = run_ml("TreeEnsemble", {x}, 5, tree_attributes(0, 0));
  EXPECT_EQ(values_of<float>(average), (std::vector<float>{1, 0, 0, 2, 0, 4}));
  // Max leaves the targets no leaf reached at the lowest float.
  Tensor max = run_ml("TreeEnsemble", {x}, 5, tree_attributes(3, 0));
  EXPECT_EQ(values_of<float>(max)[0], 1.0f);
  EXPECT_EQ(values_of<float>(max)[1], std::numeric_limits<float>::lowest());
  Tensor logistic = run_ml("TreeEnsemble", {x}, 5, tree_attributes(1, 2));
  EXPECT_NEAR(values_of<float>(logistic)[0], 1.0f / (1.0f + std::exp(-2.0f)), 1e-6f);
  Tensor softmax = run_ml("TreeEnsemble", {x}, 5, tree_attributes(1, 1));
  EXPECT_NEAR(values_of<float>(softmax)[0], 1.0f / (1.0f + std::exp(-2.0f)), 1e-6f);
  expect_error(
      [&] {
        run_ml("TreeEnsemble", {floats({3}, {1, 2, 3})}, 5, tree_attributes(1, 0));
      },
      "X must be [N, F]");
}

// ---- type inference ----

// Backs a rule with the types of the node's graph inputs and records what it sets.
class GraphTypeContext : public TypeInferenceContext {
 public:
  explicit GraphTypeContext(const Node& node) : node_(node) {}
  const Node& node() const override { return node_; }
  int64_t opset() const override { return 5; }
  const ValueType* input_type(size_t i) const override {
    return has_input(i) ? &node_.inputs()[i]->type() : nullptr;
  }
  const Tensor* input_value(size_t) const override { return nullptr; }
  std::vector<ValueType> infer_subgraph(const Graph&, std::span<const ValueType>) override {
    return {};
  }
  void set_output(size_t i, ValueType type) override {
    if (outputs.size() <= i) outputs.resize(i + 1);
    outputs[i] = std::move(type);
  }
  std::vector<ValueType> outputs;

 private:
  const Node& node_;
};

// The output types the op's rule gives for inputs of `input_types`.
std::vector<ValueType> infer_ml(const std::string& op, int64_t version,
                                std::vector<ValueType> input_types, const SetAttributes& attrs) {
  Model model;
  Graph& graph = model.graph();
  std::vector<Value*> inputs;
  for (size_t i = 0; i < input_types.size(); ++i) {
    inputs.push_back(graph.add_input("in" + std::to_string(i), input_types[i]));
  }
  Node* node = graph.add_node(op, inputs, {"out0"}, "ai.onnx.ml", "node0");
  attrs(node);
  const OpRegistration* registration = builtin_registry().find("ai.onnx.ml", op, version);
  EXPECT_NE(registration, nullptr) << op;
  EXPECT_NE(registration->definition.infer_types, nullptr) << op;
  GraphTypeContext context(*node);
  registration->definition.infer_types(context);
  return context.outputs;
}

TEST(MlTypeInference, OutputTypesAndShapes) {
  const std::vector<Dim> batch_by_4{Dim::symbol("N"), Dim::known(4)};
  auto tree = infer_ml("TreeEnsemble", 5, {ValueType::tensor(DType::kDouble, batch_by_4)},
                       tree_attributes(1, 0));
  ASSERT_EQ(tree.size(), 1u);
  EXPECT_EQ(tree[0],
            ValueType::tensor(DType::kDouble, std::vector<Dim>{Dim::symbol("N"), Dim::known(2)}));
  auto label =
      infer_ml("LabelEncoder", 4, {ValueType::tensor(DType::kString, batch_by_4)}, [](Node* n) {
        set_tensor(n, "values_tensor", Tensor::from_vector<int16_t>(DType::kInt16, {1}, {1}));
      });
  EXPECT_EQ(label[0], ValueType::tensor(DType::kInt16, batch_by_4));
  auto columns = infer_ml("ArrayFeatureExtractor", 1,
                          {ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(5)}),
                           ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(3)})},
                          [](Node*) {});
  EXPECT_EQ(columns[0],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(1), Dim::known(3)}));
}

}  // namespace
}  // namespace onnxkit
