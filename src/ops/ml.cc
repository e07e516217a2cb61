// Op family: the ai.onnx.ml ops the ONNX backend suite runs (ArrayFeatureExtractor,
// Binarizer, LabelEncoder 2/4, TreeEnsemble). The classic ones sklearn-onnx exports are in
// ml_classic.cc.
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

// ---- ArrayFeatureExtractor ----

// Y[..., j] = X[..., indices[j]] over the last axis (indices flattened); a 1-D X gives [1, n]
// (as ONNX Runtime and the reference do).
class ArrayFeatureExtractorKernel : public OpKernel {
 public:
  explicit ArrayFeatureExtractorKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const std::vector<int64_t> indices = read_int64s(context.input(1), "Y");
    if (x.rank() == 0) context.fail("X must have rank >= 1, got a scalar");
    const int64_t columns = x.shape().back();
    for (int64_t index : indices) {
      if (index < 0 || index >= columns) {
        context.fail("index {} is out of range for the last dim of X of size {}", index, columns);
      }
    }
    const auto n = static_cast<int64_t>(indices.size());
    Shape shape = x.shape();
    if (shape.size() == 1) shape.insert(shape.begin(), 1);
    shape.back() = n;
    Tensor& y = context.allocate_output(0, x.dtype(), shape);
    const int64_t rows = columns == 0 ? 0 : x.numel() / columns;
    dispatch_storage(x.dtype(), "ArrayFeatureExtractor", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = tensor_elements<S>(x);
      S* dst = mutable_tensor_elements<S>(y);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j) dst[r * n + j] = src[r * columns + indices[j]];
      }
    });
  }
};

void infer_array_feature_extractor(TypeInferenceContext& context) {
  const ValueType* x = context.input_type(0);
  if (!x || !x->is_tensor()) return;
  SymbolicShape shape;
  const std::vector<Dim>* dims = input_dims(context, 0);
  const std::vector<Dim>* index_dims = input_dims(context, 1);
  if (dims && !dims->empty() && index_dims) {
    shape = *dims;
    if (shape->size() == 1) shape->insert(shape->begin(), Dim::known(1));
    // Unknown where any index dim is (or the product leaves int64).
    const Dim n = dims_product(*index_dims);
    shape->back() = n.is_known() ? n : Dim{};
  }
  context.set_output(0, tensor_type(x->elem_type, std::move(shape)));
}

// ---- Binarizer ----

class BinarizerKernel : public OpKernel {
 public:
  explicit BinarizerKernel(const KernelCreateContext& context)
      : threshold_(context.attr_float("threshold", 0.0f)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_numeric(x.dtype(), "Binarizer", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      // Compared in double: the float threshold against any element type.
      for (int64_t i = 0; i < x.numel(); ++i) {
        py[i] = convert_element<T>(convert_element<double>(px[i]) > threshold_ ? 1 : 0);
      }
    });
  }

 private:
  double threshold_;
};

// ---- LabelEncoder ----

// Keys compare by value within their kind: strings as strings, integers as int64, floats as
// doubles with every NaN one key and -0 equal to +0.
struct LabelKey {
  std::string text;
  int64_t integer = 0;
  uint64_t real_bits = 0;
  bool operator==(const LabelKey&) const = default;
};

struct LabelKeyHash {
  size_t operator()(const LabelKey& key) const {
    return std::hash<std::string>()(key.text) ^ std::hash<int64_t>()(key.integer) ^
           (std::hash<uint64_t>()(key.real_bits) << 1);
  }
};

template <typename T>
LabelKey label_key(const T& value) {
  LabelKey key;
  if constexpr (std::is_same_v<T, std::string>) {
    key.text = value;
  } else if constexpr (std::is_integral_v<T>) {
    key.integer = static_cast<int64_t>(value);
  } else {
    double v = convert_element<double>(value);
    if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
    if (v == 0.0) v = 0.0;
    key.real_bits = std::bit_cast<uint64_t>(v);
  }
  return key;
}

