// Op family: normalization (BatchNormalization, InstanceNormalization, GroupNormalization,
// LayerNormalization, LpNormalization, MeanVarianceNormalization, LRN) and Dropout.
//
// Statistics are accumulated in double whatever the element type; Float16/BFloat16
// elements are read and written through float.
#include <algorithm>
#include <cmath>
#include <random>

#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// y[i] = x[i] * a[g] + b[g] where g = (i / inner) % groups: per-channel affine maps.
void affine_by_group(const Tensor& x, Tensor& y, int64_t groups, int64_t inner,
                     const std::vector<double>& a, const std::vector<double>& b) {
  dispatch_float(x.dtype(), "normalization", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.mutable_data<T>();
    const int64_t n = x.numel();
    for (int64_t start = 0, g = 0; start < n; start += inner, g = (g + 1) % groups) {
      const double scale = a[g], shift = b[g];
      for (int64_t i = start; i < start + inner; ++i) {
        py[i] = static_cast<T>(static_cast<double>(px[i]) * scale + shift);
      }
    }
  });
}

// Mean and biased variance of each group of elements (i / inner) % groups.
void group_moments(const KernelContext& context, const Tensor& x, int64_t groups, int64_t inner,
                   std::vector<double>& mean, std::vector<double>& var) {
  const std::vector<double> v = read_doubles(context, x, "X");
  mean.assign(groups, 0);
  var.assign(groups, 0);
  std::vector<int64_t> count(groups, 0);
  const auto n = static_cast<int64_t>(v.size());
  for (int64_t start = 0, g = 0; start < n; start += inner, g = (g + 1) % groups) {
    for (int64_t i = start; i < start + inner; ++i) mean[g] += v[i];
    count[g] += inner;
  }
  for (int64_t g = 0; g < groups; ++g) mean[g] /= std::max<int64_t>(count[g], 1);
  // Second pass over deviations: no cancellation as with E[x^2] - E[x]^2.
  for (int64_t start = 0, g = 0; start < n; start += inner, g = (g + 1) % groups) {
    for (int64_t i = start; i < start + inner; ++i) var[g] += (v[i] - mean[g]) * (v[i] - mean[g]);
  }
  for (int64_t g = 0; g < groups; ++g) var[g] /= std::max<int64_t>(count[g], 1);
}

class BatchNormalizationKernel : public OpKernel {
 public:
  explicit BatchNormalizationKernel(const KernelCreateContext& context)
      : opset_(context.opset()),
        epsilon_(context.attr_float("epsilon", 1e-5f)),
        momentum_(context.attr_float("momentum", 0.9f)),
        spatial_(context.opset() < 9 ? context.attr_int("spatial", 1) != 0 : true) {
    if (opset_ >= 14) {
      training_ = context.attr_int("training_mode", 0) != 0;
    } else {
      // Before 14 the extra outputs are what asks for training mode (and, at 6, is_test=0).
      bool extra_outputs = false;
      for (size_t i = 1; i < context.node().outputs().size(); ++i) {
        extra_outputs = extra_outputs || context.node().output(i) != nullptr;
      }
      training_ = extra_outputs && (opset_ >= 7 || context.attr_int("is_test", 0) == 0);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 2) context.fail("input has rank {}, needs at least 2 (N, C, ...)", x.rank());
    const int64_t channels = x.shape()[1];
    const int64_t spatial_size = shape_numel(std::span(x.shape()).subspan(2));
    // spatial=0 (opsets 1-7): one set of statistics per (C, D1, ...) activation.
    const int64_t groups = spatial_ ? channels : channels * spatial_size;
    const int64_t inner = spatial_ ? spatial_size : 1;
    static constexpr const char* kNames[] = {"X", "scale", "B", "mean", "var"};
    std::vector<double> params[5];
    for (size_t i = 1; i < 5; ++i) {
      const Tensor& t = context.input(i);
      if (t.numel() != groups) {
        context.fail("input {} ({}) has shape {}, needs {} values for input shape {}", i, kNames[i],
                     shape_to_string(t.shape()), groups, shape_to_string(x.shape()));
      }
      params[i] = read_doubles(context, t, kNames[i]);
    }
    const std::vector<double>& scale = params[1];
    const std::vector<double>& bias = params[2];
    std::vector<double> mean = params[3];
    std::vector<double> var = params[4];
    std::vector<double> batch_mean, batch_var;
    if (training_) {
      group_moments(context, x, groups, inner, batch_mean, batch_var);
      mean = batch_mean;
      var = batch_var;
    }
    std::vector<double> a(groups), b(groups);
    for (int64_t g = 0; g < groups; ++g) {
      a[g] = scale[g] / std::sqrt(var[g] + static_cast<double>(epsilon_));
      b[g] = bias[g] - mean[g] * a[g];
    }
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    affine_by_group(x, y, groups, inner, a, b);
    if (!training_) return;
    // Running statistics: input * momentum + batch * (1 - momentum).
    const double m = momentum_;
    std::vector<double> running_mean(groups), running_var(groups);
    for (int64_t g = 0; g < groups; ++g) {
      running_mean[g] = params[3][g] * m + batch_mean[g] * (1 - m);
      running_var[g] = params[4][g] * m + batch_var[g] * (1 - m);
    }
    const Tensor& in_mean = context.input(3);
    const Tensor& in_var = context.input(4);
    write_doubles(context, 1, in_mean.dtype(), in_mean.shape(), running_mean);
    write_doubles(context, 2, in_var.dtype(), in_var.shape(), running_var);
    if (opset_ < 14) {  // saved_mean, saved_var: this batch's statistics
      write_doubles(context, 3, in_mean.dtype(), in_mean.shape(), batch_mean);
      write_doubles(context, 4, in_var.dtype(), in_var.shape(), batch_var);
    }
  }

