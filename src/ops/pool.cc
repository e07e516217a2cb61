// Op family: pooling (MaxPool, AveragePool, LpPool and their Global forms, MaxUnpool,
// MaxRoiPool).
//
// Every windowed pool shares one geometry (kernel, strides, pads, dilations, auto_pad,
// ceil_mode) and one window walker; the ops differ only in how they reduce a window.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/resource_limits.h"
#include "ir/domain.h"
#include "ops/channels_last_ops.h"
#include "ops/conv_attributes.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// Where the windows of one spatial layout lie.
struct PoolGeometry {
  Shape in;  // spatial input dims
  Shape out;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
  int64_t planes = 0;                 // N * C
  int64_t in_size = 0, out_size = 0;  // elements of one input / output plane
  Shape y_shape;                      // [N, C, out...]
};

// The windows of MaxPool / AveragePool / LpPool (attributes from ConvAttributes::pool)
// over X of shape `x_shape`.
PoolGeometry pool_geometry(const KernelContext& context, const ConvAttributes& attrs,
                           const Shape& x_shape) {
  const size_t rank = attrs.kernel_shape.size();
  if (x_shape.size() != rank + 2) {
    context.fail("input has rank {}, kernel_shape has {} dims so the input needs rank {}",
                 x_shape.size(), rank, rank + 2);
  }
  PoolGeometry g;
  g.in.assign(x_shape.begin() + 2, x_shape.end());
  for (size_t i = 0; i < rank; ++i) {
    const WindowAxis axis = attrs.window(i, g.in[i], attrs.kernel_shape[i]);
    const int64_t extent = attrs.extent(i, attrs.kernel_shape[i]);
    // SAME padding leaves an empty axis without windows rather than failing.
    if (!attrs.same_padding() && axis.padded < extent) {
      context.fail("kernel extent {} of spatial dim {} exceeds its padded size {}", extent, i,
                   axis.padded);
    }
    g.out.push_back(axis.out);
    g.pad_begin.push_back(axis.pad_begin);
    g.pad_end.push_back(axis.pad_end);
  }
  g.planes = x_shape[0] * x_shape[1];
  g.in_size = shape_numel(g.in);
  g.out_size = shape_numel(g.out);
  g.y_shape = {x_shape[0], x_shape[1]};
  g.y_shape.insert(g.y_shape.end(), g.out.begin(), g.out.end());
  return g;
}

// Walks the windows of one channel. For each output position: begin(), then
// visit(row_major_offset, column_major_offset) for every window element inside the
// input (padding is skipped), then end(out_index, padded_count) where padded_count counts
// the window's elements inside the padded input (count_include_pad's divisor).
class WindowWalker {
 public:
  WindowWalker(const ConvAttributes& attrs, const PoolGeometry& g) : attrs_(attrs), g_(g) {
    const size_t rank = g.in.size();
    row_strides_ = contiguous_strides(g.in);
    col_strides_.assign(rank, 1);
    for (size_t i = 1; i < rank; ++i) col_strides_[i] = col_strides_[i - 1] * g.in[i - 1];
    first_.resize(rank);
    count_.resize(rank);
    index_.resize(rank);
    out_coord_.assign(rank, 0);
  }

