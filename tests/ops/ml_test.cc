// Unit tests of the ai.onnx.ml family (ArrayFeatureExtractor, Binarizer, LabelEncoder,
// TreeEnsemble).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

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

}  // namespace
}  // namespace onnxkit