 private:
  int64_t opset_;
  float epsilon_;
  float momentum_;
  bool spatial_;
  bool training_ = false;
};

class InstanceNormalizationKernel : public OpKernel {
 public:
  explicit InstanceNormalizationKernel(const KernelCreateContext& context)
      : epsilon_(context.attr_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 2) context.fail("input has rank {}, needs at least 2 (N, C, ...)", x.rank());
    const int64_t channels = x.shape()[1];
    const int64_t groups = x.shape()[0] * channels;
    const int64_t inner = shape_numel(std::span(x.shape()).subspan(2));
    const Tensor& scale_t = context.input(1);
    const Tensor& bias_t = context.input(2);
    if (scale_t.numel() != channels || bias_t.numel() != channels) {
      context.fail("scale {} and B {} need {} values each (the channel count of input {})",
                   shape_to_string(scale_t.shape()), shape_to_string(bias_t.shape()), channels,
                   shape_to_string(x.shape()));
    }
    const std::vector<double> scale = read_doubles(context, scale_t, "scale");
    const std::vector<double> bias = read_doubles(context, bias_t, "B");
    std::vector<double> mean, var;
    group_moments(context, x, groups, inner, mean, var);
    std::vector<double> a(groups), b(groups);
    for (int64_t g = 0; g < groups; ++g) {
      a[g] = scale[g % channels] / std::sqrt(var[g] + static_cast<double>(epsilon_));
      b[g] = bias[g % channels] - mean[g] * a[g];
    }
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    affine_by_group(x, y, groups, inner, a, b);
  }

 private:
  float epsilon_;
};

// GroupNormalization-18 (scale and bias per group) and -21 (per channel; stash_type, the
// precision of the statistics, which are double here whatever it says): the statistics of
// each instance's group of C / num_groups channels.
class GroupNormalizationKernel : public OpKernel {
 public:
  explicit GroupNormalizationKernel(const KernelCreateContext& context)
      : epsilon_(context.attr_float("epsilon", 1e-5f)),
        num_groups_(context.attr_int("num_groups")),
        per_channel_(context.opset() >= 21) {
    if (num_groups_ < 1) context.fail("num_groups is {}, must be >= 1", num_groups_);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 2) context.fail("input has rank {}, needs at least 2 (N, C, ...)", x.rank());
    const int64_t batch = x.shape()[0], channels = x.shape()[1];
    if (channels % num_groups_ != 0) {
      context.fail("{} channels are not divisible by num_groups {}", channels, num_groups_);
    }
    const int64_t per_group = channels / num_groups_;
    const int64_t inner = shape_numel(std::span(x.shape()).subspan(2));
    const int64_t params = per_channel_ ? channels : num_groups_;
    const Tensor& scale_t = context.input(1);
    const Tensor& bias_t = context.input(2);
    if (scale_t.numel() != params || bias_t.numel() != params) {
      context.fail("scale {} and bias {} need {} values each (one per {})",
                   shape_to_string(scale_t.shape()), shape_to_string(bias_t.shape()), params,
                   per_channel_ ? "channel" : "group");
    }
    const std::vector<double> scale = read_doubles(context, scale_t, "scale");
    const std::vector<double> bias = read_doubles(context, bias_t, "bias");
    std::vector<double> mean, var;
    group_moments(context, x, batch * num_groups_, per_group * inner, mean, var);
    std::vector<double> a(batch * channels), b(batch * channels);
    for (int64_t i = 0; i < batch * channels; ++i) {
      const int64_t c = i % channels;
      const int64_t g = (i / channels) * num_groups_ + c / per_group;
      const int64_t p = per_channel_ ? c : c / per_group;
      a[i] = scale[p] / std::sqrt(var[g] + static_cast<double>(epsilon_));
      b[i] = bias[p] - mean[g] * a[i];
    }
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    affine_by_group(x, y, batch * channels, inner, a, b);
  }

 private:
  float epsilon_;
  int64_t num_groups_;
  bool per_channel_;
};