  template <typename Begin, typename Visit, typename End>
  void run(Begin&& begin, Visit&& visit, End&& end) {
    const size_t rank = g_.in.size();
    const int64_t outputs = shape_numel(g_.out);
    std::fill(out_coord_.begin(), out_coord_.end(), 0);
    for (int64_t o = 0; o < outputs; ++o) {
      int64_t row = 0, col = 0, total = 1, padded = 1;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t start = out_coord_[d] * attrs_.strides[d] - g_.pad_begin[d];
        const int64_t step = attrs_.dilations[d];
        const int64_t k = attrs_.kernel_shape[d];
        // First kernel tap at or after 0, and how many taps land before g_.in[d].
        const int64_t skip = start < 0 ? (-start + step - 1) / step : 0;
        const int64_t first = start + skip * step;
        const int64_t count =
            first >= g_.in[d] ? 0 : std::min(k - skip, (g_.in[d] - 1 - first) / step + 1);
        first_[d] = first;
        count_[d] = std::max<int64_t>(count, 0);
        index_[d] = 0;
        row += first * row_strides_[d];
        col += first * col_strides_[d];
        total *= count_[d];
        // Taps inside [-pad_begin, in + pad_end): the padded input.
        const int64_t limit = g_.in[d] + g_.pad_end[d];
        padded *= start >= limit ? 0 : std::min(k, (limit - 1 - start) / step + 1);
      }
      begin();
      for (int64_t t = 0; t < total; ++t) {
        visit(row, col);
        for (size_t d = rank; d-- > 0;) {
          const int64_t step = attrs_.dilations[d];
          if (++index_[d] < count_[d]) {
            row += step * row_strides_[d];
            col += step * col_strides_[d];
            break;
          }
          row -= step * row_strides_[d] * (count_[d] - 1);
          col -= step * col_strides_[d] * (count_[d] - 1);
          index_[d] = 0;
        }
      }
      end(o, padded);
      for (size_t d = rank; d-- > 0;) {
        if (++out_coord_[d] < g_.out[d]) break;
        out_coord_[d] = 0;
      }
    }
  }

 private:
  const ConvAttributes& attrs_;
  const PoolGeometry& g_;
  std::vector<int64_t> row_strides_, col_strides_, first_, count_, index_, out_coord_;
};

// Calls pool(walker, c, xc, yc) for each plane c of X (N x C of them): xc its input
// elements, yc its output elements in Y.
template <typename T, typename F>
void for_each_plane(const ConvAttributes& attrs, const PoolGeometry& g, const Tensor& x, Tensor& y,
                    F&& pool) {
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  WindowWalker walker(attrs, g);
  for (int64_t c = 0; c < g.planes; ++c) pool(walker, c, px + c * g.in_size, py + c * g.out_size);
}

