// Op family: the classic ai.onnx.ml ops sklearn-onnx exports (tree ensembles, linear models,
// SVMs, Scaler, Normalizer, Imputer, encoders, FeatureVectorizer). ZipMap, DictVectorizer and
// CastMap are not here: they take or give maps, which a RuntimeValue cannot hold.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>
#include "ops/ml_trees.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// ---- The classic ai.onnx.ml ops (sklearn-onnx's exports) ----

// The elements of a numeric tensor as doubles: the classic ops take int32 and int64
// features as well as float and double.
std::vector<double> numeric_doubles(const Tensor& x, std::string_view what) {
  std::vector<double> out(static_cast<size_t>(x.numel()));
  dispatch_numeric(x.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = convert_element<double>(px[i]);
  });
  return out;
}

// X read as [N, C] rows: a 1-D X is one row.
struct FeatureRows {
  int64_t rows = 0;
  int64_t columns = 0;
};

FeatureRows feature_rows(const KernelContext& context, const Tensor& x) {
  if (x.rank() == 1) return {1, x.shape()[0]};
  if (x.rank() != 2) {
    context.fail("X must be [N, C] or [C], got shape {}", shape_to_string(x.shape()));
  }
  return {x.shape()[0], x.shape()[1]};
}

// The [N] of a rule's X of rank 1 or 2 (1 for rank 1); nullopt when the rank is unknown or
// other.
std::optional<Dim> rule_rows(const TypeInferenceContext& context) {
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) return std::nullopt;
  if (dims->size() == 1) return Dim::known(1);
  if (dims->size() == 2) return (*dims)[0];
  return std::nullopt;
}

// The post_transform attribute of the classic ops, a string.
PostTransform classic_post_transform_of(const KernelCreateContext& context) {
  const std::string name = context.attr_string("post_transform", "NONE");
  if (name == "NONE") return PostTransform::kNone;
  if (name == "SOFTMAX") return PostTransform::kSoftmax;
  if (name == "LOGISTIC") return PostTransform::kLogistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::kSoftmaxZero;
  if (name == "PROBIT") return PostTransform::kProbit;
  context.fail("post_transform {} is not NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT", name);
}

// The classic ops' probit uses Winitzki's approximation of erfinv (a = 0.147), as ONNX
// Runtime and the reference do; the exact inverse differs from it in the third decimal.
double classic_probit(double value) {
  const double y = 2.0 * value - 1.0;
  const double sign = y < 0 ? -1.0 : 1.0;
  const double w = (1.0 - y) * (1.0 + y);
  if (w == 0.0) return 0.0;
  const double log_w = std::log(w);
  const double v = 2.0 / (std::numbers::pi * 0.147) + 0.5 * log_w;
  const double v2 = log_w / 0.147;
  return std::numbers::sqrt2 * sign * std::sqrt(-v + std::sqrt(v * v - v2));
}

// One row of scores through the classic post_transform. Softmax-zero keeps near-zero scores
// at zero (out of the sum) and gives 0.5 everywhere when every score is zero.
void classic_post_transform(PostTransform transform, double* scores, size_t n) {
  switch (transform) {
    case PostTransform::kNone:
      return;
    case PostTransform::kLogistic:
      for (size_t i = 0; i < n; ++i) scores[i] = 1.0 / (1.0 + std::exp(-scores[i]));
      return;
    case PostTransform::kProbit:
      for (size_t i = 0; i < n; ++i) scores[i] = classic_probit(scores[i]);
      return;
    case PostTransform::kSoftmax: {
      const double high = *std::max_element(scores, scores + n);
      double sum = 0.0;
      for (size_t i = 0; i < n; ++i) sum += scores[i] = std::exp(scores[i] - high);
      for (size_t i = 0; i < n; ++i) scores[i] /= sum;
      return;
    }
    case PostTransform::kSoftmaxZero: {
      const double high = *std::max_element(scores, scores + n);
      double sum = 0.0;
      for (size_t i = 0; i < n; ++i) {
        scores[i] =
            std::abs(scores[i]) > 1e-7 ? std::exp(scores[i] - high) : scores[i] * std::exp(-high);
        sum += scores[i];
      }
      for (size_t i = 0; i < n; ++i) scores[i] = sum == 0.0 ? 0.5 : scores[i] / sum;
      return;
    }
  }
}

// The first index of the largest score.
size_t argmax(const double* scores, size_t n) {
  return static_cast<size_t>(std::max_element(scores, scores + n) - scores);
}

// A list of floats given as <name> (floats) or, from TreeEnsemble*-3, <name>_as_tensor
// (double precision); empty when neither is present.
std::vector<double> float_list(const KernelCreateContext& context, const std::string& name) {
  const Tensor* t = context.attr_tensor(name + "_as_tensor");
  if (t && context.has_attribute(name)) {
    context.fail("{0} and {0}_as_tensor are both given", name);
  }
  if (t) {
    std::vector<double> out(static_cast<size_t>(t->numel()));
    dispatch_float(t->dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < out.size(); ++i) out[i] = convert_element<double>(t->data<T>()[i]);
    });
    return out;
  }
  const std::vector<float> values = context.attr_floats(name);
  return {values.begin(), values.end()};
}

// The class labels: classlabels_<ints_name> or classlabels_strings, exactly one of them.
struct ClassLabels {
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  bool is_string = false;
  size_t size() const { return is_string ? strings.size() : ints.size(); }
};

ClassLabels class_labels(const KernelCreateContext& context, const std::string& ints_name) {
  ClassLabels labels;
  labels.ints = context.attr_ints(ints_name);
  labels.strings = context.attr_strings("classlabels_strings");
  if (labels.ints.empty() == labels.strings.empty()) {
    context.fail("needs exactly one of {} and classlabels_strings", ints_name);
  }
  labels.is_string = !labels.strings.empty();
  return labels;
}

// Output 0 of a classifier: the labels of `chosen` (an index into the labels, or -1 for
// the "no class" label: 0 or "").
void write_labels(KernelContext& context, const ClassLabels& labels,
                  const std::vector<int64_t>& chosen) {
  const Shape shape{static_cast<int64_t>(chosen.size())};
  if (labels.is_string) {
    std::vector<std::string> out;
    for (int64_t c : chosen) out.push_back(c < 0 ? "" : labels.strings[static_cast<size_t>(c)]);
    context.allocate_output(0, DType::kString, shape).mutable_strings() = std::move(out);
    return;
  }
  int64_t* out = context.allocate_output(0, DType::kInt64, shape).mutable_data<int64_t>();
  for (size_t i = 0; i < chosen.size(); ++i) {
    out[i] = chosen[i] < 0 ? 0 : labels.ints[static_cast<size_t>(chosen[i])];
  }
}

// Output 0 of a classifier rule: [N] labels, int64 or string by the attribute given.
void set_label_output(TypeInferenceContext& context, const std::optional<Dim>& rows) {
  const DType dtype =
      context.node().find_attribute("classlabels_strings") ? DType::kString : DType::kInt64;
  context.set_output(
      0, tensor_type(dtype, rows ? SymbolicShape(std::vector<Dim>{*rows}) : SymbolicShape()));
}

SymbolicShape rows_by(const std::optional<Dim>& rows, Dim columns) {
  if (!rows) return std::nullopt;
  return std::vector<Dim>{*rows, columns};
}

// The length of a list attribute of the rule's node (0 when absent).
size_t attribute_length(const TypeInferenceContext& context, std::string_view name) {
  const Attribute* a = context.node().find_attribute(name);
  if (!a) return 0;
  return std::max({a->ints.size(), a->floats.size(), a->strings.size()});
}