// Opset 2 gives keys and values as typed lists (keys_floats / keys_int64s / keys_strings,
// values_* and default_*); opset 4 also as tensors (keys_tensor, values_tensor,
// default_tensor), which take any type.
class LabelEncoderKernel : public OpKernel {
 public:
  explicit LabelEncoderKernel(const KernelCreateContext& context) {
    const Tensor keys = list_attribute(context, "keys");
    values_ = list_attribute(context, "values");
    if (keys.numel() != values_.numel()) {
      context.fail("{} keys but {} values", keys.numel(), values_.numel());
    }
    key_type_ = keys.dtype();
    dispatch_all(key_type_, "LabelEncoder keys", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* k = tensor_elements<T>(keys);
      for (int64_t i = 0; i < keys.numel(); ++i) index_.emplace(label_key(k[i]), i);
    });
    default_ = default_value(context, values_.dtype());
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.dtype() != key_type_ && !(is_integer_key(key_type_) && is_integer_key(x.dtype()))) {
      context.fail("X has type {}, the keys {}", dtype_name(x.dtype()), dtype_name(key_type_));
    }
    std::vector<int64_t> rows(static_cast<size_t>(x.numel()));  // -1: not a key
    dispatch_all(x.dtype(), "LabelEncoder X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = tensor_elements<T>(x);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const auto found = index_.find(label_key(px[i]));
        rows[static_cast<size_t>(i)] = found == index_.end() ? -1 : found->second;
      }
    });
    Tensor& y = context.allocate_output(0, values_.dtype(), x.shape());
    dispatch_storage(values_.dtype(), "LabelEncoder values", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* values = tensor_elements<S>(values_);
      const S& fallback = tensor_elements<S>(default_)[0];
      S* out = mutable_tensor_elements<S>(y);
      for (size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] < 0 ? fallback : values[rows[i]];
    });
  }

 private:
  static bool is_integer_key(DType dtype) { return dtype_is_integer(dtype); }

  // The keys or values: <prefix>_tensor, or one of the typed lists; fails unless exactly one.
  static Tensor list_attribute(const KernelCreateContext& context, const std::string& prefix) {
    std::vector<Tensor> found;
    if (const Tensor* t = context.attr_tensor(prefix + "_tensor")) found.push_back(*t);
    if (context.has_attribute(prefix + "_floats")) {
      std::vector<float> v = context.attr_floats(prefix + "_floats");
      const auto n = static_cast<int64_t>(v.size());
      found.push_back(Tensor::from_vector<float>(DType::kFloat, {n}, v));
    }
    if (context.has_attribute(prefix + "_int64s")) {
      std::vector<int64_t> v = context.attr_ints(prefix + "_int64s");
      const auto n = static_cast<int64_t>(v.size());
      found.push_back(Tensor::from_vector<int64_t>(DType::kInt64, {n}, v));
    }
    if (context.has_attribute(prefix + "_strings")) {
      std::vector<std::string> v = context.attr_strings(prefix + "_strings");
      const auto n = static_cast<int64_t>(v.size());
      found.push_back(Tensor::from_strings({n}, std::move(v)));
    }
    if (found.size() != 1) {
      context.fail(
          "needs exactly one of {0}_tensor, {0}_floats, {0}_int64s and {0}_strings, got {1}",
          prefix, found.size());
    }
    return std::move(found[0]);
  }

  // default_tensor, else the typed default of the values' type (the schema's defaults: -1,
  // -0.0 and "_Unused").
  static Tensor default_value(const KernelCreateContext& context, DType dtype) {
    if (const Tensor* t = context.attr_tensor("default_tensor")) {
      if (t->dtype() != dtype || t->numel() != 1) {
        context.fail("default_tensor must hold one {} value, got {} of shape {}", dtype_name(dtype),
                     dtype_name(t->dtype()), shape_to_string(t->shape()));
      }
      return *t;
    }
    if (dtype == DType::kString) {
      return Tensor::from_strings({1}, {context.attr_string("default_string", "_Unused")});
    }
    if (dtype == DType::kInt64 && !context.attr_tensor("values_tensor")) {
      return Tensor::from_vector<int64_t>(DType::kInt64, {1},
                                          {context.attr_int("default_int64", -1)});
    }
    if (dtype == DType::kFloat && !context.attr_tensor("values_tensor")) {
      return Tensor::from_vector<float>(DType::kFloat, {1},
                                        {context.attr_float("default_float", -0.0f)});
    }
    // values_tensor without default_tensor: the schema's default for its kind of type.
    Tensor fallback(dtype, {1});
    dispatch_numeric(dtype, "LabelEncoder values_tensor", [&](auto tag) {
      using T = typename decltype(tag)::type;
      fallback.mutable_data<T>()[0] = convert_element<T>(dtype_is_float(dtype) ? -0.0 : -1.0);
    });
    return fallback;
  }

  DType key_type_ = DType::kUndefined;
  std::unordered_map<LabelKey, int64_t, LabelKeyHash> index_;
  Tensor values_;
  Tensor default_;
};