class MaxPoolKernel : public OpKernel {
 public:
  explicit MaxPoolKernel(const KernelCreateContext& context)
      : attrs_(ConvAttributes::pool_of_version(context)),
        storage_order_(context.opset() >= 8 ? context.attr_int("storage_order", 0) : 0),
        opset_(context.opset()) {
    if (storage_order_ != 0 && storage_order_ != 1) {
      context.fail("storage_order is {}, must be 0 (row major) or 1 (column major)",
                   storage_order_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const PoolGeometry g = pool_geometry(context, attrs_, x.shape());
    const Shape& y_shape = g.y_shape;
    const DType dtype = x.dtype();
    if (dtype_is_integer(dtype) && dtype != DType::kInt8 && dtype != DType::kUInt8) {
      context.fail("type {} is not supported (needs float16, float, double, int8 or uint8)",
                   dtype_name(dtype));
    }
    if (dtype_is_integer(dtype) && opset_ < 12) {
      context.fail("type {} needs opset 12 or later (model opset is {})", dtype_name(dtype),
                   opset_);
    }
    Tensor& y = context.allocate_output(0, dtype, y_shape);
    const bool want_indices = context.wants_output(1);
    int64_t* indices = nullptr;
    if (want_indices) {
      indices = context.allocate_output(1, DType::kInt64, y_shape).mutable_data<int64_t>();
    }
    dispatch_numeric(dtype, "MaxPool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const int64_t in_size = g.in_size, out_size = g.out_size;
      for_each_plane<T>(attrs_, g, x, y, [&](WindowWalker& walker, int64_t c, const T* xc, T* yc) {
        C best = std::numeric_limits<C>::lowest();
        int64_t best_index = -1;
        bool seen = false;
        walker.run([&] { seen = false; },
                   [&](int64_t row, int64_t col) {
                     const C v = static_cast<C>(xc[row]);
                     // NaN wins so that it propagates; the first maximum keeps its index.
                     if (!seen || v > best || (v != v && best == best)) {
                       best = v;
                       best_index = storage_order_ == 0 ? row : col;
                       seen = true;
                     }
                   },
                   [&](int64_t o, int64_t) {
                     if (!seen) {  // window entirely in the padding
                       best = std::numeric_limits<C>::lowest();
                       best_index = -1;
                     }
                     yc[o] = static_cast<T>(best);
                     if (indices) {
                       indices[c * out_size + o] = best_index < 0 ? -1 : c * in_size + best_index;
                     }
                   });
      });
    });
  }

 private:
  ConvAttributes attrs_;
  int64_t storage_order_;
  int64_t opset_;
};

// com.onnxkit ChannelsLastMaxPool (ops/channels_last_ops.h): MaxPool-12 on int8 / uint8
// X [N, spatial..., C], the windows of MaxPool's walker applied to every channel of a pixel.
class ChannelsLastMaxPoolKernel : public OpKernel {
 public:
  explicit ChannelsLastMaxPoolKernel(const KernelCreateContext& context)
      : attrs_(ConvAttributes::pool(context, true, true)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 3 || (x.dtype() != DType::kUInt8 && x.dtype() != DType::kInt8)) {
      context.fail("X must be int8 or uint8 [N, spatial..., C], got {} {}", dtype_name(x.dtype()),
                   shape_to_string(x.shape()));
    }
    const int64_t channels = x.shape().back();
    Shape planar{x.shape()[0], channels};
    planar.insert(planar.end(), x.shape().begin() + 1, x.shape().end() - 1);
    const PoolGeometry g = pool_geometry(context, attrs_, planar);
    Shape y_shape{x.shape()[0]};
    y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
    y_shape.push_back(channels);
    Tensor& y = context.allocate_output(0, x.dtype(), y_shape);
    auto run = [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> best(static_cast<size_t>(channels));
      WindowWalker walker(attrs_, g);
      for (int64_t n = 0; n < x.shape()[0]; ++n) {
        const T* image = x.data<T>() + n * g.in_size * channels;
        T* out = y.mutable_data<T>() + n * g.out_size * channels;
        // A window entirely in the padding gives the type's lowest value, as MaxPool's.
        walker.run(
            [&] { std::fill(best.begin(), best.end(), std::numeric_limits<T>::lowest()); },
            [&](int64_t row, int64_t) {
              const T* pixel = image + row * channels;
              for (int64_t c = 0; c < channels; ++c) best[c] = std::max(best[c], pixel[c]);
            },
            [&](int64_t o, int64_t) { std::copy(best.begin(), best.end(), out + o * channels); });
      }
    };
    if (x.dtype() == DType::kUInt8) {
      run(uint8_t{});
    } else {
      run(int8_t{});
    }
  }

 private:
  ConvAttributes attrs_;
};

class AveragePoolKernel : public OpKernel {
 public:
  explicit AveragePoolKernel(const KernelCreateContext& context)
      : attrs_(ConvAttributes::pool_of_version(context)),
        count_include_pad_(context.opset() >= 7 && context.attr_int("count_include_pad", 0) != 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const PoolGeometry g = pool_geometry(context, attrs_, x.shape());
    Tensor& y = context.allocate_output(0, x.dtype(), g.y_shape);
    dispatch_float(x.dtype(), "AveragePool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for_each_plane<T>(attrs_, g, x, y, [&](WindowWalker& walker, int64_t, const T* xc, T* yc) {
        double sum = 0;
        int64_t count = 0;
        walker.run([&] { sum = 0, count = 0; },
                   [&](int64_t row, int64_t) {
                     sum += static_cast<double>(xc[row]);
                     ++count;
                   },
                   [&](int64_t o, int64_t padded) {
                     const int64_t divisor = count_include_pad_ ? padded : count;
                     yc[o] = static_cast<T>(divisor > 0 ? sum / static_cast<double>(divisor)
                                                        : std::numeric_limits<double>::quiet_NaN());
                   });
      });
    });
  }

 private:
  ConvAttributes attrs_;
  bool count_include_pad_;
};

