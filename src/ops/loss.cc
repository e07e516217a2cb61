// Op family: loss (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss).
//
// Both read class scores laid out [N, C, d1, ..., dk] as [N, C, D] with D = d1 * ... * dk,
// and targets [N, d1, ..., dk] as [N, D]. Sums accumulate in double; float16 and bfloat16
// compute in float/double and store in their own type.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

enum class Reduction { kNone, kSum, kMean };

// The attributes both losses share.
struct LossAttributes {
  Reduction reduction = Reduction::kMean;
  std::optional<int64_t> ignore_index;

  explicit LossAttributes(const KernelCreateContext& context) {
    const std::string name = context.attr_string("reduction", "mean");
    if (name == "none") {
      reduction = Reduction::kNone;
    } else if (name == "sum") {
      reduction = Reduction::kSum;
    } else if (name == "mean") {
      reduction = Reduction::kMean;
    } else {
      context.fail("reduction '{}' is not one of none, sum, mean", name);
    }
    if (context.has_attribute("ignore_index")) ignore_index = context.attr_int("ignore_index");
  }
};

// The sizes of a [N, C, d...] score tensor checked against its [N, d...] targets and [C]
// weights.
struct LossShape {
  int64_t n = 0, c = 0, d = 1;
};

LossShape check_shapes(const KernelContext& context, const Tensor& scores, const Tensor& target,
                       const Tensor* weight, std::string_view scores_name,
                       std::string_view target_name) {
  const Shape& shape = scores.shape();
  if (shape.size() < 2)
    context.fail("{} has shape {}, expected [N, C, d1, ...] of rank 2 or more", scores_name,
                 shape_to_string(shape));
  Shape expected{shape[0]};
  expected.insert(expected.end(), shape.begin() + 2, shape.end());
  if (target.shape() != expected)
    context.fail("{} has shape {}, expected {} to match {} of shape {}", target_name,
                 shape_to_string(target.shape()), shape_to_string(expected), scores_name,
                 shape_to_string(shape));
  if (target.dtype() != DType::kInt32 && target.dtype() != DType::kInt64)
    context.fail("{} has type {}, expected int32 or int64", target_name,
                 dtype_name(target.dtype()));
  if (weight) {
    if (weight->dtype() != scores.dtype())
      context.fail("weight has type {}, expected {} like {}", dtype_name(weight->dtype()),
                   dtype_name(scores.dtype()), scores_name);
    if (weight->shape() != Shape{shape[1]})
      context.fail("weight has shape {}, expected [{}] (one per class)",
                   shape_to_string(weight->shape()), shape[1]);
  }
  LossShape sizes;
  sizes.n = shape[0];
  sizes.c = shape[1];
  for (size_t i = 2; i < shape.size(); ++i) sizes.d *= shape[i];
  return sizes;
}

// Writes output 0 from the per-sample losses -log_prob(n, target, d) * weight[target]:
// unreduced with the targets' shape, or their sum, or their sum over the sum of the weights
// the samples used (ignored samples weigh 0, so an all-ignored mean is 0/0 = NaN as in the
// ONNX reference). `neg_log_prob(n, c, d)` gives -log p of class c for sample (n, d).
template <typename T, typename F>
void write_loss(KernelContext& context, const LossAttributes& attrs, const LossShape& sizes,
                DType dtype, const Tensor& target, const Tensor* weight,
                std::string_view target_name, F&& neg_log_prob) {
  const std::vector<int64_t> targets = read_int64s(target, target_name);
  std::vector<double> weights;
  if (weight) {
    const T* w = weight->data<T>();
    for (int64_t c = 0; c < sizes.c; ++c) weights.push_back(static_cast<double>(w[c]));
  }
  T* unreduced = attrs.reduction == Reduction::kNone
                     ? context.allocate_output(0, dtype, target.shape()).mutable_data<T>()
                     : nullptr;
  double loss_sum = 0.0;
  double weight_sum = 0.0;
  for (int64_t n = 0; n < sizes.n; ++n) {
    for (int64_t d = 0; d < sizes.d; ++d) {
      const size_t i = static_cast<size_t>(n * sizes.d + d);
      const int64_t c = targets[i];
      if (attrs.ignore_index && c == *attrs.ignore_index) {
        if (unreduced) unreduced[i] = T(0.0f);
        continue;
      }
      if (c < 0 || c >= sizes.c)
        context.fail("{} value {} at flat index {} is out of range for {} classes", target_name, c,
                     i, sizes.c);
      const double w = weight ? weights[static_cast<size_t>(c)] : 1.0;
      const double loss = neg_log_prob(n, c, d) * w;
      if (unreduced) unreduced[i] = convert_element<T>(loss);
      loss_sum += loss;
      weight_sum += w;
    }
  }
  if (unreduced) return;
  const double result = attrs.reduction == Reduction::kSum ? loss_sum : loss_sum / weight_sum;
  context.allocate_output(0, dtype, {}).mutable_data<T>()[0] = convert_element<T>(result);
}