// Y has X's shape and the values' type.
void infer_label_encoder(TypeInferenceContext& context) {
  const Node& node = context.node();
  DType dtype = DType::kUndefined;
  if (const Attribute* t = node.find_attribute("values_tensor")) {
    dtype = t->t.dtype();
  } else if (node.find_attribute("values_floats")) {
    dtype = DType::kFloat;
  } else if (node.find_attribute("values_int64s")) {
    dtype = DType::kInt64;
  } else if (node.find_attribute("values_strings")) {
    dtype = DType::kString;
  }
  const ValueType* x = context.input_type(0);
  if (dtype == DType::kUndefined) return;
  context.set_output(0, tensor_type(dtype, x && x->is_tensor() ? x->shape : std::nullopt));
}

// ---- TreeEnsemble (opset 5) ----

// The inverse error function: Giles' single-precision approximation refined by two Newton
// steps on erf.
double erfinv(double y) {
  if (y <= -1.0) return -std::numeric_limits<double>::infinity();
  if (y >= 1.0) return std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941}) {
      p = c + p * w;
    }
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682}) {
      p = c + p * w;
    }
    x = p * y;
  }
  for (int step = 0; step < 2; ++step) {
    x -= (std::erf(x) - y) / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  }
  return x;
}

class TreeEnsembleKernel : public OpKernel {
 public:
  explicit TreeEnsembleKernel(const KernelCreateContext& context) {
    splits_ = doubles_of(context, "nodes_splits", true);
    feature_ids_ = context.attr_ints("nodes_featureids");
    const Tensor* modes = context.attr_tensor("nodes_modes");
    if (!modes || modes->dtype() != DType::kUInt8)
      context.fail("nodes_modes must be a uint8 tensor");
    true_ids_ = context.attr_ints("nodes_truenodeids");
    false_ids_ = context.attr_ints("nodes_falsenodeids");
    true_leafs_ = context.attr_ints("nodes_trueleafs");
    false_leafs_ = context.attr_ints("nodes_falseleafs");
    leaf_targets_ = context.attr_ints("leaf_targetids");
    leaf_weights_ = doubles_of(context, "leaf_weights", true);
    roots_ = context.attr_ints("tree_roots");
    n_targets_ = context.attr_int("n_targets");
    const size_t nodes = splits_.size();
    for (const auto* list : {&feature_ids_, &true_ids_, &false_ids_, &true_leafs_, &false_leafs_}) {
      if (list->size() != nodes) context.fail("the nodes_* attributes differ in length");
    }
    if (static_cast<size_t>(modes->numel()) != nodes) {
      context.fail("nodes_modes has {} entries for {} nodes", modes->numel(), nodes);
    }
    if (leaf_targets_.size() != leaf_weights_.size()) {
      context.fail("leaf_targetids and leaf_weights differ in length");
    }
    for (int64_t i = 0; i < modes->numel(); ++i) {
      const uint8_t mode = modes->data<uint8_t>()[i];
      if (mode > static_cast<uint8_t>(TreeMode::kMember))
        context.fail("nodes_modes has mode {}", mode);
      modes_.push_back(static_cast<TreeMode>(mode));
    }
    missing_tracks_true_ = context.attr_ints("nodes_missing_value_tracks_true");
    if (!missing_tracks_true_.empty() && missing_tracks_true_.size() != nodes) {
      context.fail("nodes_missing_value_tracks_true has {} entries for {} nodes",
                   missing_tracks_true_.size(), nodes);
    }
    // Set-membership nodes take their members from membership_values in the order of the
    // nodes, each set ended by a NaN.
    members_.resize(nodes);
    const std::vector<double> members = doubles_of(context, "membership_values", false);
    size_t next = 0;
    for (size_t i = 0; i < nodes; ++i) {
      if (modes_[i] != TreeMode::kMember) continue;
      if (next >= members.size()) context.fail("membership_values has no set for node {}", i);
      while (next < members.size() && !std::isnan(members[next]))
        members_[i].push_back(members[next++]);
      ++next;  // the NaN
    }
    for (size_t i = 0; i < nodes; ++i) {
      check_child(context, true_ids_[i], true_leafs_[i] != 0);
      check_child(context, false_ids_[i], false_leafs_[i] != 0);
      if (feature_ids_[i] < 0) context.fail("node {} reads feature {}", i, feature_ids_[i]);
    }
    for (int64_t root : roots_) {
      if (root < 0 || static_cast<size_t>(root) >= std::max(nodes, leaf_weights_.size())) {
        context.fail("tree root {} is out of range", root);
      }
    }
    for (int64_t target : leaf_targets_) {
      if (target < 0 || target >= n_targets_) {
        context.fail("leaf target {} is out of range for n_targets {}", target, n_targets_);
      }
    }
    const int64_t aggregate = context.attr_int("aggregate_function", 1);
    if (aggregate < 0 || aggregate > 3) context.fail("aggregate_function {} is not 0-3", aggregate);
    aggregate_ = static_cast<Aggregate>(aggregate);
    const int64_t post = context.attr_int("post_transform", 0);
    if (post < 0 || post > 4) context.fail("post_transform {} is not 0-4", post);
    post_transform_ = static_cast<PostTransform>(post);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() != 2) context.fail("X must be [N, F], got shape {}", shape_to_string(x.shape()));
    const int64_t rows = x.shape()[0];
    const int64_t features = x.shape()[1];
    for (int64_t f : feature_ids_) {
      if (f >= features) context.fail("a node reads feature {}, X has {}", f, features);
    }
    const std::vector<double> values = read_doubles(context, x, "X");
    std::vector<double> scores(static_cast<size_t>(rows * n_targets_));
    // Min and max start from the largest finite value of X's type, as the reference does.
    const double largest = x.dtype() == DType::kDouble ? std::numeric_limits<double>::max()
                                                       : std::numeric_limits<float>::max();
    std::fill(scores.begin(), scores.end(),
              aggregate_ == Aggregate::kMin   ? largest
              : aggregate_ == Aggregate::kMax ? -largest
                                              : 0.0);
    const auto trees = static_cast<double>(roots_.size());
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = values.data() + r * features;
      double* out = scores.data() + r * n_targets_;
      for (int64_t root : roots_) {
        const int64_t leaf = find_leaf(context, root, row);
        double& score = out[leaf_targets_[static_cast<size_t>(leaf)]];
        const double weight = leaf_weights_[static_cast<size_t>(leaf)];
        switch (aggregate_) {
          case Aggregate::kSum:
            score += weight;
            break;
          case Aggregate::kAverage:
            score += weight / trees;
            break;
          case Aggregate::kMin:
            score = std::min(score, weight);
            break;
          case Aggregate::kMax:
            score = std::max(score, weight);
            break;
        }
      }
      post_transform(out);
    }
    write_doubles(context, 0, x.dtype(), {rows, n_targets_}, scores);
  }

 private:
  // A floating-point tensor attribute as doubles (empty when absent and not `required`).
  static std::vector<double> doubles_of(const KernelCreateContext& context, const char* name,
                                        bool required) {
    const Tensor* t = context.attr_tensor(name);
    if (!t) {
      if (required) context.fail("attribute {} is required", name);
      return {};
    }
    std::vector<double> out(static_cast<size_t>(t->numel()));
    dispatch_float(t->dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < out.size(); ++i) out[i] = convert_element<double>(t->data<T>()[i]);
    });
    return out;
  }

  void check_child(const KernelCreateContext& context, int64_t id, bool leaf) const {
    const size_t limit = leaf ? leaf_weights_.size() : splits_.size();
    if (id < 0 || static_cast<size_t>(id) >= limit) {
      context.fail("a node's {} child {} is out of range", leaf ? "leaf" : "node", id);
    }
  }

  bool goes_true(size_t node, const double* row) const {
    const double v = row[feature_ids_[node]];
    if (std::isnan(v) && !missing_tracks_true_.empty() && missing_tracks_true_[node] != 0) {
      return true;
    }
    if (modes_[node] == TreeMode::kMember) {
      return std::ranges::find(members_[node], v) != members_[node].end();
    }
    return split_holds(modes_[node], v, splits_[node]);
  }

  // The leaf index the row reaches from `root`; a root whose both children are the same leaf
  // is that leaf itself (a tree of one leaf).
  int64_t find_leaf(const KernelContext& context, int64_t root, const double* row) const {
    auto node = static_cast<size_t>(root);
    if (node < splits_.size() && true_leafs_[node] && false_leafs_[node] &&
        true_ids_[node] == false_ids_[node]) {
      return root;
    }
    for (size_t steps = 0; steps <= splits_.size(); ++steps) {
      const bool branch = goes_true(node, row);
      const int64_t next = branch ? true_ids_[node] : false_ids_[node];
      if (branch ? true_leafs_[node] : false_leafs_[node]) return next;
      node = static_cast<size_t>(next);
    }
    context.fail("the tree from root {} has a cycle", root);
  }

  void post_transform(double* scores) const {
    const auto n = static_cast<size_t>(n_targets_);
    switch (post_transform_) {
      case PostTransform::kNone:
        return;
      case PostTransform::kLogistic:
        for (size_t i = 0; i < n; ++i) scores[i] = 1.0 / (1.0 + std::exp(-scores[i]));
        return;
      case PostTransform::kProbit:
        for (size_t i = 0; i < n; ++i)
          scores[i] = std::numbers::sqrt2 * erfinv(2.0 * scores[i] - 1.0);
        return;
      case PostTransform::kSoftmax:
      case PostTransform::kSoftmaxZero: {
        // Softmax-zero leaves zero scores at zero and leaves them out of the sum.
        const bool skip_zero = post_transform_ == PostTransform::kSoftmaxZero;
        double high = -std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < n; ++i) {
          if (!(skip_zero && scores[i] == 0.0)) high = std::max(high, scores[i]);
        }
        double sum = 0.0;
        for (size_t i = 0; i < n; ++i) {
          if (skip_zero && scores[i] == 0.0) continue;
          scores[i] = std::exp(scores[i] - high);
          sum += scores[i];
        }
        for (size_t i = 0; i < n; ++i) {
          if (!(skip_zero && scores[i] == 0.0)) scores[i] /= sum;
        }
        return;
      }
    }
  }

  std::vector<double> splits_;
  std::vector<int64_t> feature_ids_;
  std::vector<TreeMode> modes_;
  std::vector<int64_t> true_ids_, false_ids_, true_leafs_, false_leafs_;
  std::vector<int64_t> missing_tracks_true_;
  std::vector<std::vector<double>> members_;
  std::vector<int64_t> leaf_targets_;
  std::vector<double> leaf_weights_;
  std::vector<int64_t> roots_;
  int64_t n_targets_ = 0;
  Aggregate aggregate_ = Aggregate::kSum;
  PostTransform post_transform_ = PostTransform::kNone;
};