// ---- TreeEnsembleRegressor / TreeEnsembleClassifier (1, 3) ----

// The trees of the classic tree ensembles: nodes named by (tree id, node id) in attribute
// lists, each leaf carrying (output column, weight) pairs from the target_* or class_*
// lists. Version 3 also takes the double-precision *_as_tensor lists.
class ClassicTrees {
 public:
  ClassicTrees(const KernelCreateContext& context, const std::string& weights) {
    const std::vector<int64_t> tree_ids = context.attr_ints("nodes_treeids");
    const std::vector<int64_t> node_ids = context.attr_ints("nodes_nodeids");
    features_ = context.attr_ints("nodes_featureids");
    values_ = float_list(context, "nodes_values");
    const std::vector<std::string> modes = context.attr_strings("nodes_modes");
    const std::vector<int64_t> true_ids = context.attr_ints("nodes_truenodeids");
    const std::vector<int64_t> false_ids = context.attr_ints("nodes_falsenodeids");
    missing_true_ = context.attr_ints("nodes_missing_value_tracks_true");
    const size_t n = tree_ids.size();
    if (n == 0) context.fail("nodes_treeids is empty");
    for (size_t size : {node_ids.size(), features_.size(), values_.size(), modes.size(),
                        true_ids.size(), false_ids.size()}) {
      if (size != n) context.fail("the nodes_* attributes differ in length");
    }
    if (!missing_true_.empty() && missing_true_.size() != n) {
      context.fail("nodes_missing_value_tracks_true has {} entries for {} nodes",
                   missing_true_.size(), n);
    }
    std::map<std::pair<int64_t, int64_t>, size_t> index;
    std::map<int64_t, size_t> roots;  // tree id -> its first node, by tree id
    for (size_t i = 0; i < n; ++i) {
      if (!index.emplace(std::pair{tree_ids[i], node_ids[i]}, i).second) {
        context.fail("node ({}, {}) is given twice", tree_ids[i], node_ids[i]);
      }
      roots.emplace(tree_ids[i], i);
      if (features_[i] < 0) context.fail("node {} reads feature {}", i, features_[i]);
      modes_.push_back(mode_of(context, modes[i]));
    }
    for (const auto& [tree, root] : roots) roots_.push_back(root);
    auto child = [&](size_t i, int64_t id) {
      const auto found = index.find({tree_ids[i], id});
      if (found == index.end()) context.fail("tree {} has no node {}", tree_ids[i], id);
      return found->second;
    };
    true_.resize(n);
    false_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (modes_[i] == kLeaf) continue;
      true_[i] = child(i, true_ids[i]);
      false_[i] = child(i, false_ids[i]);
    }
    const std::vector<int64_t> weight_trees = context.attr_ints(weights + "_treeids");
    const std::vector<int64_t> weight_nodes = context.attr_ints(weights + "_nodeids");
    const std::vector<int64_t> weight_ids = context.attr_ints(weights + "_ids");
    const std::vector<double> weight_values = float_list(context, weights + "_weights");
    const size_t w = weight_trees.size();
    if (weight_nodes.size() != w || weight_ids.size() != w || weight_values.size() != w) {
      context.fail("the {}_* attributes differ in length", weights);
    }
    leaf_weights_.resize(n);
    for (size_t i = 0; i < w; ++i) {
      const auto found = index.find({weight_trees[i], weight_nodes[i]});
      if (found == index.end()) {
        context.fail("{} weight {} is on node ({}, {}), which is not in the trees", weights, i,
                     weight_trees[i], weight_nodes[i]);
      }
      if (weight_ids[i] < 0) context.fail("{}_ids has {}", weights, weight_ids[i]);
      leaf_weights_[found->second].emplace_back(weight_ids[i], weight_values[i]);
      max_id_ = std::max(max_id_, weight_ids[i]);
    }
    base_values_ = float_list(context, "base_values");
  }

  size_t trees() const { return roots_.size(); }
  bool weights_positive() const {
    for (const auto& leaf : leaf_weights_) {
      for (const auto& entry : leaf) {
        if (entry.second < 0) return false;
      }
    }
    return true;
  }
  const std::vector<double>& base_values() const { return base_values_; }
  int64_t max_id() const { return max_id_; }
  std::vector<int64_t> ids() const {
    std::vector<int64_t> out;
    for (const auto& leaf : leaf_weights_) {
      for (const auto& entry : leaf) out.push_back(entry.first);
    }
    return out;
  }

  void check_features(const KernelContext& context, int64_t columns) const {
    for (int64_t f : features_) {
      if (f >= columns) context.fail("a node reads feature {}, X has {}", f, columns);
    }
  }

  // The (column, weight) pairs of the leaf the row reaches in tree `tree`.
  const std::vector<std::pair<int64_t, double>>& leaf(const KernelContext& context, size_t tree,
                                                      const double* row) const {
    size_t node = roots_[tree];
    for (size_t steps = 0; modes_[node] != kLeaf; ++steps) {
      if (steps > modes_.size()) context.fail("tree {} has a cycle", tree);
      node = goes_true(node, row) ? true_[node] : false_[node];
    }
    return leaf_weights_[node];
  }

 private:
  static constexpr int kLeaf = -1;

  static int mode_of(const KernelCreateContext& context, const std::string& mode) {
    static const std::pair<const char*, TreeMode> kModes[] = {
        {"BRANCH_LEQ", TreeMode::kLeq}, {"BRANCH_LT", TreeMode::kLt},
        {"BRANCH_GTE", TreeMode::kGte}, {"BRANCH_GT", TreeMode::kGt},
        {"BRANCH_EQ", TreeMode::kEq},   {"BRANCH_NEQ", TreeMode::kNeq}};
    if (mode == "LEAF") return kLeaf;
    for (const auto& [name, value] : kModes) {
      if (mode == name) return static_cast<int>(value);
    }
    context.fail("nodes_modes has {}", mode);
  }

  // A missing (NaN) feature goes where nodes_missing_value_tracks_true says, whatever the
  // mode.
  bool goes_true(size_t node, const double* row) const {
    const double v = row[features_[node]];
    if (std::isnan(v)) return !missing_true_.empty() && missing_true_[node] != 0;
    return split_holds(static_cast<TreeMode>(modes_[node]), v, values_[node]);
  }

  std::vector<int64_t> features_;
  std::vector<double> values_;
  std::vector<int> modes_;  // a TreeMode, or kLeaf
  std::vector<size_t> true_, false_;
  std::vector<int64_t> missing_true_;
  std::vector<size_t> roots_;  // by tree id
  std::vector<std::vector<std::pair<int64_t, double>>> leaf_weights_;
  std::vector<double> base_values_;
  int64_t max_id_ = -1;
};