// x divided by its L1 or L2 norm along `axis` (0 where the norm is 0).
class LpNormalizationKernel : public OpKernel {
 public:
  explicit LpNormalizationKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)), p_(context.attr_int("p", 2)) {
    if (p_ != 1 && p_ != 2) context.fail("p is {}, must be 1 or 2", p_);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(axis_, rank, "LpNormalization axis");
    const std::span<const int64_t> shape(x.shape());
    const int64_t outer = shape_numel(shape.subspan(0, static_cast<size_t>(axis)));
    const int64_t length = rank == 0 ? 1 : shape[static_cast<size_t>(axis)];
    const int64_t inner = rank == 0 ? 1 : shape_numel(shape.subspan(static_cast<size_t>(axis) + 1));
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_float(x.dtype(), "LpNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * length * inner + i;
          double norm = 0;
          for (int64_t k = 0; k < length; ++k) {
            const double v = static_cast<double>(px[base + k * inner]);
            norm += p_ == 1 ? std::fabs(v) : v * v;
          }
          if (p_ == 2) norm = std::sqrt(norm);
          for (int64_t k = 0; k < length; ++k) {
            const double v = static_cast<double>(px[base + k * inner]);
            py[base + k * inner] = static_cast<T>(norm == 0 ? 0.0 : v / norm);
          }
        }
      }
    });
  }

 private:
  int64_t axis_;
  int64_t p_;
};

class LayerNormalizationKernel : public OpKernel {
 public:
  explicit LayerNormalizationKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)),
        epsilon_(context.attr_float("epsilon", 1e-5f)),
        stash_type_(static_cast<DType>(context.attr_int("stash_type", 1))) {
    if (!dtype_is_float(stash_type_)) {
      context.fail("stash_type {} is not a floating-point type",
                   static_cast<int>(context.attr_int("stash_type", 1)));
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    if (rank == 0) context.fail("input is a scalar; it needs rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    const Shape& shape = x.shape();
    const Shape norm_shape(shape.begin() + axis, shape.end());
    const int64_t cols = shape_numel(norm_shape);
    const int64_t rows = shape_numel(std::span(shape).first(static_cast<size_t>(axis)));
    // Scale and B broadcast to the normalized dims (a row's worth of values).
    const Tensor& scale_t = context.input(1);
    const std::vector<double> scale = read_doubles(context, scale_t, "Scale");
    const std::vector<int64_t> scale_at = broadcast_offsets(context, scale_t, norm_shape, "Scale");
    std::vector<double> bias;
    std::vector<int64_t> bias_at;
    if (context.has_input(2)) {
      bias = read_doubles(context, context.input(2), "B");
      bias_at = broadcast_offsets(context, context.input(2), norm_shape, "B");
    }
    Shape stat_shape(shape.begin(), shape.begin() + axis);
    stat_shape.resize(shape.size(), 1);
    std::vector<double> means(rows), inv_stds(rows);
    Tensor& y = context.allocate_output(0, x.dtype(), shape);
    dispatch_float(x.dtype(), "LayerNormalization", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = px + r * cols;
        T* yr = py + r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; ++c) mean += static_cast<double>(xr[c]);
        mean /= static_cast<double>(std::max<int64_t>(cols, 1));
        for (int64_t c = 0; c < cols; ++c) {
          const double d = static_cast<double>(xr[c]) - mean;
          var += d * d;
        }
        var /= static_cast<double>(std::max<int64_t>(cols, 1));
        const double inv_std = 1.0 / std::sqrt(var + static_cast<double>(epsilon_));
        for (int64_t c = 0; c < cols; ++c) {
          double v = (static_cast<double>(xr[c]) - mean) * inv_std * scale[scale_at[c]];
          if (!bias.empty()) v += bias[bias_at[c]];
          yr[c] = static_cast<T>(v);
        }
        means[r] = mean;
        inv_stds[r] = inv_std;
      }
    });
    if (context.wants_output(1)) write_doubles(context, 1, stash_type_, stat_shape, means);
    if (context.wants_output(2)) write_doubles(context, 2, stash_type_, stat_shape, inv_stds);
  }

 private:
  int64_t axis_;
  float epsilon_;
  DType stash_type_;
};