// LpPool's p: a float at opset 1, an int from opset 2 on.
double read_p(const KernelCreateContext& context) {
  const Attribute* a = context.node().find_attribute("p");
  double p = 2;
  if (a && a->type == AttrType::kFloat) {
    p = a->f;
  } else if (a) {
    p = static_cast<double>(context.attr_int("p"));
  }
  if (!(p > 0)) context.fail("p is {}, must be > 0", p);
  return p;
}

double lp_term(double v, double p) {
  const double a = std::fabs(v);
  return p == 1 ? a : p == 2 ? a * a : std::pow(a, p);
}

double lp_root(double sum, double p) {
  return p == 1 ? sum : p == 2 ? std::sqrt(sum) : std::pow(sum, 1.0 / p);
}

class LpPoolKernel : public OpKernel {
 public:
  explicit LpPoolKernel(const KernelCreateContext& context)
      : attrs_(ConvAttributes::pool_of_version(context)), p_(read_p(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const PoolGeometry g = pool_geometry(context, attrs_, x.shape());
    Tensor& y = context.allocate_output(0, x.dtype(), g.y_shape);
    dispatch_float(x.dtype(), "LpPool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for_each_plane<T>(attrs_, g, x, y, [&](WindowWalker& walker, int64_t, const T* xc, T* yc) {
        double sum = 0;
        walker.run([&] { sum = 0; },
                   [&](int64_t row, int64_t) { sum += lp_term(static_cast<double>(xc[row]), p_); },
                   [&](int64_t o, int64_t) { yc[o] = static_cast<T>(lp_root(sum, p_)); });
      });
    });
  }

 private:
  ConvAttributes attrs_;
  double p_;
};

enum class GlobalPool { kAverage, kMax, kLp };

// Reduces all spatial dims of (N, C, D1, ...) to 1.
template <GlobalPool kKind>
class GlobalPoolKernel : public OpKernel {
 public:
  explicit GlobalPoolKernel(const KernelCreateContext& context)
      : p_(kKind == GlobalPool::kLp ? read_p(context) : 2.0) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    if (x.rank() < 2) context.fail("input has rank {}, needs at least 2 (N, C, ...)", x.rank());
    Shape y_shape = x.shape();
    std::fill(y_shape.begin() + 2, y_shape.end(), 1);
    const int64_t channels = x.shape()[0] * x.shape()[1];
    const int64_t size = shape_numel(std::span(x.shape()).subspan(2));
    if (kKind == GlobalPool::kMax && size == 0 && channels > 0) {
      context.fail("input {} has no spatial elements to take the maximum of",
                   shape_to_string(x.shape()));
    }
    Tensor& y = context.allocate_output(0, x.dtype(), y_shape);
    dispatch_float(x.dtype(), context.node().op_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t c = 0; c < channels; ++c) {
        const T* xc = px + c * size;
        if constexpr (kKind == GlobalPool::kMax) {
          ComputeType<T> best = static_cast<ComputeType<T>>(xc[0]);
          for (int64_t i = 1; i < size; ++i) {
            const ComputeType<T> v = static_cast<ComputeType<T>>(xc[i]);
            if (v > best || v != v) best = v;
            if (best != best) break;
          }
          py[c] = static_cast<T>(best);
        } else if constexpr (kKind == GlobalPool::kAverage) {
          double sum = 0;
          for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(xc[i]);
          py[c] = static_cast<T>(sum / static_cast<double>(size));
        } else {
          double sum = 0;
          for (int64_t i = 0; i < size; ++i) sum += lp_term(static_cast<double>(xc[i]), p_);
          py[c] = static_cast<T>(lp_root(sum, p_));
        }
      }
    });
  }

 private:
  double p_;
};