// NegativeLogLikelihoodLoss(input [N, C, d...] of log-probabilities, target, weight?).
class NegativeLogLikelihoodLossKernel : public OpKernel {
 public:
  explicit NegativeLogLikelihoodLossKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& target = context.input(1);
    const Tensor* weight = context.has_input(2) ? &context.input(2) : nullptr;
    const LossShape sizes = check_shapes(context, input, target, weight, "input", "target");
    dispatch_float(input.dtype(), "NegativeLogLikelihoodLoss input", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = input.data<T>();
      write_loss<T>(context, attrs_, sizes, input.dtype(), target, weight, "target",
                    [&](int64_t n, int64_t c, int64_t d) {
                      return -static_cast<double>(x[(n * sizes.c + c) * sizes.d + d]);
                    });
    });
  }

 private:
  LossAttributes attrs_;
};

// SoftmaxCrossEntropyLoss(scores [N, C, d...], labels, weights?) -> loss, log_prob?:
// NLL of the log-softmax of the scores over axis 1.
class SoftmaxCrossEntropyLossKernel : public OpKernel {
 public:
  explicit SoftmaxCrossEntropyLossKernel(const KernelCreateContext& context) : attrs_(context) {}

  void compute(KernelContext& context) const override {
    const Tensor& scores = context.input(0);
    const Tensor& labels = context.input(1);
    const Tensor* weight = context.has_input(2) ? &context.input(2) : nullptr;
    const LossShape sizes = check_shapes(context, scores, labels, weight, "scores", "labels");
    dispatch_float(scores.dtype(), "SoftmaxCrossEntropyLoss scores", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = scores.data<T>();
      // Per sample (n, d): max over classes and log(sum(exp(x - max))), so that
      // log p(c) = x[c] - max - log_sum stays finite for any scores.
      const size_t samples = static_cast<size_t>(sizes.n * sizes.d);
      std::vector<double> max_score(samples, -std::numeric_limits<double>::infinity());
      std::vector<double> log_sum(samples, 0.0);
      for (int64_t n = 0; n < sizes.n; ++n) {
        double* mx = max_score.data() + n * sizes.d;
        double* sum = log_sum.data() + n * sizes.d;
        for (int64_t c = 0; c < sizes.c; ++c) {
          const T* row = x + (n * sizes.c + c) * sizes.d;
          for (int64_t d = 0; d < sizes.d; ++d)
            mx[d] = std::max(mx[d], static_cast<double>(row[d]));
        }
        for (int64_t c = 0; c < sizes.c; ++c) {
          const T* row = x + (n * sizes.c + c) * sizes.d;
          for (int64_t d = 0; d < sizes.d; ++d)
            sum[d] += std::exp(static_cast<double>(row[d]) - mx[d]);
        }
        for (int64_t d = 0; d < sizes.d; ++d) sum[d] = std::log(sum[d]);
      }
      const auto log_prob = [&](int64_t n, int64_t c, int64_t d) {
        const size_t sample = static_cast<size_t>(n * sizes.d + d);
        return static_cast<double>(x[(n * sizes.c + c) * sizes.d + d]) - max_score[sample] -
               log_sum[sample];
      };
      write_loss<T>(context, attrs_, sizes, scores.dtype(), labels, weight, "labels",
                    [&](int64_t n, int64_t c, int64_t d) { return -log_prob(n, c, d); });
      if (context.wants_output(1)) {
        T* out = context.allocate_output(1, scores.dtype(), scores.shape()).mutable_data<T>();
        for (int64_t n = 0; n < sizes.n; ++n)
          for (int64_t c = 0; c < sizes.c; ++c)
            for (int64_t d = 0; d < sizes.d; ++d)
              out[(n * sizes.c + c) * sizes.d + d] = convert_element<T>(log_prob(n, c, d));
      }
    });
  }

 private:
  LossAttributes attrs_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: the loss per target element with
// reduction "none", else a scalar; SoftmaxCrossEntropyLoss's log_prob like the scores.
void infer_loss(TypeInferenceContext& context) {
  const ValueType* scores = context.input_type(0);
  if (!scores || !scores->is_tensor()) return;
  if (attribute_reader(context).attr_string("reduction", "mean") == "none") {
    const ValueType* target = context.input_type(1);
    context.set_output(0, tensor_type(scores->elem_type, target ? target->shape : std::nullopt));
  } else {
    context.set_output(0, tensor_type(scores->elem_type, std::vector<Dim>{}));
  }
  context.set_output(1, *scores);
}

}  // namespace

void register_loss_ops(OpRegistry& registry) {
  // NegativeLogLikelihoodLoss 22 added bfloat16.
  registry.add("NegativeLogLikelihoodLoss", {12, 13, 22},
               kernel_factory<NegativeLogLikelihoodLossKernel>());
  registry.add("SoftmaxCrossEntropyLoss", {12, 13},
               kernel_factory<SoftmaxCrossEntropyLossKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "NegativeLogLikelihoodLoss", infer_loss);
  registry.set_type_rule("", "SoftmaxCrossEntropyLoss", infer_loss);
}

}  // namespace onnxkit
