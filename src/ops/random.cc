// Op family: random generators (RandomUniform, RandomNormal, RandomUniformLike,
// RandomNormalLike, Bernoulli, Multinomial).
//
// Every compute() draws from a fresh std::mt19937: seeded from the bits of the float `seed`
// attribute when the node has one (so a seeded node gives the same output run after run, and
// compute() stays const and thread-safe), from std::random_device otherwise. Uniform draws
// take 53 bits from two engine outputs (as numpy's random_sample does); normal draws use
// Box-Muller. The values are computed in double and rounded to the output type.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <optional>
#include <random>

#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {
namespace {

// The generator of one compute() call.
class SeedSource {
 public:
  explicit SeedSource(const KernelCreateContext& context)
      : has_seed_(context.has_attribute("seed")),
        seed_(std::bit_cast<uint32_t>(context.attr_float("seed", 0.0f))) {}

  std::mt19937 engine() const { return std::mt19937(has_seed_ ? seed_ : std::random_device{}()); }

 private:
  bool has_seed_;
  uint32_t seed_;
};

// Uniform in [0, 1) with 53 random bits.
double uniform01(std::mt19937& engine) {
  const uint32_t a = engine() >> 5, b = engine() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

template <typename T>
T to_element(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0;
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

// The `dtype` attribute as a DType; nullopt when absent (the Like ops then use the input's).
std::optional<DType> dtype_attribute(const KernelCreateContext& context) {
  if (!context.has_attribute("dtype")) return std::nullopt;
  const int64_t code = context.attr_int("dtype");
  if (code < INT32_MIN || code > INT32_MAX || !dtype_is_known(static_cast<int32_t>(code))) {
    context.fail("dtype {} is not a known data type", code);
  }
  return static_cast<DType>(code);
}

bool is_generated_float(DType dtype) {
  return dtype == DType::kFloat || dtype == DType::kDouble || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

enum class Distribution { kUniform, kNormal };

// RandomUniform / RandomNormal (shape from the attribute) and their Like variants (shape,
// and dtype unless given, from the input).
class RandomKernel : public OpKernel {
 public:
  RandomKernel(const KernelCreateContext& context, Distribution distribution, bool like)
      : distribution_(distribution), like_(like), seed_(context), dtype_(dtype_attribute(context)) {
    if (!like_) {
      if (!dtype_) dtype_ = DType::kFloat;
      if (!context.has_attribute("shape")) context.fail("the shape attribute is required");
      shape_ = context.attr_ints("shape");
      for (size_t d = 0; d < shape_.size(); ++d) {
        if (shape_[d] < 0) context.fail("shape dim {} is {}, must be >= 0", d, shape_[d]);
      }
    }
    if (dtype_ && !is_generated_float(*dtype_)) {
      context.fail("dtype {} is not supported (needs float16, float, double or bfloat16)",
                   dtype_name(*dtype_));
    }
    if (distribution_ == Distribution::kUniform) {
      a_ = context.attr_float("low", 0.0f);
      b_ = context.attr_float("high", 1.0f);
      if (!(std::isfinite(a_) && std::isfinite(b_) && a_ <= b_)) {
        context.fail("low {} and high {} must be finite with low <= high", a_, b_);
      }
    } else {
      a_ = context.attr_float("mean", 0.0f);
      b_ = context.attr_float("scale", 1.0f);
      if (!(std::isfinite(a_) && std::isfinite(b_))) {
        context.fail("mean {} and scale {} must be finite", a_, b_);
      }
    }
  }

  void compute(KernelContext& context) const override {
    DType dtype = dtype_.value_or(DType::kUndefined);
    Shape shape = shape_;
    if (like_) {
      const Tensor& input = context.input(0);
      shape = input.shape();
      if (!dtype_) {
        dtype = input.dtype();
        if (!is_generated_float(dtype)) {
          context.fail("input type {} is not a floating-point output type; set dtype",
                       dtype_name(dtype));
        }
      }
    }
    Tensor& output = context.allocate_output(0, dtype, std::move(shape));
    std::mt19937 engine = seed_.engine();
    dispatch_float(dtype, "random output", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = output.mutable_data<T>();
      const int64_t n = output.numel();
      if (distribution_ == Distribution::kUniform) {
        fill_uniform(out, n, engine);
      } else {
        fill_normal(out, n, engine);
      }
    });
  }

 private:
  // Values in [low, high): a draw that rounds up to `high` in T is drawn again.
  template <typename T>
  void fill_uniform(T* out, int64_t n, std::mt19937& engine) const {
    const double low = a_, high = b_;
    if (low == high) {
      std::fill(out, out + n, to_element<T>(low));
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      T value = to_element<T>(low + (high - low) * uniform01(engine));
      // T may have no value in [low, high) at all (float16 with a narrow range): give up after
      // a few draws rather than loop forever.
      for (int attempt = 0; static_cast<double>(value) >= high && attempt < 32; ++attempt) {
        value = to_element<T>(low + (high - low) * uniform01(engine));
      }
      out[i] = value;
    }
  }

  // Box-Muller: each pair of uniforms gives two independent standard normals.
  template <typename T>
  void fill_normal(T* out, int64_t n, std::mt19937& engine) const {
    const double mean = a_, scale = b_;
    for (int64_t i = 0; i < n; i += 2) {
      const double u1 = 1.0 - uniform01(engine);  // (0, 1]: log stays finite
      const double u2 = uniform01(engine);
      const double radius = std::sqrt(-2.0 * std::log(u1));
      const double angle = 2.0 * std::numbers::pi * u2;
      out[i] = to_element<T>(mean + scale * radius * std::cos(angle));
      if (i + 1 < n) out[i + 1] = to_element<T>(mean + scale * radius * std::sin(angle));
    }
  }

  Distribution distribution_;
  bool like_;
  SeedSource seed_;
  std::optional<DType> dtype_;
  Shape shape_;
  double a_ = 0, b_ = 0;  // low/high or mean/scale
};

// Bernoulli: out[i] = 1 with probability input[i], else 0; dtype defaults to the input's.
class BernoulliKernel : public OpKernel {
 public:
  explicit BernoulliKernel(const KernelCreateContext& context)
      : seed_(context), dtype_(dtype_attribute(context)) {
    if (dtype_ && (*dtype_ == DType::kString || !dtype_is_known(static_cast<int32_t>(*dtype_)) ||
                   *dtype_ == DType::kComplex64 || *dtype_ == DType::kComplex128)) {
      context.fail("dtype {} is not supported (needs a numeric or bool type)", dtype_name(*dtype_));
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (!dtype_is_float(input.dtype())) {
      context.fail("input type {} is not supported (needs probabilities of a floating-point type)",
                   dtype_name(input.dtype()));
    }
    const auto n = static_cast<size_t>(input.numel());
    std::vector<double> p(n);
    dispatch_float(input.dtype(), "Bernoulli input", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = input.data<T>();
      for (size_t i = 0; i < n; ++i) p[i] = static_cast<double>(in[i]);
    });
    for (size_t i = 0; i < n; ++i) {
      if (!(p[i] >= 0 && p[i] <= 1)) {
        context.fail("probability {} at index {} is outside [0, 1]", p[i], i);
      }
    }
    const DType dtype = dtype_.value_or(input.dtype());
    Tensor& output = context.allocate_output(0, dtype, input.shape());
    std::mt19937 engine = seed_.engine();
    dispatch_numeric_bool(dtype, "Bernoulli output", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = output.mutable_data<T>();
      const T one = to_element<T>(1), zero = to_element<T>(0);
      for (size_t i = 0; i < n; ++i) out[i] = uniform01(engine) < p[i] ? one : zero;
    });
  }

 private:
  SeedSource seed_;
  std::optional<DType> dtype_;
};

// Multinomial: input [batch, classes] of unnormalized log-probabilities; output [batch,
// sample_size] of class indices, each drawn with probability softmax(input row).
class MultinomialKernel : public OpKernel {
 public:
  explicit MultinomialKernel(const KernelCreateContext& context)
      : seed_(context), sample_size_(context.attr_int("sample_size", 1)) {
    const int64_t code = context.attr_int("dtype", static_cast<int64_t>(DType::kInt32));
    if (code != static_cast<int64_t>(DType::kInt32) &&
        code != static_cast<int64_t>(DType::kInt64)) {
      context.fail("dtype {} is not supported (needs int32 (6) or int64 (7))", code);
    }
    dtype_ = static_cast<DType>(code);
    if (sample_size_ < 0) context.fail("sample_size is {}, must be >= 0", sample_size_);
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.rank() != 2) {
      context.fail("input must have rank 2 [batch_size, class_size], got shape {}",
                   shape_to_string(input.shape()));
    }
    if (!dtype_is_float(input.dtype())) {
      context.fail("input type {} is not supported (needs a floating-point type)",
                   dtype_name(input.dtype()));
    }
    const int64_t batch = input.shape()[0], classes = input.shape()[1];
    if (classes == 0 && batch > 0 && sample_size_ > 0) {
      context.fail("class_size is 0: there is no outcome to sample");
    }
    std::vector<double> logits(static_cast<size_t>(input.numel()));
    dispatch_float(input.dtype(), "Multinomial input", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = input.data<T>();
      for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<double>(in[i]);
    });
    Tensor& output = context.allocate_output(0, dtype_, {batch, sample_size_});
    std::vector<int64_t> samples(static_cast<size_t>(batch * sample_size_));
    std::mt19937 engine = seed_.engine();
    std::vector<double> cdf(static_cast<size_t>(classes));
    for (int64_t b = 0; b < batch && sample_size_ > 0; ++b) {
      const double* row = logits.data() + b * classes;
      double max = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) {
        if (std::isnan(row[c]) || row[c] == INFINITY) {
          context.fail("log-probability {} at [{}, {}] is not a number or -inf", row[c], b, c);
        }
        max = std::max(max, row[c]);
      }
      if (max == -INFINITY) context.fail("row {} has no outcome with nonzero probability", b);
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) cdf[c] = total += std::exp(row[c] - max);
      for (int64_t s = 0; s < sample_size_; ++s) {
        // The first class whose cumulative weight exceeds u; classes of zero weight are never
        // chosen. A draw that rounds up to `total` is drawn again.
        int64_t index = classes;
        while (index == classes) {
          const double u = uniform01(engine) * total;
          index = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
        }
        samples[b * sample_size_ + s] = index;
      }
    }
    if (dtype_ == DType::kInt32) {
      int32_t* out = output.mutable_data<int32_t>();
      for (size_t i = 0; i < samples.size(); ++i) out[i] = static_cast<int32_t>(samples[i]);
    } else {
      std::copy(samples.begin(), samples.end(), output.mutable_data<int64_t>());
    }
  }

 private:
  SeedSource seed_;
  int64_t sample_size_;
  DType dtype_ = DType::kInt32;
};