// Scatters pooled values back to the positions MaxPool took them from. Indices are
// linear offsets into the output MaxUnpool infers from kernel_shape, strides and pads;
// an explicit output_shape then places that result at its origin (zero-filling or
// cropping), as the ONNX reference and its test data do.
class MaxUnpoolKernel : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const KernelCreateContext& context)
      : kernel_(context.attr_ints("kernel_shape")) {
    if (kernel_.empty()) context.fail("required attribute 'kernel_shape' is missing or empty");
    const size_t rank = kernel_.size();
    strides_ = context.attr_ints("strides", std::vector<int64_t>(rank, 1));
    pads_ = context.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
    if (strides_.size() != rank) {
      context.fail("strides has {} values, kernel_shape has {}", strides_.size(), rank);
    }
    if (pads_.size() != 2 * rank) {
      context.fail("pads has {} values, needs {} (begin and end per axis)", pads_.size(), 2 * rank);
    }
    for (size_t i = 0; i < rank; ++i) {
      if (kernel_[i] < 1) context.fail("kernel_shape[{}] is {}, must be >= 1", i, kernel_[i]);
      if (strides_[i] < 1) context.fail("strides[{}] is {}, must be >= 1", i, strides_[i]);
      if (pads_[i] < 0 || pads_[i + rank] < 0) {
        context.fail("pads {} and {} of axis {} must be >= 0", pads_[i], pads_[i + rank], i);
      }
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& indices = context.input(1);
    const size_t rank = kernel_.size();
    if (x.rank() != rank + 2) {
      context.fail("X has rank {}, kernel_shape needs rank {} (N, C and {} spatial dims)", x.rank(),
                   rank + 2, rank);
    }
    if (indices.shape() != x.shape()) {
      context.fail("I shape {} differs from X shape {}", shape_to_string(indices.shape()),
                   shape_to_string(x.shape()));
    }
    Shape inferred{x.shape()[0], x.shape()[1]};
    for (size_t d = 0; d < rank; ++d) {
      // Strides, pads and kernel come from the model: the arithmetic is checked.
      const std::string what = fmt::format("output dim {}", d + 2);
      const int64_t grown =
          checked_add(checked_mul(x.shape()[d + 2] - 1, strides_[d], what), kernel_[d], what);
      const int64_t size = checked_add(grown, -checked_add(pads_[d], pads_[d + rank], what), what);
      if (size < 0) context.fail("inferred output dim {} is negative ({})", d + 2, size);
      inferred.push_back(size);
    }
    Shape out_shape = inferred;
    if (context.has_input(2)) {
      out_shape = read_int64s(context.input(2), "output_shape");
      if (out_shape.size() != x.rank()) {
        context.fail("output_shape {} must have {} values (the rank of X)",
                     shape_to_string(out_shape), x.rank());
      }
      for (size_t d = 0; d < out_shape.size(); ++d) {
        if (out_shape[d] < 0) context.fail("output_shape[{}] is {}, must be >= 0", d, out_shape[d]);
      }
    }
    const std::vector<int64_t> index = read_int64s(indices, "I");
    const int64_t inferred_size = shape_numel(inferred);
    for (size_t i = 0; i < index.size(); ++i) {
      if (index[i] < 0 || index[i] >= inferred_size) {
        context.fail("I value {} (element {}) is out of range for the unpooled shape {}", index[i],
                     i, shape_to_string(inferred));
      }
    }
    Tensor& y = context.allocate_output(0, x.dtype(), out_shape);
    const bool same = out_shape == inferred;
    // Strides of the inferred layout, for mapping an index into the output's layout.
    const std::vector<int64_t> in_strides = contiguous_strides(inferred);
    const std::vector<int64_t> out_strides = contiguous_strides(out_shape);
    dispatch_float(x.dtype(), "MaxUnpool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (size_t i = 0; i < index.size(); ++i) {
        if (same) {
          py[index[i]] = px[i];
          continue;
        }
        int64_t rest = index[i], offset = 0;
        bool inside = true;
        for (size_t d = 0; d < inferred.size(); ++d) {
          const int64_t coord = rest / in_strides[d];
          rest %= in_strides[d];
          if (coord >= out_shape[d]) inside = false;
          offset += coord * out_strides[d];
        }
        if (inside) py[offset] = px[i];
      }
    });
  }

 private:
  std::vector<int64_t> kernel_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> pads_;
};