class TreeEnsembleRegressorKernel : public OpKernel {
 public:
  explicit TreeEnsembleRegressorKernel(const KernelCreateContext& context)
      : trees_(context, "target"),
        n_targets_(context.attr_int("n_targets")),
        post_transform_(classic_post_transform_of(context)) {
    if (trees_.max_id() >= n_targets_) {
      context.fail("target id {} is out of range for n_targets {}", trees_.max_id(), n_targets_);
    }
    if (!trees_.base_values().empty() &&
        trees_.base_values().size() != static_cast<size_t>(n_targets_)) {
      context.fail("base_values has {} values for {} targets", trees_.base_values().size(),
                   n_targets_);
    }
    const std::string aggregate = context.attr_string("aggregate_function", "SUM");
    if (aggregate == "SUM") {
      aggregate_ = Aggregate::kSum;
    } else if (aggregate == "AVERAGE") {
      aggregate_ = Aggregate::kAverage;
    } else if (aggregate == "MIN") {
      aggregate_ = Aggregate::kMin;
    } else if (aggregate == "MAX") {
      aggregate_ = Aggregate::kMax;
    } else {
      context.fail("aggregate_function {} is not SUM, AVERAGE, MIN or MAX", aggregate);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows shape = feature_rows(context, x);
    trees_.check_features(context, shape.columns);
    const std::vector<double> features = numeric_doubles(x, "X");
    const auto targets = static_cast<size_t>(n_targets_);
    std::vector<double> scores(static_cast<size_t>(shape.rows) * targets);
    std::vector<bool> scored(targets);
    for (int64_t r = 0; r < shape.rows; ++r) {
      const double* row = features.data() + r * shape.columns;
      double* out = scores.data() + r * targets;
      std::fill(scored.begin(), scored.end(), false);
      for (size_t t = 0; t < trees_.trees(); ++t) {
        for (const auto& [target, weight] : trees_.leaf(context, t, row)) {
          double& score = out[target];
          if (aggregate_ == Aggregate::kMin) {
            score = scored[target] ? std::min(score, weight) : weight;
          } else if (aggregate_ == Aggregate::kMax) {
            score = scored[target] ? std::max(score, weight) : weight;
          } else {
            score += weight;
          }
          scored[target] = true;
        }
      }
      // A target no leaf reached under MIN or MAX is 0 (then its base value), as in ONNX
      // Runtime.
      for (size_t j = 0; j < targets; ++j) {
        if (aggregate_ == Aggregate::kAverage) out[j] /= static_cast<double>(trees_.trees());
        if (!trees_.base_values().empty()) out[j] += trees_.base_values()[j];
      }
      classic_post_transform(post_transform_, out, targets);
    }
    write_doubles(context, 0, DType::kFloat, {shape.rows, n_targets_}, scores);
  }

 private:
  ClassicTrees trees_;
  int64_t n_targets_;
  PostTransform post_transform_;
  Aggregate aggregate_ = Aggregate::kSum;
};

// Y: [N, n_targets] float.
void infer_tree_ensemble_regressor(TypeInferenceContext& context) {
  const Attribute* targets = context.node().find_attribute("n_targets");
  context.set_output(
      0, tensor_type(DType::kFloat,
                     rows_by(rule_rows(context), targets ? Dim::known(targets->i) : Dim{})));
}

// Scores start from base_values and add the class weights of the leaves reached. With one
// class id among the weights (a binary model, or one class label) score column 1 is the
// model's and column 0 its complement, before the post_transform: 1 - s for NONE and PROBIT
// when no class weight is negative, else -s (as ONNX Runtime does; the reference takes 1 - s
// for NONE and PROBIT whatever the weights). The label is the class of the largest score; with the
// one class label 1, the labels are 1 and 0.
class TreeEnsembleClassifierKernel : public OpKernel {
 public:
  explicit TreeEnsembleClassifierKernel(const KernelCreateContext& context)
      : trees_(context, "class"),
        labels_(class_labels(context, "classlabels_int64s")),
        post_transform_(classic_post_transform_of(context)) {
    const size_t classes = labels_.size();
    std::vector<int64_t> ids = trees_.ids();
    std::ranges::sort(ids);
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    binary_ = classes <= 2 && ids.size() == 1;
    if (binary_) binary_id_ = static_cast<size_t>(ids[0]);
    weights_positive_ = trees_.weights_positive();
    columns_ = binary_ ? 2 : classes;
    if (classes == 1 && (labels_.is_string || labels_.ints[0] != 1)) {
      context.fail("a single class label must be the int64 1");
    }
    if (trees_.max_id() >= static_cast<int64_t>(classes)) {
      context.fail("class id {} is out of range for {} class labels", trees_.max_id(), classes);
    }
    const size_t bases = trees_.base_values().size();
    if (bases != 0 && bases != classes) {
      context.fail("base_values has {} values for {} classes", bases, classes);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows shape = feature_rows(context, x);
    trees_.check_features(context, shape.columns);
    const std::vector<double> features = numeric_doubles(x, "X");
    const std::vector<double>& bases = trees_.base_values();
    std::vector<double> scores(static_cast<size_t>(shape.rows) * columns_);
    std::vector<int64_t> chosen(static_cast<size_t>(shape.rows));
    for (int64_t r = 0; r < shape.rows; ++r) {
      const double* row = features.data() + r * shape.columns;
      double* out = scores.data() + r * columns_;
      std::copy(bases.begin(), bases.end(), out);
      for (size_t t = 0; t < trees_.trees(); ++t) {
        for (const auto& [id, weight] : trees_.leaf(context, t, row)) out[id] += weight;
      }
      if (binary_) {
        const double model = out[binary_id_];
        const bool complement = weights_positive_ && (post_transform_ == PostTransform::kNone ||
                                                      post_transform_ == PostTransform::kProbit);
        out[1] = model;
        out[0] = complement ? 1.0 - model : -model;
      }
      classic_post_transform(post_transform_, out, columns_);
      const size_t best = argmax(out, columns_);
      chosen[static_cast<size_t>(r)] =
          labels_.size() == 1 ? (best == 1 ? 0 : -1) : static_cast<int64_t>(best);
    }
    write_labels(context, labels_, chosen);
    Tensor& y =
        context.allocate_output(1, DType::kFloat, {shape.rows, static_cast<int64_t>(columns_)});
    float* py = y.mutable_data<float>();
    for (size_t i = 0; i < scores.size(); ++i) py[i] = static_cast<float>(scores[i]);
  }

 private:
  ClassicTrees trees_;
  ClassLabels labels_;
  PostTransform post_transform_;
  bool binary_ = false;
  bool weights_positive_ = true;
  size_t binary_id_ = 0;
  size_t columns_ = 0;
};

// Y: [N] labels; Z: [N, E] float scores, E the class labels (2 for a binary model).
void infer_tree_ensemble_classifier(TypeInferenceContext& context) {
  const std::optional<Dim> rows = rule_rows(context);
  set_label_output(context, rows);
  const size_t classes = std::max(attribute_length(context, "classlabels_int64s"),
                                  attribute_length(context, "classlabels_strings"));
  const Attribute* ids = context.node().find_attribute("class_ids");
  std::vector<int64_t> distinct = ids ? ids->ints : std::vector<int64_t>{};
  std::ranges::sort(distinct);
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const size_t columns = classes <= 2 && distinct.size() == 1 ? 2 : classes;
  context.set_output(
      1, tensor_type(DType::kFloat, rows_by(rows, Dim::known(static_cast<int64_t>(columns)))));
}

// ---- LinearClassifier / LinearRegressor ----

// scores = X coefficientsᵀ + intercepts, coefficients [E, C] row-major; in double.
std::vector<double> linear_scores(const KernelContext& context, const Tensor& x,
                                  const std::vector<float>& coefficients,
                                  const std::vector<float>& intercepts, int64_t outputs,
                                  FeatureRows& shape) {
  shape = feature_rows(context, x);
  if (static_cast<int64_t>(coefficients.size()) != outputs * shape.columns) {
    context.fail("{} coefficients for {} outputs of {} features", coefficients.size(), outputs,
                 shape.columns);
  }
  if (!intercepts.empty() && static_cast<int64_t>(intercepts.size()) != outputs) {
    context.fail("{} intercepts for {} outputs", intercepts.size(), outputs);
  }
  const std::vector<double> features = numeric_doubles(x, "X");
  std::vector<double> scores(static_cast<size_t>(shape.rows * outputs));
  for (int64_t r = 0; r < shape.rows; ++r) {
    for (int64_t e = 0; e < outputs; ++e) {
      double sum = intercepts.empty() ? 0.0 : intercepts[static_cast<size_t>(e)];
      for (int64_t c = 0; c < shape.columns; ++c) {
        sum += features[r * shape.columns + c] * coefficients[e * shape.columns + c];
      }
      scores[r * outputs + e] = sum;
    }
  }
  return scores;
}

// The scores have one column per coefficient row. One row for two class labels is a binary
// model: its scores become [-s, s]. With one column the label is the first class label
// where the score reaches the threshold (0 without post_transform, else 0.5), else 0 / "".
class LinearClassifierKernel : public OpKernel {
 public:
  explicit LinearClassifierKernel(const KernelCreateContext& context)
      : labels_(class_labels(context, "classlabels_ints")),
        coefficients_(context.attr_floats("coefficients")),
        intercepts_(context.attr_floats("intercepts")),
        post_transform_(classic_post_transform_of(context)) {
    if (coefficients_.empty()) context.fail("coefficients is empty");
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows given = feature_rows(context, x);
    if (given.columns == 0 || coefficients_.size() % static_cast<size_t>(given.columns) != 0) {
      context.fail("{} coefficients do not divide into rows of {} features", coefficients_.size(),
                   given.columns);
    }
    const auto outputs = static_cast<int64_t>(coefficients_.size()) / given.columns;
    FeatureRows shape;
    std::vector<double> scores =
        linear_scores(context, x, coefficients_, intercepts_, outputs, shape);
    int64_t columns = outputs;
    if (outputs == 1 && labels_.size() == 2) {
      std::vector<double> both(static_cast<size_t>(shape.rows) * 2);
      for (int64_t r = 0; r < shape.rows; ++r) {
        both[r * 2] = -scores[r];
        both[r * 2 + 1] = scores[r];
      }
      scores = std::move(both);
      columns = 2;
    }
    if (columns > 1 && static_cast<size_t>(columns) > labels_.size()) {
      context.fail("{} score columns for {} class labels", columns, labels_.size());
    }
    std::vector<int64_t> chosen(static_cast<size_t>(shape.rows));
    const double threshold = post_transform_ == PostTransform::kNone ? 0.0 : 0.5;
    for (int64_t r = 0; r < shape.rows; ++r) {
      double* row = scores.data() + r * columns;
      classic_post_transform(post_transform_, row, static_cast<size_t>(columns));
      chosen[static_cast<size_t>(r)] =
          columns > 1 ? static_cast<int64_t>(argmax(row, static_cast<size_t>(columns)))
                      : (row[0] >= threshold ? 0 : -1);
    }
    write_labels(context, labels_, chosen);
    write_doubles(context, 1, DType::kFloat, {shape.rows, columns}, scores);
  }