KernelFactory random_factory(Distribution distribution, bool like) {
  return [distribution, like](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    return std::make_unique<RandomKernel>(context, distribution, like);
  };
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// RandomUniform, RandomNormal: `shape` of `dtype` (float when absent).
void infer_random(TypeInferenceContext& context) {
  const KernelCreateContext attributes = attribute_reader(context);
  context.set_output(0, tensor_type(dtype_attribute(attributes).value_or(DType::kFloat),
                                    known_dims(attributes.attr_ints("shape"))));
}

// The Like ops and Bernoulli: the input's shape, of `dtype` (the input's when absent).
void infer_random_like(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type || !type->is_tensor()) return;
  context.set_output(
      0, tensor_type(dtype_attribute(attribute_reader(context)).value_or(type->elem_type),
                     type->shape));
}

// Multinomial: [batch, sample_size] of `dtype` (int32 when absent).
void infer_multinomial(TypeInferenceContext& context) {
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<Dim>* dims = input_dims(context, 0);
  const auto dtype =
      static_cast<DType>(attributes.attr_int("dtype", static_cast<int64_t>(DType::kInt32)));
  context.set_output(
      0, tensor_type(dtype, std::vector<Dim>{dims && !dims->empty() ? (*dims)[0] : Dim{},
                                             Dim::known(attributes.attr_int("sample_size", 1))}));
}

}  // namespace

void register_random_ops(OpRegistry& registry) {
  // Version 22 of each added bfloat16.
  registry.add("RandomUniform", {1, 22}, random_factory(Distribution::kUniform, false), kRandomOp);
  registry.add("RandomNormal", {1, 22}, random_factory(Distribution::kNormal, false), kRandomOp);
  registry.add("RandomUniformLike", {1, 22}, random_factory(Distribution::kUniform, true),
               kRandomOp);
  registry.add("RandomNormalLike", {1, 22}, random_factory(Distribution::kNormal, true), kRandomOp);
  registry.add("Bernoulli", {15, 22}, kernel_factory<BernoulliKernel>(), kRandomOp);
  registry.add("Multinomial", {7, 22}, kernel_factory<MultinomialKernel>(), kRandomOp);

  // Type inference, every version.
  registry.set_type_rule("", "RandomUniform", infer_random);
  registry.set_type_rule("", "RandomNormal", infer_random);
  registry.set_type_rule("", "RandomUniformLike", infer_random_like);
  registry.set_type_rule("", "RandomNormalLike", infer_random_like);
  registry.set_type_rule("", "Bernoulli", infer_random_like);
  registry.set_type_rule("", "Multinomial", infer_multinomial);
}

}  // namespace onnxkit