// MaxRoiPool (Fast R-CNN's RoI pooling): each region of interest (batch index, x1, y1, x2,
// y2, scaled by spatial_scale and rounded) split into pooled_shape bins, each the maximum of
// its elements (0 for an empty bin), as Caffe and ONNX Runtime compute it.
class MaxRoiPoolKernel : public OpKernel {
 public:
  explicit MaxRoiPoolKernel(const KernelCreateContext& context)
      : pooled_(context.attr_ints("pooled_shape")),
        spatial_scale_(context.attr_float("spatial_scale", 1.0f)) {
    if (pooled_.size() != 2 || pooled_[0] < 1 || pooled_[1] < 1) {
      context.fail("pooled_shape must be two positive values, got {}", shape_to_string(pooled_));
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& rois_t = context.input(1);
    if (x.rank() != 4) {
      context.fail("X must be 4-D (N, C, H, W), got {}", shape_to_string(x.shape()));
    }
    if (rois_t.rank() != 2 || rois_t.shape()[1] != 5) {
      context.fail("rois must have shape [num_rois, 5], got {}", shape_to_string(rois_t.shape()));
    }
    const int64_t batch = x.shape()[0], channels = x.shape()[1];
    const int64_t h = x.shape()[2], w = x.shape()[3];
    const int64_t num_rois = rois_t.shape()[0];
    const int64_t ph = pooled_[0], pw = pooled_[1];
    const std::vector<double> rois = read_doubles(context, rois_t, "rois");
    Tensor& y = context.allocate_output(0, x.dtype(), {num_rois, channels, ph, pw});
    dispatch_float(x.dtype(), "MaxRoiPool", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      for (int64_t r = 0; r < num_rois; ++r) {
        const double* roi = rois.data() + r * 5;
        for (int k = 0; k < 5; ++k) {
          if (!std::isfinite(roi[k])) context.fail("roi {} has a non-finite value {}", r, roi[k]);
        }
        if (roi[0] < 0 || roi[0] >= static_cast<double>(batch)) {
          context.fail("roi {} names batch index {}, X has {}", r, roi[0], batch);
        }
        const auto b = static_cast<int64_t>(roi[0]);
        // Bin edges in image coordinates, clamped to the image.
        // Past 2^52 no image has the pixels: such an edge is refused rather than converted
        // past int64 (and the bin sizes below stay exact).
        auto scaled = [&](double v) {
          const double edge = std::round(v * spatial_scale_);
          if (!(std::abs(edge) <= 0x1p52)) {
            context.fail("roi {} has the coordinate {}, x spatial_scale {} = {}", r, v,
                         spatial_scale_, edge);
          }
          return static_cast<int64_t>(edge);
        };
        const int64_t start_w = scaled(roi[1]), start_h = scaled(roi[2]);
        const int64_t end_w = scaled(roi[3]), end_h = scaled(roi[4]);
        const double bin_h = static_cast<double>(std::max<int64_t>(end_h - start_h + 1, 1)) /
                             static_cast<double>(ph);
        const double bin_w = static_cast<double>(std::max<int64_t>(end_w - start_w + 1, 1)) /
                             static_cast<double>(pw);
        auto clamp_h = [&](double v) {
          return std::clamp<int64_t>(static_cast<int64_t>(v) + start_h, 0, h);
        };
        auto clamp_w = [&](double v) {
          return std::clamp<int64_t>(static_cast<int64_t>(v) + start_w, 0, w);
        };
        for (int64_t c = 0; c < channels; ++c) {
          const T* xc = px + (b * channels + c) * h * w;
          T* yc = py + (r * channels + c) * ph * pw;
          for (int64_t i = 0; i < ph; ++i) {
            const int64_t hs = clamp_h(std::floor(static_cast<double>(i) * bin_h));
            const int64_t he = clamp_h(std::ceil(static_cast<double>(i + 1) * bin_h));
            for (int64_t j = 0; j < pw; ++j) {
              const int64_t ws = clamp_w(std::floor(static_cast<double>(j) * bin_w));
              const int64_t we = clamp_w(std::ceil(static_cast<double>(j + 1) * bin_w));
              ComputeType<T> best = 0;
              if (he > hs && we > ws) {
                best = std::numeric_limits<ComputeType<T>>::lowest();
                for (int64_t yy = hs; yy < he; ++yy) {
                  for (int64_t xx = ws; xx < we; ++xx) {
                    best = std::max(best, static_cast<ComputeType<T>>(xc[yy * w + xx]));
                  }
                }
              }
              yc[i * pw + j] = static_cast<T>(best);
            }
          }
        }
      }
    });
  }