 private:
  ClassLabels labels_;
  std::vector<float> coefficients_;
  std::vector<float> intercepts_;
  PostTransform post_transform_;
};

// Y: [N] labels; Z: [N, E] float, E the coefficient rows (2 for a binary model).
void infer_linear_classifier(TypeInferenceContext& context) {
  const std::optional<Dim> rows = rule_rows(context);
  set_label_output(context, rows);
  const std::vector<Dim>* dims = input_dims(context, 0);
  Dim columns;
  const size_t coefficients = attribute_length(context, "coefficients");
  if (dims && !dims->empty() && dims->back().is_known() && dims->back().value > 0) {
    auto outputs = static_cast<int64_t>(coefficients) / dims->back().value;
    const size_t classes = std::max(attribute_length(context, "classlabels_ints"),
                                    attribute_length(context, "classlabels_strings"));
    if (outputs == 1 && classes == 2) outputs = 2;
    columns = Dim::known(outputs);
  }
  context.set_output(1, tensor_type(DType::kFloat, rows_by(rows, columns)));
}

class LinearRegressorKernel : public OpKernel {
 public:
  explicit LinearRegressorKernel(const KernelCreateContext& context)
      : coefficients_(context.attr_floats("coefficients")),
        intercepts_(context.attr_floats("intercepts")),
        targets_(context.attr_int("targets", 1)),
        post_transform_(classic_post_transform_of(context)) {
    if (targets_ < 1) context.fail("targets is {}", targets_);
  }

  void compute(KernelContext& context) const override {
    FeatureRows shape;
    std::vector<double> scores =
        linear_scores(context, context.input(0), coefficients_, intercepts_, targets_, shape);
    for (int64_t r = 0; r < shape.rows; ++r) {
      classic_post_transform(post_transform_, scores.data() + r * targets_,
                             static_cast<size_t>(targets_));
    }
    write_doubles(context, 0, DType::kFloat, {shape.rows, targets_}, scores);
  }

 private:
  std::vector<float> coefficients_;
  std::vector<float> intercepts_;
  int64_t targets_;
  PostTransform post_transform_;
};

// Y: [N, targets] float.
void infer_linear_regressor(TypeInferenceContext& context) {
  const Attribute* targets = context.node().find_attribute("targets");
  context.set_output(0, tensor_type(DType::kFloat, rows_by(rule_rows(context),
                                                           Dim::known(targets ? targets->i : 1))));
}

// ---- Scaler, Normalizer, Imputer ----

// A per-column list (one value for every column, or one per column of the last axis).
double per_column(const std::vector<float>& values, int64_t column) {
  return values.size() == 1 ? values[0] : values[static_cast<size_t>(column)];
}

void check_per_column(const KernelContext& context, size_t size, int64_t columns,
                      std::string_view name) {
  if (size != 1 && static_cast<int64_t>(size) != columns) {
    context.fail("{} has {} values for {} columns (needs 1 or {})", name, size, columns, columns);
  }
}

// Y = (X - offset) * scale, float, offset and scale per column of the last axis.
class ScalerKernel : public OpKernel {
 public:
  explicit ScalerKernel(const KernelCreateContext& context)
      : offset_(context.attr_floats("offset", {0.0f})),
        scale_(context.attr_floats("scale", {1.0f})) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const int64_t columns = x.rank() == 0 ? 1 : x.shape().back();
    check_per_column(context, offset_.size(), columns, "offset");
    check_per_column(context, scale_.size(), columns, "scale");
    std::vector<double> values = numeric_doubles(x, "X");
    for (size_t i = 0; i < values.size(); ++i) {
      const auto c = static_cast<int64_t>(i) % columns;
      values[i] = (values[i] - per_column(offset_, c)) * per_column(scale_, c);
    }
    write_doubles(context, 0, DType::kFloat, x.shape(), values);
  }