// (X - mean) / (std + 1e-9) over `axes`, as the op's function body defines it.
class MeanVarianceNormalizationKernel : public OpKernel {
 public:
  explicit MeanVarianceNormalizationKernel(const KernelCreateContext& context)
      : axes_(context.attr_ints("axes", {0, 2, 3})) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const auto rank = static_cast<int64_t>(x.rank());
    std::vector<bool> reduced(x.rank(), false);
    for (int64_t axis : axes_) {
      const int64_t a = normalize_axis(axis, rank, context.node().describe());
      if (reduced[a]) context.fail("axis {} appears twice in axes", axis);
      reduced[a] = true;
    }
    // Group strides: each element's statistics slot (0 along reduced axes).
    Shape kept_shape(x.shape());
    for (size_t d = 0; d < x.rank(); ++d) {
      if (reduced[d]) kept_shape[d] = 1;
    }
    const std::vector<int64_t> group_strides = broadcast_strides(kept_shape, x.shape());
    const int64_t groups = shape_numel(kept_shape);
    const int64_t per_group = groups > 0 ? x.numel() / std::max<int64_t>(groups, 1) : 0;
    const std::vector<double> v = read_doubles(context, x, "X");
    std::vector<double> mean(groups, 0), var(groups, 0);
    std::vector<int64_t> slot(v.size());
    for_each_broadcast(x.shape(), {group_strides},
                       [&](int64_t i, const int64_t* o) { slot[i] = o[0]; });
    for (size_t i = 0; i < v.size(); ++i) mean[slot[i]] += v[i];
    for (double& m : mean) m /= static_cast<double>(std::max<int64_t>(per_group, 1));
    for (size_t i = 0; i < v.size(); ++i)
      var[slot[i]] += (v[i] - mean[slot[i]]) * (v[i] - mean[slot[i]]);
    std::vector<double> out(v.size());
    for (double& s : var) s = std::sqrt(s / static_cast<double>(std::max<int64_t>(per_group, 1)));
    for (size_t i = 0; i < v.size(); ++i) out[i] = (v[i] - mean[slot[i]]) / (var[slot[i]] + 1e-9);
    write_doubles(context, 0, x.dtype(), x.shape(), out);
  }

 private:
  std::vector<int64_t> axes_;
};

// Local response normalization across channels:
// y = x / (bias + alpha / size * sum of x^2 over the nearby channels)^beta.
class LrnKernel : public OpKernel {
 public:
  explicit LrnKernel(const KernelCreateContext& context)
      : alpha_(context.attr_float("alpha", 1e-4f)),
        beta_(context.attr_float("beta", 0.75f)),
        bias_(context.attr_float("bias", 1.0f)),
        size_(context.attr_int("size")) {
    if (size_ < 1) context.fail("size is {}, must be >= 1", size_);
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 2) context.fail("input has rank {}, needs at least 2 (N, C, ...)", x.rank());
    const int64_t batch = x.shape()[0];
    const int64_t channels = x.shape()[1];
    const int64_t inner = shape_numel(std::span(x.shape()).subspan(2));
    const int64_t before = (size_ - 1) / 2;
    const int64_t after = size_ - 1 - before;  // ceil((size - 1) / 2)
    const std::vector<double> v = read_doubles(context, x, "X");
    std::vector<double> out(v.size());
    // Prefix sums of x^2 over channels make each window sum O(1).
    std::vector<double> prefix(static_cast<size_t>((channels + 1) * inner));
    for (int64_t n = 0; n < batch; ++n) {
      const double* xn = v.data() + n * channels * inner;
      double* yn = out.data() + n * channels * inner;
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t s = 0; s < inner; ++s) {
          prefix[(c + 1) * inner + s] =
              prefix[c * inner + s] + xn[c * inner + s] * xn[c * inner + s];
        }
      }
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t lo = std::max<int64_t>(0, c - before);
        const int64_t hi = std::min(channels - 1, c + after);
        for (int64_t s = 0; s < inner; ++s) {
          const double square_sum = prefix[(hi + 1) * inner + s] - prefix[lo * inner + s];
          const double base = static_cast<double>(bias_) +
                              static_cast<double>(alpha_) / static_cast<double>(size_) * square_sum;
          yn[c * inner + s] = xn[c * inner + s] / std::pow(base, static_cast<double>(beta_));
        }
      }
    }
    write_doubles(context, 0, x.dtype(), x.shape(), out);
  }

 private:
  float alpha_;
  float beta_;
  float bias_;
  int64_t size_;
};