// Y: [N, n_targets] of X's type.
void infer_tree_ensemble(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const Attribute* targets = context.node().find_attribute("n_targets");
  const std::vector<Dim>* dims = input_dims(context, 0);
  SymbolicShape shape;
  if (dims && dims->size() == 2) {
    shape = std::vector<Dim>{(*dims)[0], targets ? Dim::known(targets->i) : Dim{}};
  }
  context.set_output(0, tensor_type(dtype, std::move(shape)));
}

}  // namespace

void register_ml_ops(OpRegistry& registry) {
  const std::string domain = kMlDomain;
  registry.add(domain, "ArrayFeatureExtractor", 1,
               OpDefinition(kernel_factory<ArrayFeatureExtractorKernel>())
                   .with_types(infer_array_feature_extractor));
  registry.add(domain, "Binarizer", 1,
               OpDefinition(kernel_factory<BinarizerKernel>(), kElementwiseOp)
                   .with_types(infer_same_as_input));
  // LabelEncoder 1 (classes_strings: a string <-> position map) is registered with
  // CategoryMapper in ml_classic.cc; 2 has the typed lists, 4 added the tensor attributes.
  for (int64_t since : {2, 4}) {
    registry.add(domain, "LabelEncoder", since,
                 OpDefinition(kernel_factory<LabelEncoderKernel>(), kElementwiseOp)
                     .with_types(infer_label_encoder));
  }
  registry.add(domain, "TreeEnsemble", 5,
               OpDefinition(kernel_factory<TreeEnsembleKernel>()).with_types(infer_tree_ensemble));
}

}  // namespace onnxkit