 private:
  std::vector<float> offset_;
  std::vector<float> scale_;
};

// Y: X's shape, float.
void infer_float_like_input(TypeInferenceContext& context) {
  const ValueType* x = context.input_type(0);
  context.set_output(0, tensor_type(DType::kFloat, x && x->is_tensor() ? x->shape : std::nullopt));
}

// Each row divided by its max (not of |x|: the spec and ONNX Runtime; the reference takes
// max |x|), sum |x| or L2 norm, unless that is 0; a 1-D X is one row.
class NormalizerKernel : public OpKernel {
 public:
  explicit NormalizerKernel(const KernelCreateContext& context)
      : norm_(context.attr_string("norm", "MAX")) {
    if (norm_ != "MAX" && norm_ != "L1" && norm_ != "L2") {
      context.fail("norm {} is not MAX, L1 or L2", norm_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows shape = feature_rows(context, x);
    std::vector<double> values = numeric_doubles(x, "X");
    for (int64_t r = 0; r < shape.rows; ++r) {
      double* row = values.data() + r * shape.columns;
      double norm = 0.0;
      for (int64_t c = 0; c < shape.columns; ++c) {
        if (norm_ == "MAX") {
          norm = c == 0 ? row[c] : std::max(norm, row[c]);
        } else {
          norm += norm_ == "L1" ? std::abs(row[c]) : row[c] * row[c];
        }
      }
      if (norm_ == "L2") norm = std::sqrt(norm);
      if (norm == 0.0) continue;
      for (int64_t c = 0; c < shape.columns; ++c) row[c] /= norm;
    }
    write_doubles(context, 0, DType::kFloat, x.shape(), values);
  }

 private:
  std::string norm_;
};

// Elements equal to the replaced value (NaN: every NaN) take their column's imputed value.
// Float inputs use imputed_value_floats / replaced_value_float, integer inputs the int64s.
class ImputerKernel : public OpKernel {
 public:
  explicit ImputerKernel(const KernelCreateContext& context)
      : floats_(context.attr_floats("imputed_value_floats")),
        ints_(context.attr_ints("imputed_value_int64s")),
        replaced_float_(context.attr_float("replaced_value_float", 0.0f)),
        replaced_int_(context.attr_int("replaced_value_int64", 0)) {
    if (floats_.empty() == ints_.empty()) {
      context.fail("needs exactly one of imputed_value_floats and imputed_value_int64s");
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows shape = feature_rows(context, x);
    const bool is_float = dtype_is_float(x.dtype());
    if (is_float == floats_.empty()) {
      context.fail("X of type {} needs imputed_value_{}", dtype_name(x.dtype()),
                   is_float ? "floats" : "int64s");
    }
    const size_t size = is_float ? floats_.size() : ints_.size();
    check_per_column(context, size, shape.columns, "the imputed values");
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Imputer", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = i % shape.columns;
        const auto k = size == 1 ? 0 : static_cast<size_t>(c);
        if (is_float) {
          const double v = convert_element<double>(px[i]);
          const bool hit = std::isnan(replaced_float_) ? std::isnan(v)
                                                       : v == static_cast<double>(replaced_float_);
          py[i] = hit ? convert_element<T>(floats_[k]) : px[i];
        } else {
          const bool hit = convert_element<int64_t>(px[i]) == replaced_int_;
          py[i] = hit ? convert_element<T>(ints_[k]) : px[i];
        }
      }
    });
  }

 private:
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  float replaced_float_;
  int64_t replaced_int_;
};

// ---- OneHotEncoder, CategoryMapper, LabelEncoder (1) ----

// Y: X's shape + [categories], float; a 1 where the element is the category. Numbers match
// int64 categories by value (floats truncated, as ONNX Runtime does); with zeros = 0 an
// element in no category is an error.
class OneHotEncoderKernel : public OpKernel {
 public:
  explicit OneHotEncoderKernel(const KernelCreateContext& context)
      : ints_(context.attr_ints("cats_int64s")),
        strings_(context.attr_strings("cats_strings")),
        zeros_(context.attr_int("zeros", 1) != 0) {
    if (ints_.empty() == strings_.empty()) {
      context.fail("needs exactly one of cats_int64s and cats_strings");
    }
    for (size_t i = 0; i < ints_.size(); ++i) int_index_.emplace(ints_[i], i);
    for (size_t i = 0; i < strings_.size(); ++i) string_index_.emplace(strings_[i], i);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const bool is_string = x.dtype() == DType::kString;
    if (is_string == strings_.empty()) {
      context.fail("X of type {} needs cats_{}", dtype_name(x.dtype()),
                   is_string ? "strings" : "int64s");
    }
    const size_t categories = is_string ? strings_.size() : ints_.size();
    Shape shape = x.shape();
    shape.push_back(static_cast<int64_t>(categories));
    float* py = context.allocate_output(0, DType::kFloat, shape).mutable_data<float>();
    std::vector<double> numbers;
    if (!is_string) numbers = numeric_doubles(x, "X");
    for (int64_t i = 0; i < x.numel(); ++i) {
      size_t found = categories;
      if (is_string) {
        const auto it = string_index_.find(x.strings()[static_cast<size_t>(i)]);
        if (it != string_index_.end()) found = it->second;
      } else {
        const auto it = int_index_.find(static_cast<int64_t>(numbers[static_cast<size_t>(i)]));
        if (it != int_index_.end()) found = it->second;
      }
      if (found == categories) {
        if (!zeros_) context.fail("element {} of X is in no category (zeros is 0)", i);
        continue;
      }
      py[i * static_cast<int64_t>(categories) + static_cast<int64_t>(found)] = 1.0f;
    }
  }

 private:
  std::vector<int64_t> ints_;
  std::vector<std::string> strings_;
  bool zeros_;
  std::unordered_map<int64_t, size_t> int_index_;
  std::unordered_map<std::string, size_t> string_index_;
};

void infer_one_hot_encoder(TypeInferenceContext& context) {
  const std::vector<Dim>* dims = input_dims(context, 0);
  SymbolicShape shape;
  if (dims) {
    shape = *dims;
    shape->push_back(Dim::known(static_cast<int64_t>(std::max(
        attribute_length(context, "cats_int64s"), attribute_length(context, "cats_strings")))));
  }
  context.set_output(0, tensor_type(DType::kFloat, std::move(shape)));
}

// A string <-> int64 map: strings to their int64 (default_int64 when absent), int64s to
// their string (default_string). CategoryMapper pairs cats_strings with cats_int64s;
// LabelEncoder 1 maps classes_strings to their positions.
class StringIntMapKernel : public OpKernel {
 public:
  explicit StringIntMapKernel(const KernelCreateContext& context)
      : default_int_(context.attr_int("default_int64", -1)),
        default_string_(context.attr_string("default_string", "_Unused")) {
    std::vector<std::string> strings;
    std::vector<int64_t> ints;
    if (context.node().op_type() == "CategoryMapper") {
      strings = context.attr_strings("cats_strings");
      ints = context.attr_ints("cats_int64s");
      if (strings.size() != ints.size()) {
        context.fail("{} cats_strings but {} cats_int64s", strings.size(), ints.size());
      }
    } else {
      strings = context.attr_strings("classes_strings");
      for (size_t i = 0; i < strings.size(); ++i) ints.push_back(static_cast<int64_t>(i));
    }
    for (size_t i = 0; i < strings.size(); ++i) {
      to_int_.emplace(strings[i], ints[i]);
      to_string_.emplace(ints[i], strings[i]);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto n = static_cast<size_t>(x.numel());
    if (x.dtype() == DType::kString) {
      int64_t* py = context.allocate_output(0, DType::kInt64, x.shape()).mutable_data<int64_t>();
      for (size_t i = 0; i < n; ++i) {
        const auto it = to_int_.find(x.strings()[i]);
        py[i] = it == to_int_.end() ? default_int_ : it->second;
      }
      return;
    }
    if (x.dtype() != DType::kInt64) {
      context.fail("X must be string or int64, got {}", dtype_name(x.dtype()));
    }
    std::vector<std::string> out(n);
    const int64_t* px = x.data<int64_t>();
    for (size_t i = 0; i < n; ++i) {
      const auto it = to_string_.find(px[i]);
      out[i] = it == to_string_.end() ? default_string_ : it->second;
    }
    context.allocate_output(0, DType::kString, x.shape()).mutable_strings() = std::move(out);
  }

 private:
  int64_t default_int_;
  std::string default_string_;
  std::unordered_map<std::string, int64_t> to_int_;
  std::unordered_map<int64_t, std::string> to_string_;
};

// Y: X's shape; int64 for string X, string for int64 X.
void infer_string_int_map(TypeInferenceContext& context) {
  const ValueType* x = context.input_type(0);
  if (!x || !x->is_tensor() || x->elem_type == DType::kUndefined) return;
  context.set_output(
      0, tensor_type(x->elem_type == DType::kString ? DType::kInt64 : DType::kString, x->shape));
}

// ---- SVMRegressor ----

enum class SvmKernelType { kLinear, kPoly, kRbf, kSigmoid };

// The SVM kernel function with kernel_params (gamma, coef0, degree).
struct SvmKernel {
  SvmKernelType type = SvmKernelType::kLinear;
  double gamma = 0.0;
  double coef0 = 0.0;
  double degree = 0.0;

