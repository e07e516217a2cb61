// Unit tests of the ai.onnx.ml family (ArrayFeatureExtractor, Binarizer, LabelEncoder,
// TreeEnsemble and the classic ops sklearn-onnx exports).
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

// Runs one ai.onnx.ml node with `outputs` outputs, the domain imported at `ml_opset`.
std::vector<Tensor> run_ml_outputs(const std::string& op, std::vector<Tensor> inputs,
                                   int64_t ml_opset, const SetAttributes& attrs, size_t outputs) {
  NodeCase c(op, std::move(inputs), 21, attrs);
  c.domain = "ai.onnx.ml";
  c.outputs.clear();
  for (size_t i = 0; i < outputs; ++i) c.outputs.push_back("out" + std::to_string(i));
  Model model = make_model(c);
  for (auto& [domain, version] : model.opset_imports) {
    if (domain == c.domain) version = ml_opset;
  }
  return tensors_of(run_model(std::move(model), feeds_of(c)));
}

Tensor run_ml(const std::string& op, std::vector<Tensor> inputs, int64_t ml_opset,
              const SetAttributes& attrs = {}) {
  return run_ml_outputs(op, std::move(inputs), ml_opset, attrs, 1)[0];
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

// ---- the classic ops; expected values from onnx 1.23's reference implementation ----

const float kNan = std::numeric_limits<float>::quiet_NaN();

// Tree 0: x0 <= 1.5 ? node 1 : (x1 < 0 ? node 3 : node 4); tree 1: x1 >= 2 (NaN: true) ?
// node 1 : node 2.
void set_classic_trees(Node* n) {
  set_ints(n, "nodes_treeids", {0, 0, 0, 0, 0, 1, 1, 1});
  set_ints(n, "nodes_nodeids", {0, 1, 2, 3, 4, 0, 1, 2});
  set_ints(n, "nodes_featureids", {0, 0, 1, 0, 0, 1, 0, 0});
  set_floats(n, "nodes_values", {1.5f, 0, 0, 0, 0, 2.0f, 0, 0});
  set_strings(n, "nodes_modes",
              {"BRANCH_LEQ", "LEAF", "BRANCH_LT", "LEAF", "LEAF", "BRANCH_GTE", "LEAF", "LEAF"});
  set_ints(n, "nodes_truenodeids", {1, 0, 3, 0, 0, 1, 0, 0});
  set_ints(n, "nodes_falsenodeids", {2, 0, 4, 0, 0, 2, 0, 0});
  set_ints(n, "nodes_missing_value_tracks_true", {0, 0, 0, 0, 0, 1, 0, 0});
}

Tensor classic_tree_input() {
  return floats({3, 2}, {1.0f, 3.0f, 2.0f, -1.0f, 4.0f, kNan});
}

SetAttributes regressor_attributes(const std::string& aggregate, bool base_values) {
  return [=](Node* n) {
    set_classic_trees(n);
    set_ints(n, "target_treeids", {0, 0, 0, 0, 1, 1});
    set_ints(n, "target_nodeids", {1, 3, 4, 4, 1, 2});
    set_ints(n, "target_ids", {0, 0, 0, 1, 1, 0});
    set_floats(n, "target_weights", {1.0f, 2.0f, 3.0f, 0.5f, 10.0f, 20.0f});
    set_int(n, "n_targets", 2);
    set_string(n, "aggregate_function", aggregate);
    if (base_values) set_floats(n, "base_values", {100.0f, 200.0f});
  };
}

TEST(TreeEnsembleRegressor, SumAverageAndMissingValues) {
  Tensor sum =
      run_ml("TreeEnsembleRegressor", {classic_tree_input()}, 1, regressor_attributes("SUM", true));
  EXPECT_EQ(sum.shape(), (Shape{3, 2}));
  expect_floats(sum, {101, 210, 122, 200, 103, 210.5f});
  Tensor average = run_ml("TreeEnsembleRegressor", {classic_tree_input()}, 3,
                          regressor_attributes("AVERAGE", false));
  expect_floats(average, {0.5f, 5, 11, 0, 1.5f, 5.25f});
  // Version 3's double-precision weights.
  Tensor as_tensor = run_ml("TreeEnsembleRegressor", {classic_tree_input()}, 3, [](Node* n) {
    regressor_attributes("SUM", false)(n);
    n->remove_attribute("target_weights");
    set_tensor(n, "target_weights_as_tensor",
               Tensor::from_vector<double>(DType::kDouble, {6}, {1, 2, 3, 0.5, 10, 20}));
  });
  expect_floats(as_tensor, {1, 10, 22, 0, 3, 10.5f});
  expect_error(
      [&] {
        run_ml("TreeEnsembleRegressor", {classic_tree_input()}, 1, [](Node* n) {
          regressor_attributes("SUM", false)(n);
          set_ints(n, "nodes_truenodeids", {1, 0, 7, 0, 0, 1, 0, 0});
        });
      },
      "tree 0 has no node 7");
}

SetAttributes classifier_attributes(const std::string& post_transform) {
  return [=](Node* n) {
    set_classic_trees(n);
    set_ints(n, "class_treeids", {0, 0, 0, 1, 1});
    set_ints(n, "class_nodeids", {1, 3, 4, 1, 2});
    set_ints(n, "class_ids", {0, 1, 2, 2, 1});
    set_floats(n, "class_weights", {0.5f, 0.25f, 1.0f, 0.75f, 0.5f});
    set_ints(n, "classlabels_int64s", {5, 6, 7});
    set_string(n, "post_transform", post_transform);
  };
}

TEST(TreeEnsembleClassifier, MultiClassLabelsAndScores) {
  auto none = run_ml_outputs("TreeEnsembleClassifier", {classic_tree_input()}, 1,
                             classifier_attributes("NONE"), 2);
  EXPECT_EQ(values_of<int64_t>(none[0]), (std::vector<int64_t>{7, 6, 7}));
  expect_floats(none[1], {0.5f, 0, 0.75f, 0, 0.75f, 0, 0, 0, 1.75f});
  auto softmax = run_ml_outputs("TreeEnsembleClassifier", {classic_tree_input()}, 3,
                                classifier_attributes("SOFTMAX"), 2);
  EXPECT_EQ(values_of<int64_t>(softmax[0]), (std::vector<int64_t>{7, 6, 7}));
  expect_floats(softmax[1], {0.34595418f, 0.20983182f, 0.44421399f, 0.24289531f, 0.51420939f,
                             0.24289531f, 0.12895568f, 0.12895568f, 0.74208868f});
}

// One class id among the weights: column 1 is the model's score, column 0 its complement.
SetAttributes binary_classifier_attributes(const std::string& post_transform, bool strings) {
  return [=](Node* n) {
    set_classic_trees(n);
    set_ints(n, "class_treeids", {0, 0, 0, 1, 1});
    set_ints(n, "class_nodeids", {1, 3, 4, 1, 2});
    set_ints(n, "class_ids", {0, 0, 0, 0, 0});
    set_floats(n, "class_weights", {-1.0f, 0.5f, 2.0f, 0.25f, -0.5f});
    if (strings) {
      set_strings(n, "classlabels_strings", {"no", "yes"});
    } else {
      set_ints(n, "classlabels_int64s", {0, 1});
    }
    set_string(n, "post_transform", post_transform);
  };
}

TEST(TreeEnsembleClassifier, BinaryCase) {
  auto logistic = run_ml_outputs("TreeEnsembleClassifier", {classic_tree_input()}, 1,
                                 binary_classifier_attributes("LOGISTIC", true), 2);
  EXPECT_EQ(logistic[0].strings(), (std::vector<std::string>{"no", "no", "yes"}));
  expect_floats(logistic[1], {0.67917871f, 0.32082131f, 0.5f, 0.5f, 0.09534947f, 0.90465051f});
  auto none = run_ml_outputs("TreeEnsembleClassifier", {classic_tree_input()}, 1,
                             binary_classifier_attributes("NONE", false), 2);
  // Negative weights: the complement is -s (ONNX Runtime's values; the reference gives 1 - s).
  EXPECT_EQ(values_of<int64_t>(none[0]), (std::vector<int64_t>{0, 0, 1}));
  expect_floats(none[1], {0.75f, -0.75f, 0, 0, -2.25f, 2.25f});
  // Positive weights and the one class label 1: [1 - s, s], labels 1 and 0.
  auto one_label = run_ml_outputs(
      "TreeEnsembleClassifier", {classic_tree_input()}, 1,
      [](Node* n) {
        binary_classifier_attributes("NONE", false)(n);
        n->remove_attribute("classlabels_int64s");
        set_ints(n, "classlabels_int64s", {1});
        set_floats(n, "class_weights", {0.1f, 0.2f, 0.3f, 0.25f, 0.5f});
      },
      2);
  EXPECT_EQ(values_of<int64_t>(one_label[0]), (std::vector<int64_t>{0, 1, 1}));
  expect_floats(one_label[1], {0.65f, 0.35f, 0.3f, 0.7f, 0.45f, 0.55f});
}

Tensor linear_input() {
  return floats({2, 2}, {1.0f, 2.0f, -1.0f, 0.5f});
}

SetAttributes linear_three_classes(const std::string& post_transform) {
  return [=](Node* n) {
    set_ints(n, "classlabels_ints", {1, 2, 3});
    set_floats(n, "coefficients", {1.0f, 0.0f, 0.5f, -1.0f, -0.5f, 2.0f});
    set_floats(n, "intercepts", {0.0f, 0.5f, -1.0f});
    set_string(n, "post_transform", post_transform);
  };
}

TEST(LinearClassifier, MultiClassAndBinary) {
  auto none =
      run_ml_outputs("LinearClassifier", {linear_input()}, 1, linear_three_classes("NONE"), 2);
  EXPECT_EQ(values_of<int64_t>(none[0]), (std::vector<int64_t>{3, 3}));
  expect_floats(none[1], {1, -1, 2.5f, -1, -0.5f, 0.5f});
  auto softmax =
      run_ml_outputs("LinearClassifier", {linear_input()}, 1, linear_three_classes("SOFTMAX"), 2);
  expect_floats(softmax[1],
                {0.17803019f, 0.02409377f, 0.79787600f, 0.14024438f, 0.23122388f, 0.62853169f});
  // One coefficient row for two classes: scores [-s, s].
  auto binary = run_ml_outputs(
      "LinearClassifier", {linear_input()}, 1,
      [](Node* n) {
        set_strings(n, "classlabels_strings", {"a", "b"});
        set_floats(n, "coefficients", {0.5f, -1.0f});
        set_floats(n, "intercepts", {0.25f});
        set_string(n, "post_transform", "LOGISTIC");
      },
      2);
  EXPECT_EQ(binary[0].strings(), (std::vector<std::string>{"a", "a"}));
  expect_floats(binary[1], {0.77729988f, 0.22270013f, 0.67917871f, 0.32082129f});
  expect_error(
      [&] {
        run_ml_outputs("LinearClassifier", {floats({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}, 1,
                       linear_three_classes("NONE"), 2);
      },
      "6 coefficients do not divide into rows of 4 features");
}

TEST(LinearRegressor, Targets) {
  Tensor y = run_ml("LinearRegressor", {linear_input()}, 1, [](Node* n) {
    set_floats(n, "coefficients", {1.0f, 2.0f, -0.5f, 0.25f});
    set_floats(n, "intercepts", {1.0f, -1.0f});
    set_int(n, "targets", 2);
  });
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_floats(y, {6, -1, 1, -0.375f});
}

TEST(Scaler, OffsetAndScalePerColumn) {
  Tensor y = run_ml("Scaler", {linear_input()}, 1, [](Node* n) {
    set_floats(n, "offset", {1.0f, -1.0f});
    set_floats(n, "scale", {2.0f, 0.5f});
  });
  expect_floats(y, {0, 1.5f, -4, 0.75f});
  Tensor ints =
      run_ml("Scaler", {int64s({2}, {3, 5})}, 1, [](Node* n) { set_floats(n, "scale", {0.5f}); });
  expect_floats(ints, {1.5f, 2.5f});
}

TEST(Normalizer, MaxL1L2) {
  Tensor x = floats({2, 3}, {1, -2, 2, 0, 3, -4});
  auto norm = [&](const std::string& name) {
    return run_ml("Normalizer", {x}, 1, with_string("norm", name));
  };
  // MAX divides by the row's max, not max |x| (the reference's; ONNX Runtime's values here).
  expect_floats(norm("MAX"), {0.5f, -1, 1, 0, 1, -1.33333337f});
  expect_floats(
      run_ml("Normalizer", {floats({2, 2}, {-1, -2, 0, 0})}, 1, with_string("norm", "MAX")),
      {1, 2, 0, 0});
  expect_floats(norm("L1"), {0.2f, -0.4f, 0.4f, 0, 0.42857143f, -0.57142860f});
  expect_floats(norm("L2"), {0.33333334f, -0.66666669f, 0.66666669f, 0, 0.6f, -0.8f});
}

TEST(Imputer, ReplacesPerColumn) {
  Tensor f = run_ml("Imputer", {floats({2, 2}, {1, kNan, kNan, 4})}, 1, [](Node* n) {
    set_floats(n, "imputed_value_floats", {10.0f, 20.0f});
    set_float(n, "replaced_value_float", std::numeric_limits<float>::quiet_NaN());
  });
  expect_floats(f, {1, 20, 10, 4});
  Tensor i = run_ml("Imputer", {int64s({2, 2}, {1, 0, 0, 4})}, 1, [](Node* n) {
    set_ints(n, "imputed_value_int64s", {7});
    set_int(n, "replaced_value_int64", 0);
  });
  EXPECT_EQ(values_of<int64_t>(i), (std::vector<int64_t>{1, 7, 7, 4}));
}

TEST(OneHotEncoder, IntsAndStrings) {
  Tensor y = run_ml("OneHotEncoder", {int64s({2, 2}, {2, 5, 3, 9})}, 1,
                    with_ints("cats_int64s", {2, 3, 5}));
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  expect_floats(y, {1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0});
  Tensor s = run_ml("OneHotEncoder", {Tensor::from_strings({2}, {"b", "a"})}, 1, [](Node* n) {
    set_strings(n, "cats_strings", {"a", "b"});
  });
  expect_floats(s, {0, 1, 1, 0});
  expect_error(
      [&] {
        run_ml("Imputer", {int64s({1, 2}, {1, 0})}, 1,
               [](Node* n) { set_floats(n, "imputed_value_floats", {1.0f}); });
      },
      "X of type int64 needs imputed_value_int64s");
  expect_error(
      [&] {
        run_ml("OneHotEncoder", {int64s({1}, {4})}, 1, [](Node* n) {
          set_ints(n, "cats_int64s", {2, 3});
          set_int(n, "zeros", 0);
        });
      },
      "in no category");
}

TEST(CategoryMapper, BothDirections) {
  auto attrs = [](Node* n) {
    set_strings(n, "cats_strings", {"cat", "dog"});
    set_ints(n, "cats_int64s", {4, 9});
    set_string(n, "default_string", "none");
  };
  Tensor ints =
      run_ml("CategoryMapper", {Tensor::from_strings({3}, {"dog", "eel", "cat"})}, 1, attrs);
  EXPECT_EQ(values_of<int64_t>(ints), (std::vector<int64_t>{9, -1, 4}));
  Tensor strings = run_ml("CategoryMapper", {int64s({3}, {4, 5, 9})}, 1, attrs);
  EXPECT_EQ(strings.strings(), (std::vector<std::string>{"cat", "none", "dog"}));
}

TEST(LabelEncoder, VersionOneMapsPositions) {
  auto classes = [](Node* n) { set_strings(n, "classes_strings", {"a", "b", "c"}); };
  Tensor ints = run_ml("LabelEncoder", {Tensor::from_strings({3}, {"c", "z", "a"})}, 1, classes);
  EXPECT_EQ(values_of<int64_t>(ints), (std::vector<int64_t>{2, -1, 0}));
  Tensor strings = run_ml("LabelEncoder", {int64s({3}, {1, 3, 0})}, 1, classes);
  EXPECT_EQ(strings.strings(), (std::vector<std::string>{"b", "_Unused", "a"}));
}

TEST(SVMRegressor, RbfAndPolyKernels) {
  auto attrs = [](const std::string& kernel, std::vector<float> params) {
    return [=](Node* n) {
      set_floats(n, "coefficients", {0.5f, -1.5f});
      set_floats(n, "support_vectors", {0.0f, 1.0f, 1.0f, -1.0f});
      set_int(n, "n_supports", 2);
      set_string(n, "kernel_type", kernel);
      set_floats(n, "kernel_params", params);
      set_floats(n, "rho", {0.25f});
    };
  };
  Tensor rbf = run_ml("SVMRegressor", {linear_input()}, 1, attrs("RBF", {0.5f, 0.0f, 0.0f}));
  EXPECT_EQ(rbf.shape(), (Shape{2, 1}));
  expect_floats(rbf, {0.41727620f, 0.45172530f});
  Tensor poly = run_ml("SVMRegressor", {linear_input()}, 1, attrs("POLY", {0.5f, 1.0f, 2.0f}));
  expect_floats(poly, {1.875f, 0.9375f});
}

Tensor svm_input() {
  return floats({3, 2}, {1.0f, 2.0f, -1.0f, 0.5f, 0.0f, -2.0f});
}

// Three classes of 2, 2 and 1 support vectors, one-vs-one.
SetAttributes svm_three_classes(const std::string& kernel, std::vector<float> params) {
  return [=](Node* n) {
    set_floats(n, "coefficients",
               {0.5f, -0.25f, 1.0f, 0.75f, -1.0f, -0.5f, 0.25f, 0.5f, -1.5f, 1.0f});
    set_floats(n, "support_vectors", {0, 1, 1, 1, -1, 0, 0.5f, -1, 2, -2});
    set_ints(n, "vectors_per_class", {2, 2, 1});
    set_floats(n, "rho", {0.1f, -0.2f, 0.3f});
    set_string(n, "kernel_type", kernel);
    set_floats(n, "kernel_params", params);
  };
}

TEST(SVMClassifier, OneVsOneVotesAndProbabilities) {
  auto votes = run_ml_outputs(
      "SVMClassifier", {svm_input()}, 1,
      [](Node* n) {
        svm_three_classes("RBF", {0.5f, 0, 0})(n);
        set_ints(n, "classlabels_ints", {10, 20, 30});
      },
      2);
  EXPECT_EQ(values_of<int64_t>(votes[0]), (std::vector<int64_t>{10, 10, 30}));
  expect_floats(votes[1],
                {0.15797544f, -0.23251052f, 0.29465580f, 1.29931879f, -0.43826056f, 0.58363771f,
                 0.58740109f, -0.33920529f, -0.32651430f},
                1e-5f);
  auto probabilities = run_ml_outputs(
      "SVMClassifier", {svm_input()}, 1,
      [](Node* n) {
        svm_three_classes("RBF", {0.5f, 0, 0})(n);
        set_ints(n, "classlabels_ints", {10, 20, 30});
        set_floats(n, "prob_a", {-1.5f, -2.0f, -0.5f});
        set_floats(n, "prob_b", {0.1f, -0.2f, 0.05f});
      },
      2);
  EXPECT_EQ(values_of<int64_t>(probabilities[0]), (std::vector<int64_t>{10, 10, 30}));
  expect_error(
      [&] {
        run_ml_outputs(
            "SVMClassifier", {svm_input()}, 1,
            [](Node* n) {
              svm_three_classes("RBF", {0.5f, 0, 0})(n);
              set_ints(n, "classlabels_ints", {10, 20});
            },
            2);
      },
      "vectors_per_class has 3 entries for 2 classes");
  // onnx 1.23's reference fills each row of Q past the diagonal with one sum in its
  // pairwise coupling; these values come from it with libsvm's (and ONNX Runtime's)
  // Q[t][j] = -r[j][t] r[t][j].
  expect_floats(probabilities[1],
                {0.31773943f, 0.33080637f, 0.35145420f, 0.36607301f, 0.20882660f, 0.42510038f,
                 0.33536974f, 0.23945828f, 0.42517197f},
                1e-5f);
  auto strings = run_ml_outputs(
      "SVMClassifier", {svm_input()}, 1,
      [](Node* n) {
        svm_three_classes("SIGMOID", {0.5f, 0.1f, 0})(n);
        set_strings(n, "classlabels_strings", {"a", "b", "c"});
      },
      2);
  EXPECT_EQ(strings[0].strings(), (std::vector<std::string>{"b", "a", "a"}));
  expect_floats(strings[1],
                {-0.53886902f, 0.34646541f, 0.25123262f, 0.55749691f, 0.47994262f, 0.25309658f,
                 0.62096781f, -0.99137747f, 0.11953735f},
                1e-5f);
}

// Two classes, one rho: the one pair score s gives the scores [-s, s] (then the
// post_transform); a positive s votes for the first class.
TEST(SVMClassifier, BinaryAndLinear) {
  auto binary = [](const std::string& kernel, const std::string& post_transform) {
    return [=](Node* n) {
      set_ints(n, "classlabels_ints", {4, 7});
      set_floats(n, "coefficients", {0.5f, -0.25f, 1.0f});
      set_floats(n, "support_vectors", {0, 1, 1, 1, -1, 0});
      set_ints(n, "vectors_per_class", {2, 1});
      set_floats(n, "rho", {0.2f});
      set_string(n, "kernel_type", kernel);
      set_floats(n, "kernel_params", {0.5f, 1.0f, 2.0f});
      set_string(n, "post_transform", post_transform);
    };
  };
  auto linear = run_ml_outputs("SVMClassifier", {svm_input()}, 1, binary("LINEAR", "NONE"), 2);
  EXPECT_EQ(values_of<int64_t>(linear[0]), (std::vector<int64_t>{7, 4, 7}));
  expect_floats(linear[1], {0.55f, -0.55f, -1.575f, 1.575f, 0.3f, -0.3f}, 1e-5f);
  auto logistic = run_ml_outputs("SVMClassifier", {svm_input()}, 1, binary("POLY", "LOGISTIC"), 2);
  EXPECT_EQ(values_of<int64_t>(logistic[0]), (std::vector<int64_t>{4, 4, 4}));
  expect_floats(logistic[1],
                {0.29162604f, 0.70837396f, 0.04349566f, 0.95650434f, 0.23147517f, 0.76852483f},
                1e-5f);
  // No support vectors: one linear score per class, each with rho[0]; with one rho and
  // not two labels the label is 1 for a positive best score.
  auto per_class = run_ml_outputs(
      "SVMClassifier", {svm_input()}, 1,
      [](Node* n) {
        set_ints(n, "classlabels_ints", {0, 1, 2});
        set_floats(n, "coefficients", {1.0f, -1.0f, 0.5f, 0.5f, -1.0f, 0.25f});
        set_floats(n, "rho", {0.5f});
        set_string(n, "post_transform", "SOFTMAX");
      },
      2);
  EXPECT_EQ(values_of<int64_t>(per_class[0]), (std::vector<int64_t>{1, 1, 1}));
  expect_floats(per_class[1],
                {0.06742536f, 0.82140899f, 0.11116561f, 0.05465999f, 0.19078212f, 0.75455791f,
                 0.88349205f, 0.04398648f, 0.07252146f},
                1e-5f);
}

// A 1-D input is one row [1, C]; rows an input lacks are zeros (ONNX Runtime's values).
TEST(FeatureVectorizer, CutsAndPads) {
  Tensor y =
      run_ml("FeatureVectorizer", {floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({2}, {7.5f, 8.5f})},
             1, with_ints("inputdimensions", {2, 3}));
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  expect_floats(y, {1, 2, 7.5f, 8.5f, 0, 4, 5, 0, 0, 0});
  Tensor ints =
      run_ml("FeatureVectorizer", {int64s({2, 1}, {3, 4})}, 1, with_ints("inputdimensions", {2}));
  expect_floats(ints, {3, 0, 4, 0});
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
  auto classifier =
      infer_ml("TreeEnsembleClassifier", 3, {ValueType::tensor(DType::kFloat, batch_by_4)},
               binary_classifier_attributes("LOGISTIC", true));
  ASSERT_EQ(classifier.size(), 2u);
  EXPECT_EQ(classifier[0], ValueType::tensor(DType::kString, std::vector<Dim>{Dim::symbol("N")}));
  EXPECT_EQ(classifier[1],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("N"), Dim::known(2)}));
  auto regressor =
      infer_ml("TreeEnsembleRegressor", 1, {ValueType::tensor(DType::kInt64, batch_by_4)},
               regressor_attributes("SUM", false));
  EXPECT_EQ(regressor[0],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("N"), Dim::known(2)}));
  auto linear = infer_ml(
      "LinearClassifier", 1,
      {ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("N"), Dim::known(2)})},
      linear_three_classes("NONE"));
  EXPECT_EQ(linear[0], ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::symbol("N")}));
  EXPECT_EQ(linear[1],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("N"), Dim::known(3)}));
  auto one_hot = infer_ml("OneHotEncoder", 1, {ValueType::tensor(DType::kInt64, batch_by_4)},
                          with_ints("cats_int64s", {1, 2, 3}));
  EXPECT_EQ(one_hot[0],
            ValueType::tensor(DType::kFloat,
                              std::vector<Dim>{Dim::symbol("N"), Dim::known(4), Dim::known(3)}));
  auto mapper =
      infer_ml("CategoryMapper", 1, {ValueType::tensor(DType::kString, batch_by_4)}, [](Node*) {});
  EXPECT_EQ(mapper[0], ValueType::tensor(DType::kInt64, batch_by_4));
  auto vectorized = infer_ml("FeatureVectorizer", 1, {ValueType::tensor(DType::kFloat, batch_by_4)},
                             with_ints("inputdimensions", {3}));
  EXPECT_EQ(vectorized[0],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("N"), Dim::known(3)}));
  auto svm =
      infer_ml("SVMClassifier", 1, {ValueType::tensor(DType::kFloat, batch_by_4)}, [](Node* n) {
        svm_three_classes("RBF", {0.5f, 0, 0})(n);
        set_ints(n, "classlabels_ints", {10, 20, 30});
      });
  EXPECT_EQ(svm[1],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::symbol("N"), Dim::known(3)}));
  auto columns = infer_ml("ArrayFeatureExtractor", 1,
                          {ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(5)}),
                           ValueType::tensor(DType::kInt64, std::vector<Dim>{Dim::known(3)})},
                          [](Node*) {});
  EXPECT_EQ(columns[0],
            ValueType::tensor(DType::kFloat, std::vector<Dim>{Dim::known(1), Dim::known(3)}));
}

}  // namespace
}  // namespace onnxkit