 private:
  std::vector<int64_t> pooled_;
  float spatial_scale_;
};

// Y: X's dtype, [num_rois, C, pooled_shape...].
void infer_max_roi_pool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* rois = input_dims(context, 1);
  const Attribute* pooled = context.node().find_attribute("pooled_shape");
  std::vector<Dim> dims{rois && rois->size() == 2 ? (*rois)[0] : Dim{},
                        x && x->size() == 4 ? (*x)[1] : Dim{}};
  if (pooled && pooled->ints.size() == 2) {
    for (int64_t v : pooled->ints) dims.push_back(Dim::known(v));
  } else {
    dims.resize(4);
  }
  context.set_output(0, tensor_type(dtype, dims));
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// MaxPool, AveragePool, LpPool: [N, C, windows...] (ConvAttributes::window), with the
// attributes each version reads: dilations in MaxPool from 10, AveragePool from 19, LpPool
// from 18; ceil_mode in MaxPool and AveragePool from 10, LpPool from 18. MaxPool's Indices
// are int64 of Y's shape.
void infer_pool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::string& op = context.node().op_type();
  const int64_t opset = context.opset();
  const bool dilations = op == "MaxPool"       ? opset >= 10
                         : op == "AveragePool" ? opset >= 19
                                               : opset >= 18;
  const bool ceil_mode = op == "LpPool" ? opset >= 18 : opset >= 10;
  const ConvAttributes attrs =
      ConvAttributes::pool(attribute_reader(context), dilations, ceil_mode);
  if (dtype == DType::kUndefined) return;  // the attributes are checked all the same
  const size_t rank = attrs.kernel_shape.size() + 2;
  const std::vector<Dim>* x = input_dims(context, 0);
  if (x && x->size() != rank) {
    fail("X has rank {}, kernel_shape needs {}", x->size(), rank);
  }
  std::vector<Dim> out = unknown_dims(rank);
  if (x) {
    out[0] = (*x)[0];
    out[1] = (*x)[1];
    const std::vector<Dim> spatial =
        window_dims(attrs, std::span(*x).subspan(2), known_dims(attrs.kernel_shape));
    std::copy(spatial.begin(), spatial.end(), out.begin() + 2);
  }
  context.set_output(0, tensor_type(dtype, out));
  context.set_output(1, tensor_type(DType::kInt64, std::move(out)));
}