  explicit SvmKernel(const KernelCreateContext& context) {
    const std::string name = context.attr_string("kernel_type", "LINEAR");
    if (name == "LINEAR") {
      type = SvmKernelType::kLinear;
    } else if (name == "POLY") {
      type = SvmKernelType::kPoly;
    } else if (name == "RBF") {
      type = SvmKernelType::kRbf;
    } else if (name == "SIGMOID") {
      type = SvmKernelType::kSigmoid;
    } else {
      context.fail("kernel_type {} is not LINEAR, POLY, RBF or SIGMOID", name);
    }
    const std::vector<float> params = context.attr_floats("kernel_params");
    if (!params.empty()) {
      if (params.size() != 3) context.fail("kernel_params needs 3 values, got {}", params.size());
      gamma = params[0];
      coef0 = params[1];
      degree = std::trunc(params[2]);
    }
  }

  double operator()(const double* a, const float* b, int64_t n, SvmKernelType kind) const {
    if (kind == SvmKernelType::kRbf) {
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
      return std::exp(-gamma * sum);
    }
    double dot = 0.0;
    for (int64_t i = 0; i < n; ++i) dot += a[i] * b[i];
    if (kind == SvmKernelType::kPoly) return std::pow(dot * gamma + coef0, degree);
    if (kind == SvmKernelType::kSigmoid) return std::tanh(dot * gamma + coef0);
    return dot;
  }
};

// With support vectors: sum_j coefficients[j] K(x, sv_j) + rho; without (n_supports 0) the
// linear model coefficients . x + rho. one_class gives the sign (1 or -1).
class SvmRegressorKernel : public OpKernel {
 public:
  explicit SvmRegressorKernel(const KernelCreateContext& context)
      : kernel_(context),
        coefficients_(context.attr_floats("coefficients")),
        support_vectors_(context.attr_floats("support_vectors")),
        rho_(context.attr_floats("rho")),
        supports_(context.attr_int("n_supports", 0)),
        one_class_(context.attr_int("one_class", 0) != 0),
        post_transform_(classic_post_transform_of(context)) {
    if (rho_.size() != 1) context.fail("rho needs 1 value, got {}", rho_.size());
    if (supports_ < 0) context.fail("n_supports is {}", supports_);
    if (supports_ > 0 && coefficients_.size() != static_cast<size_t>(supports_)) {
      context.fail("{} coefficients for {} support vectors", coefficients_.size(), supports_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows shape = feature_rows(context, x);
    const size_t expected =
        static_cast<size_t>(shape.columns) * static_cast<size_t>(std::max<int64_t>(supports_, 1));
    if ((supports_ > 0 ? support_vectors_.size() : coefficients_.size()) != expected) {
      context.fail("{} has {} values, X has {} features",
                   supports_ > 0 ? "support_vectors" : "coefficients",
                   supports_ > 0 ? support_vectors_.size() : coefficients_.size(), shape.columns);
    }
    const std::vector<double> features = numeric_doubles(x, "X");
    std::vector<double> scores(static_cast<size_t>(shape.rows));
    for (int64_t r = 0; r < shape.rows; ++r) {
      const double* row = features.data() + r * shape.columns;
      double s = 0.0;
      if (supports_ > 0) {
        for (int64_t j = 0; j < supports_; ++j) {
          s += coefficients_[static_cast<size_t>(j)] *
               kernel_(row, support_vectors_.data() + j * shape.columns, shape.columns,
                       kernel_.type);
        }
      } else {
        s = kernel_(row, coefficients_.data(), shape.columns, SvmKernelType::kLinear);
      }
      s += rho_[0];
      if (one_class_) s = s > 0 ? 1.0 : -1.0;
      classic_post_transform(post_transform_, &s, 1);
      scores[static_cast<size_t>(r)] = s;
    }
    write_doubles(context, 0, DType::kFloat, {shape.rows, 1}, scores);
  }

 private:
  SvmKernel kernel_;
  std::vector<float> coefficients_;
  std::vector<float> support_vectors_;
  std::vector<float> rho_;
  int64_t supports_;
  bool one_class_;
  PostTransform post_transform_;
};

// Y: [N, 1] float.
void infer_svm_regressor(TypeInferenceContext& context) {
  context.set_output(0, tensor_type(DType::kFloat, rows_by(rule_rows(context), Dim::known(1))));
}

// ---- SVMClassifier ----

// libsvm's pairwise coupling (Wu, Lin and Weng's second method): the class probabilities
// from the pairwise ones r[i][j] (k x k, row-major).
std::vector<double> multiclass_probability(size_t k, const std::vector<double>& r) {
  std::vector<double> q(k * k), qp(k), p(k, 1.0 / static_cast<double>(k));
  for (size_t t = 0; t < k; ++t) {
    q[t * k + t] = 0.0;
    for (size_t j = 0; j < t; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = q[j * k + t];
    }
    for (size_t j = t + 1; j < k; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  const double eps = 0.005 / static_cast<double>(k);
  for (size_t iteration = 0; iteration < std::max<size_t>(100, k); ++iteration) {
    double pqp = 0.0;
    for (size_t t = 0; t < k; ++t) {
      qp[t] = 0.0;
      for (size_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_error = 0.0;
    for (size_t t = 0; t < k; ++t) max_error = std::max(max_error, std::abs(qp[t] - pqp));
    if (max_error < eps) break;
    for (size_t t = 0; t < k; ++t) {
      const double diff = (-qp[t] + pqp) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / ((1 + diff) * (1 + diff));
      for (size_t j = 0; j < k; ++j) {
        p[j] /= 1 + diff;
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
      }
    }
  }
  return p;
}

// With support vectors (vectors_per_class), one-vs-one: each pair of classes (i, j) scores
// rho[pair] + the coefficients' sums over both classes' vectors, and the class of the most
// votes wins; prob_a / prob_b turn the pair scores into class probabilities (Platt scaling
// then pairwise coupling). Without, one linear score per class (rho[0] + coefficients . x).
// One rho means a binary model: its label and the extra score column follow libsvm /
// ONNX Runtime (see label_of and final_scores), as the reference does.
class SvmClassifierKernel : public OpKernel {
 public:
  explicit SvmClassifierKernel(const KernelCreateContext& context)
      : kernel_(context),
        labels_(class_labels(context, "classlabels_ints")),
        coefficients_(context.attr_floats("coefficients")),
        support_vectors_(context.attr_floats("support_vectors")),
        rho_(context.attr_floats("rho")),
        prob_a_(context.attr_floats("prob_a")),
        prob_b_(context.attr_floats("prob_b")),
        vectors_per_class_(context.attr_ints("vectors_per_class")),
        post_transform_(classic_post_transform_of(context)) {
    classes_ = std::max<size_t>(labels_.size(), 1);
    for (int64_t count : vectors_per_class_) {
      if (count < 0) context.fail("vectors_per_class has {}", count);
      starts_.push_back(vectors_);
      vectors_ += count;
    }
    if (vectors_ > 0 && vectors_per_class_.size() != classes_) {
      context.fail("vectors_per_class has {} entries for {} classes", vectors_per_class_.size(),
                   classes_);
    }
    const size_t pairs = classes_ * (classes_ - 1) / 2;
    if (rho_.empty() || (vectors_ > 0 && rho_.size() < pairs)) {
      context.fail("rho has {} values, needs {}", rho_.size(), vectors_ > 0 ? pairs : 1);
    }
    if (coefficients_.empty()) context.fail("coefficients is empty");
    if (vectors_ > 0 && coefficients_.size() != (classes_ - 1) * static_cast<size_t>(vectors_)) {
      context.fail("{} coefficients for {} classes of {} support vectors", coefficients_.size(),
                   classes_, vectors_);
    }
    probabilities_ = vectors_ > 0 && !prob_a_.empty();
    if (probabilities_ && (prob_a_.size() < pairs || prob_b_.size() < pairs)) {
      context.fail("prob_a and prob_b need {} values, have {} and {}", pairs, prob_a_.size(),
                   prob_b_.size());
    }
    all_positive_ = *std::min_element(coefficients_.begin(), coefficients_.end()) >= 0;
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const FeatureRows shape = feature_rows(context, x);
    const auto features = static_cast<size_t>(shape.columns);
    if (vectors_ > 0 ? support_vectors_.size() != static_cast<size_t>(vectors_) * features
                     : coefficients_.size() != classes_ * features) {
      context.fail("{} has {} values, X has {} features",
                   vectors_ > 0 ? "support_vectors" : "coefficients",
                   vectors_ > 0 ? support_vectors_.size() : coefficients_.size(), features);
    }
    const std::vector<double> values = numeric_doubles(x, "X");
    std::vector<double> all_scores;
    std::vector<int64_t> labels(static_cast<size_t>(shape.rows));
    size_t columns = 0;
    for (int64_t r = 0; r < shape.rows; ++r) {
      const double* row = values.data() + r * shape.columns;
      std::vector<double> votes;
      std::vector<double> scores =
          vectors_ > 0 ? pair_scores(row, features, votes) : linear_scores_of(row, features);
      if (probabilities_) scores = probabilities(scores);
      const std::vector<double>& decider = votes.empty() ? scores : votes;
      const size_t best = argmax(decider.data(), decider.size());
      const double best_weight = decider[best];
      int extra = -1;
      labels[static_cast<size_t>(r)] = label_of(best, best_weight, extra);
      scores = final_scores(std::move(scores), extra);
      columns = scores.size();
      all_scores.insert(all_scores.end(), scores.begin(), scores.end());
    }
    const Shape label_shape{shape.rows};
    if (labels_.is_string) {
      std::vector<std::string> out;
      for (int64_t index : labels) {
        if (static_cast<size_t>(index) >= labels_.size()) {
          context.fail("label {} is out of range for {} class labels", index, labels_.size());
        }
        out.push_back(labels_.strings[static_cast<size_t>(index)]);
      }
      context.allocate_output(0, DType::kString, label_shape).mutable_strings() = std::move(out);
    } else {
      int64_t* out = context.allocate_output(0, DType::kInt64, label_shape).mutable_data<int64_t>();
      std::copy(labels.begin(), labels.end(), out);
    }
    write_doubles(context, 1, DType::kFloat, {shape.rows, static_cast<int64_t>(columns)},
                  all_scores);
  }

 private:
  std::vector<double> linear_scores_of(const double* row, size_t features) const {
    std::vector<double> scores(classes_);
    for (size_t j = 0; j < classes_; ++j) {
      scores[j] = rho_[0] + kernel_(row, coefficients_.data() + j * features,
                                    static_cast<int64_t>(features), SvmKernelType::kLinear);
    }
    return scores;
  }

  std::vector<double> pair_scores(const double* row, size_t features,
                                  std::vector<double>& votes) const {
    const auto n = static_cast<size_t>(vectors_);
    std::vector<double> kernels(n);
    for (size_t j = 0; j < n; ++j) {
      kernels[j] = kernel_(row, support_vectors_.data() + j * features,
                           static_cast<int64_t>(features), kernel_.type);
    }
    votes.assign(classes_, 0.0);
    std::vector<double> scores;
    // Row c of the coefficients, from support vector `start`, `count` of them, . kernels.
    auto dot = [&](size_t c, int64_t start, int64_t count) {
      double sum = 0.0;
      for (int64_t v = start; v < start + count; ++v) {
        sum += coefficients_[c * n + static_cast<size_t>(v)] * kernels[static_cast<size_t>(v)];
      }
      return sum;
    };
    for (size_t i = 0; i < classes_; ++i) {
      for (size_t j = i + 1; j < classes_; ++j) {
        const double s = rho_[scores.size()] + dot(j - 1, starts_[i], vectors_per_class_[i]) +
                         dot(i, starts_[j], vectors_per_class_[j]);
        scores.push_back(s);
        votes[s > 0 ? i : j] += 1;
      }
    }
    return scores;
  }

  std::vector<double> probabilities(const std::vector<double>& pair_scores) const {
    std::vector<double> pairs(classes_ * classes_);
    size_t index = 0;
    for (size_t i = 0; i < classes_; ++i) {
      for (size_t j = i + 1; j < classes_; ++j, ++index) {
        const double platt =
            1.0 - 1.0 / (1.0 + std::exp(-(pair_scores[index] * prob_a_[index] + prob_b_[index])));
        const double clamped = std::clamp(platt, 1e-7, 1.0 - 1e-7);
        pairs[i * classes_ + j] = clamped;
        pairs[j * classes_ + i] = 1.0 - clamped;
      }
    }
    return multiclass_probability(classes_, pairs);
  }

  // The label (an int64 label's value, or a string label's index); sets `extra` to 2 for a
  // binary model (one rho, two labels), whose one score gains a second column.
  int64_t label_of(size_t best, double weight, int& extra) const {
    const auto index = static_cast<int64_t>(best);
    if (rho_.size() == 1) {
      if (labels_.size() == 2) {
        extra = 2;
        int64_t chosen = index;
        if (!probabilities_ && all_positive_ && weight >= 0.5) chosen = 1;
        return labels_.is_string ? chosen : labels_.ints[static_cast<size_t>(chosen)];
      }
      return weight > 0 ? 1 : 0;
    }
    return labels_.is_string ? index : labels_.ints[best];
  }

  std::vector<double> final_scores(std::vector<double> scores, int extra) const {
    if (scores.size() >= 2) {
      classic_post_transform(post_transform_, scores.data(), scores.size());
      return scores;
    }
    const double s = scores[0];
    if (post_transform_ == PostTransform::kProbit) return {classic_probit(s)};
    if (extra != 2) return scores;
    std::vector<double> both{-s, s};
    classic_post_transform(post_transform_, both.data(), 2);
    return both;
  }

  SvmKernel kernel_;
  ClassLabels labels_;
  std::vector<float> coefficients_;
  std::vector<float> support_vectors_;
  std::vector<float> rho_;
  std::vector<float> prob_a_;
  std::vector<float> prob_b_;
  std::vector<int64_t> vectors_per_class_;
  std::vector<int64_t> starts_;
  int64_t vectors_ = 0;
  size_t classes_ = 1;
  bool probabilities_ = false;
  bool all_positive_ = false;
  PostTransform post_transform_;
};

// Y: [N] labels; Z: [N, E] float, E the classes (probabilities or linear scores), the class
// pairs (one-vs-one scores), 2 for one score of a binary model.
void infer_svm_classifier(TypeInferenceContext& context) {
  const std::optional<Dim> rows = rule_rows(context);
  set_label_output(context, rows);
  const size_t labels = std::max(attribute_length(context, "classlabels_ints"),
                                 attribute_length(context, "classlabels_strings"));
  const size_t classes = std::max<size_t>(labels, 1);
  const Attribute* per_class = context.node().find_attribute("vectors_per_class");
  int64_t vectors = 0;
  if (per_class) {
    for (int64_t v : per_class->ints) vectors += v;
  }
  size_t columns = classes;
  if (vectors > 0 && attribute_length(context, "prob_a") == 0) {
    columns = classes * (classes - 1) / 2;
  }
  const Attribute* post = context.node().find_attribute("post_transform");
  if (columns == 1 && !(post && post->s == "PROBIT") && attribute_length(context, "rho") == 1 &&
      labels == 2) {
    columns = 2;
  }
  context.set_output(
      1, tensor_type(DType::kFloat, rows_by(rows, Dim::known(static_cast<int64_t>(columns)))));
}

// ---- FeatureVectorizer ----

// Each input read as [N_i, C_i] (1-D: [1, C], per the spec), cut or zero-padded to
// inputdimensions[i] columns, concatenated into float [N, sum of inputdimensions]; N is the
// most rows of any input, and an input's missing rows are zeros (as ONNX Runtime does).
class FeatureVectorizerKernel : public OpKernel {
 public:
  explicit FeatureVectorizerKernel(const KernelCreateContext& context)
      : dimensions_(context.attr_ints("inputdimensions")) {
    for (int64_t d : dimensions_) {
      if (d < 0) context.fail("inputdimensions has {}", d);
    }
  }

  void compute(KernelContext& context) const override {
    if (context.num_inputs() != dimensions_.size()) {
      context.fail("{} inputs for {} inputdimensions", context.num_inputs(), dimensions_.size());
    }
    int64_t rows = 0;
    int64_t width = 0;
    for (size_t i = 0; i < dimensions_.size(); ++i) {
      const Tensor& x = context.input(i);
      if (x.rank() != 1 && x.rank() != 2) {
        context.fail("input {} must have rank 1 or 2, got shape {}", i, shape_to_string(x.shape()));
      }
      rows = std::max(rows, x.rank() == 1 ? 1 : x.shape()[0]);
      width += dimensions_[i];
    }
    std::vector<double> out(static_cast<size_t>(rows * width));
    int64_t offset = 0;
    for (size_t i = 0; i < dimensions_.size(); ++i) {
      const FeatureRows shape = feature_rows(context, context.input(i));
      const std::vector<double> values = numeric_doubles(context.input(i), "input");
      const int64_t kept = std::min(shape.columns, dimensions_[i]);
      for (int64_t r = 0; r < shape.rows; ++r) {
        for (int64_t c = 0; c < kept; ++c) {
          out[r * width + offset + c] = values[r * shape.columns + c];
        }
      }
      offset += dimensions_[i];
    }
    write_doubles(context, 0, DType::kFloat, {rows, width}, out);
  }

 private:
  std::vector<int64_t> dimensions_;
};

// Y: [N, sum of inputdimensions] float; N known when every input gives the same rows.
void infer_feature_vectorizer(TypeInferenceContext& context) {
  const Attribute* dimensions = context.node().find_attribute("inputdimensions");
  int64_t width = 0;
  if (dimensions) {
    for (int64_t d : dimensions->ints) width += d;
  }
  std::optional<Dim> rows;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    const std::vector<Dim>* dims = input_dims(context, i);
    const Dim here = !dims || dims->empty() || dims->size() > 2 ? Dim{}
                     : dims->size() == 1                        ? Dim::known(1)
                                                                : (*dims)[0];
    rows = !rows || *rows == here ? here : Dim{};
  }
  context.set_output(
      0, tensor_type(DType::kFloat, rows_by(rows, dimensions ? Dim::known(width) : Dim{})));
}

}  // namespace

void register_ml_classic_ops(OpRegistry& registry) {
  const std::string domain = kMlDomain;
  // Version 3 of the classic tree ensembles added the *_as_tensor (double) lists, which
  // ClassicTrees reads.
  for (int64_t since : {1, 3}) {
    registry.add(domain, "TreeEnsembleRegressor", since,
                 OpDefinition(kernel_factory<TreeEnsembleRegressorKernel>())
                     .with_types(infer_tree_ensemble_regressor));
    registry.add(domain, "TreeEnsembleClassifier", since,
                 OpDefinition(kernel_factory<TreeEnsembleClassifierKernel>())
                     .with_types(infer_tree_ensemble_classifier));
  }
  registry.add(
      domain, "LinearClassifier", 1,
      OpDefinition(kernel_factory<LinearClassifierKernel>()).with_types(infer_linear_classifier));
  registry.add(
      domain, "LinearRegressor", 1,
      OpDefinition(kernel_factory<LinearRegressorKernel>()).with_types(infer_linear_regressor));
  registry.add(domain, "Scaler", 1,
               OpDefinition(kernel_factory<ScalerKernel>()).with_types(infer_float_like_input));
  registry.add(domain, "Normalizer", 1,
               OpDefinition(kernel_factory<NormalizerKernel>()).with_types(infer_float_like_input));
  registry.add(domain, "Imputer", 1,
               OpDefinition(kernel_factory<ImputerKernel>()).with_types(infer_same_as_input));
  registry.add(
      domain, "OneHotEncoder", 1,
      OpDefinition(kernel_factory<OneHotEncoderKernel>()).with_types(infer_one_hot_encoder));
  registry.add(domain, "CategoryMapper", 1,
               OpDefinition(kernel_factory<StringIntMapKernel>(), kElementwiseOp)
                   .with_types(infer_string_int_map));
  registry.add(domain, "LabelEncoder", 1,
               OpDefinition(kernel_factory<StringIntMapKernel>(), kElementwiseOp)
                   .with_types(infer_string_int_map));
  registry.add(domain, "SVMRegressor", 1,
               OpDefinition(kernel_factory<SvmRegressorKernel>()).with_types(infer_svm_regressor));
  registry.add(
      domain, "SVMClassifier", 1,
      OpDefinition(kernel_factory<SvmClassifierKernel>()).with_types(infer_svm_classifier));
  registry.add(
      domain, "FeatureVectorizer", 1,
      OpDefinition(kernel_factory<FeatureVectorizerKernel>()).with_types(infer_feature_vectorizer));
}

}  // namespace onnxkit