// Dropout. Before opset 12 it is an inference pass-through (ratio is an attribute that
// only training would use). From 12 on, ratio and training_mode are inputs; in training
// mode with ratio > 0 each element is kept with probability 1 - ratio and scaled by
// 1 / (1 - ratio). The draw u ~ U[0, 1) per element, kept when u >= ratio, follows numpy's
// legacy np.random.seed(seed); np.random.uniform(): MT19937 seeded by init_genrand and 53-bit
// doubles from two draws, so a given `seed` reproduces the ONNX reference outputs.
class DropoutKernel : public OpKernel {
 public:
  explicit DropoutKernel(const KernelCreateContext& context)
      : opset_(context.opset()),
        ratio_(context.opset() < 12 ? context.attr_float("ratio", 0.5f) : 0.5f),
        has_seed_(context.has_attribute("seed")),
        seed_(context.attr_int("seed", 0)),
        // Versions 1 and 6 train (drop at random) unless is_test is set; 7 to 11 never train.
        legacy_training_(context.opset() < 7 && context.attr_int("is_test", 0) == 0) {
    if (opset_ < 12 && (ratio_ < 0 || ratio_ >= 1)) {
      context.fail("ratio is {}, must be in [0, 1)", ratio_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    double ratio = ratio_;
    bool training = legacy_training_;
    if (opset_ >= 12) {
      if (context.has_input(1)) ratio = read_scalar(context.input(1), "Dropout ratio");
      if (context.has_input(2)) {
        const Tensor& t = context.input(2);
        if (t.dtype() != DType::kBool || t.numel() != 1) {
          context.fail("training_mode must be one bool, got {} of shape {}", dtype_name(t.dtype()),
                       shape_to_string(t.shape()));
        }
        training = t.data<bool>()[0];
      }
      if (!(ratio >= 0 && ratio <= 1)) context.fail("ratio is {}, must be in [0, 1]", ratio);
    }
    if (!training || ratio == 0) {
      context.set_output(0, x);
      if (context.wants_output(1)) write_mask(context, x, nullptr);
      return;
    }
    std::mt19937 engine(has_seed_ ? static_cast<uint32_t>(seed_) : std::random_device{}());
    std::vector<uint8_t> keep(static_cast<size_t>(x.numel()));
    for (auto& k : keep) {
      const uint32_t a = engine() >> 5, b = engine() >> 6;
      const double u = (a * 67108864.0 + b) / 9007199254740992.0;
      k = u >= ratio;
    }
    Tensor& y = context.allocate_output(0, x.dtype(), x.shape());
    dispatch_float(x.dtype(), "Dropout", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C scale = static_cast<C>(1.0 / (1.0 - ratio));
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (size_t i = 0; i < keep.size(); ++i) {
        py[i] = keep[i] ? static_cast<T>(static_cast<C>(px[i]) * scale) : static_cast<T>(C(0));
      }
    });
    if (context.wants_output(1)) write_mask(context, x, &keep);
  }

 private:
  // The mask: bool from opset 10 on, the data type before (1 = kept).
  void write_mask(KernelContext& context, const Tensor& x, const std::vector<uint8_t>* keep) const {
    const auto n = static_cast<size_t>(x.numel());
    if (opset_ >= 10) {
      bool* m = context.allocate_output(1, DType::kBool, x.shape()).mutable_data<bool>();
      for (size_t i = 0; i < n; ++i) m[i] = keep ? (*keep)[i] != 0 : true;
      return;
    }
    std::vector<double> kept(n, 1.0);
    if (keep) {
      for (size_t i = 0; i < n; ++i) kept[i] = (*keep)[i] != 0 ? 1.0 : 0.0;
    }
    write_doubles(context, 1, x.dtype(), x.shape(), kept);
  }

  int64_t opset_;
  float ratio_;
  bool has_seed_;
  int64_t seed_;
  bool legacy_training_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// BatchNormalization: Y like X; the training outputs (running or saved mean and variance)
// like the mean and var inputs.
void infer_batch_normalization(TypeInferenceContext& context) {
  infer_same_as_input(context);
  for (size_t i = 1; i < context.num_outputs(); ++i) {
    if (const ValueType* stats = context.input_type(i % 2 == 1 ? 3 : 4)) {
      context.set_output(i, *stats);
    }
  }
}

// LayerNormalization: Y like X; Mean and InvStdDev of stash_type (default float), X's dims
// with those from `axis` on set to 1.
void infer_layer_normalization(TypeInferenceContext& context) {
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::optional<size_t> axis =
      x ? std::optional(rule_axis(attributes.attr_int("axis", -1), x->size())) : std::nullopt;
  infer_same_as_input(context);
  if (context.num_outputs() < 2 || !context.input_type(0)) return;
  const auto stash = static_cast<DType>(attributes.attr_int("stash_type", 1));
  SymbolicShape stats;
  if (x) {
    stats = *x;
    for (size_t d = *axis; d < x->size(); ++d) (*stats)[d] = Dim::known(1);
  }
  context.set_output(1, tensor_type(stash, stats));
  context.set_output(2, tensor_type(stash, stats));
}

// Dropout: output like X; the mask of X's shape, bool from opset 10 (X's dtype before).
void infer_dropout(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type || !type->is_tensor()) return;
  context.set_output(0, *type);
  context.set_output(
      1, tensor_type(context.opset() >= 10 ? DType::kBool : type->elem_type, type->shape));
}

}  // namespace