// The global pools: [N, C, 1, ...].
void infer_global_pool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  if (!x) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  if (x->size() < 2) fail("X must have rank >= 2 (N, C, ...), got rank {}", x->size());
  std::vector<Dim> out(x->size(), Dim::known(1));
  out[0] = (*x)[0];
  out[1] = (*x)[1];
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// MaxUnpool: output_shape (input 2) when given, else each spatial dim
// (in - 1) * stride + kernel - pads.
void infer_max_unpool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  if (context.has_input(2)) {
    if (const std::optional<std::vector<int64_t>> shape = input_ints(context, 2)) {
      context.set_output(0, tensor_type(dtype, known_dims(*shape)));
    } else {
      const std::optional<int64_t> rank = input_length(context, 2);
      context.set_output(
          0, tensor_type(dtype, rank ? SymbolicShape(unknown_dims(*rank)) : std::nullopt));
    }
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<int64_t> kernel = attributes.attr_ints("kernel_shape");
  if (kernel.empty()) fail("required attribute 'kernel_shape' is missing or empty");
  const size_t spatial = kernel.size();
  const std::vector<int64_t> strides =
      attributes.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads =
      attributes.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (strides.size() != spatial || pads.size() != 2 * spatial) {
    fail("strides and pads must have {} and {} values", spatial, 2 * spatial);
  }
  const std::vector<Dim>* x = input_dims(context, 0);
  std::vector<Dim> out = unknown_dims(spatial + 2);
  if (x) {
    if (x->size() != spatial + 2)
      fail("X has rank {}, kernel_shape needs {}", x->size(), spatial + 2);
    out[0] = (*x)[0];
    out[1] = (*x)[1];
    for (size_t d = 0; d < spatial; ++d) {
      out[d + 2] = map_dim((*x)[d + 2], [&](int64_t in) {
        constexpr std::string_view what = "MaxUnpool's output dim";
        const int64_t grown = checked_add(checked_mul(in - 1, strides[d], what), kernel[d], what);
        return checked_add(grown, -checked_add(pads[d], pads[d + spatial], what), what);
      });
    }
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// ChannelsLastMaxPool: MaxPool-12's output with the channels last.
void infer_channels_last_max_pool(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const ConvAttributes attrs = ConvAttributes::pool(attribute_reader(context), true, true);
  const std::vector<Dim>* x = input_dims(context, 0);
  if (!x || x->size() != attrs.kernel_shape.size() + 2) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  std::vector<Dim> out{(*x)[0]};
  const std::vector<Dim> spatial =
      window_dims(attrs, std::span(*x).subspan(1, x->size() - 2), known_dims(attrs.kernel_shape));
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(x->back());
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_pool_ops(OpRegistry& registry) {
  // Since-versions as the schemas define them; one kernel reads the attributes its opset
  // has (dilations and ceil_mode from 10, storage_order from 8, int8/uint8 from 12).
  // dilations and ceil_mode from 10 (AveragePool's dilations from 19, LpPool's dilations and
  // ceil_mode from 18: ConvAttributes::pool_of_version); 22 adds bfloat16.
  registry.add("MaxPool", {1, 8, 10, 11, 12, 22}, kernel_factory<MaxPoolKernel>());
  registry.add("AveragePool", {1, 7, 10, 11, 19, 22}, kernel_factory<AveragePoolKernel>());
  registry.add("LpPool", {1, 2, 11, 18, 22}, kernel_factory<LpPoolKernel>());
  registry.add("GlobalAveragePool", {1, 22},
               kernel_factory<GlobalPoolKernel<GlobalPool::kAverage>>());
  registry.add("GlobalMaxPool", {1, 22}, kernel_factory<GlobalPoolKernel<GlobalPool::kMax>>());
  registry.add("GlobalLpPool", {1, 2, 22}, kernel_factory<GlobalPoolKernel<GlobalPool::kLp>>());
  registry.add("MaxUnpool", {9, 11, 22}, kernel_factory<MaxUnpoolKernel>());
  registry.add("MaxRoiPool", {1, 22},
               OpDefinition(kernel_factory<MaxRoiPoolKernel>()).with_types(infer_max_roi_pool));

  registry.add(std::string(kOnnxkitDomain), std::string(kChannelsLastMaxPool), 1,
               OpDefinition(kernel_factory<ChannelsLastMaxPoolKernel>())
                   .with_types(infer_channels_last_max_pool));

  // Type inference, every version.
  registry.set_type_rule("", "MaxPool", infer_pool);
  registry.set_type_rule("", "AveragePool", infer_pool);
  registry.set_type_rule("", "LpPool", infer_pool);
  registry.set_type_rule("", "GlobalAveragePool", infer_global_pool);
  registry.set_type_rule("", "GlobalMaxPool", infer_global_pool);
  registry.set_type_rule("", "GlobalLpPool", infer_global_pool);
  registry.set_type_rule("", "MaxUnpool", infer_max_unpool);
}

}  // namespace onnxkit