void register_normalization_ops(OpRegistry& registry) {
  // One kernel per op reads the attributes its opset defines (spatial up to 7, is_test in 1
  // and 6, training_mode from 14; Dropout's ratio moved from attribute to input at 12).
  // Version 1's `consumed_inputs` is a legacy in-place hint, ignored.
  registry.add("BatchNormalization", {1, 6, 7, 9, 14, 15},
               kernel_factory<BatchNormalizationKernel>());
  registry.add("InstanceNormalization", {1, 6, 22}, kernel_factory<InstanceNormalizationKernel>());
  registry.add(
      "GroupNormalization", {18, 21},
      OpDefinition(kernel_factory<GroupNormalizationKernel>()).with_types(infer_same_as_input));
  registry.add(
      "LpNormalization", {1, 22},
      OpDefinition(kernel_factory<LpNormalizationKernel>()).with_types(infer_same_as_input));
  // 1: ONNX Runtime runs LayerNormalization at every opset (before 17 as its own op in the
  // ONNX domain, same semantics), and its transformer optimizer writes it into opset 11-16
  // files (GPT-2, ViT), which onnxkit runs too.
  registry.add("LayerNormalization", {1, 17}, kernel_factory<LayerNormalizationKernel>());
  registry.add("MeanVarianceNormalization", {9, 13},
               kernel_factory<MeanVarianceNormalizationKernel>());
  registry.add("LRN", {1, 13}, kernel_factory<LrnKernel>());
  // Dropout 22 added bfloat16 and the float8 types.
  registry.add("Dropout", {1, 6, 7, 10, 12, 13, 22}, kernel_factory<DropoutKernel>(),
               OpTraits{.random_in_training = true});

  // Type inference, every version.
  registry.set_type_rule("", "BatchNormalization", infer_batch_normalization);
  registry.set_type_rule("", "InstanceNormalization", infer_same_as_input);
  registry.set_type_rule("", "LayerNormalization", infer_layer_normalization);
  registry.set_type_rule("", "MeanVarianceNormalization", infer_same_as_input);
  registry.set_type_rule("", "LRN", infer_same_as_input);
  registry.set_type_rule("", "Dropout", infer_dropout);
}

}  // namespace onnxkit
