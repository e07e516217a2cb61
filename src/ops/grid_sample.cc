// Op family: sampling grids. GridSample reads X at the grid's normalized coordinates
// (nearest, linear or cubic, with zeros, border or reflection padding); AffineGrid makes the
// grid of an affine transform.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/resampling.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// ---------------------------------------------------------------------------------------
// GridSample

enum class GridMode { kBilinear, kNearest, kBicubic };
// The spatial dims GridSample takes (a grid of more would not fit in memory anyway).
constexpr size_t kMaxGridRank = 8;
enum class GridPadding { kZeros, kBorder, kReflection };

// Reflects x into [lo, hi] (repeatedly, as a mirror at each bound does).
double reflect_coordinate(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double d = x < lo ? lo - x : x - hi;
  const double flips = std::floor(d / range);
  const double r = d - flips * range;
  const bool even = std::fmod(flips, 2.0) == 0;
  if (x < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

// One input element (offset in the channel's volume, or -1 for a zero) and its weight.
struct GridTap {
  int64_t offset;
  double weight;
};

// GridSample-16 (4-D X; modes bilinear, nearest, bicubic) and GridSample-20 and later (X of
// rank >= 3, any number of spatial dims; the modes renamed linear, nearest, cubic).
class GridSampleKernel : public OpKernel {
 public:
  explicit GridSampleKernel(const KernelCreateContext& context)
      : align_corners_(context.attr_int("align_corners", 0) != 0), nd_(context.opset() >= 20) {
    const std::string linear = nd_ ? "linear" : "bilinear";
    const std::string cubic = nd_ ? "cubic" : "bicubic";
    const std::string mode = context.attr_string("mode", linear);
    mode_name_ = mode;
    if (mode == linear) {
      mode_ = GridMode::kBilinear;
    } else if (mode == "nearest") {
      mode_ = GridMode::kNearest;
    } else if (mode == cubic) {
      mode_ = GridMode::kBicubic;
    } else {
      context.fail("mode is '{}', must be '{}', 'nearest' or '{}'", mode, linear, cubic);
    }
    const std::string padding = context.attr_string("padding_mode", "zeros");
    if (padding == "zeros") {
      padding_ = GridPadding::kZeros;
    } else if (padding == "border") {
      padding_ = GridPadding::kBorder;
    } else if (padding == "reflection") {
      padding_ = GridPadding::kReflection;
    } else {
      context.fail("padding_mode is '{}', must be 'zeros', 'border' or 'reflection'", padding);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Tensor& grid = context.input(1);
    if (nd_ ? x.rank() < 3 : x.rank() != 4) {
      context.fail("X must be {}, got {}", nd_ ? "(N, C, D1, ...)" : "4-D (N, C, H, W)",
                   shape_to_string(x.shape()));
    }
    const size_t rank = x.rank() - 2;  // spatial dims
    if (rank > kMaxGridRank) {
      context.fail("X has {} spatial dims; at most {} are supported", rank, kMaxGridRank);
    }
    if (grid.rank() != x.rank() || grid.shape()[0] != x.shape()[0] ||
        grid.shape().back() != static_cast<int64_t>(rank)) {
      const char* out_dims = rank == 2   ? "H_out, W_out"
                             : rank == 3 ? "D_out, H_out, W_out"
                                         : "the output's spatial dims";
      context.fail("grid must have shape [{}, {}, {}], got {}", x.shape()[0], out_dims, rank,
                   shape_to_string(grid.shape()));
    }
    const int64_t n = x.shape()[0], channels = x.shape()[1];
    const Shape in(x.shape().begin() + 2, x.shape().end());
    Shape y_shape{n, channels};
    y_shape.insert(y_shape.end(), grid.shape().begin() + 1, grid.shape().end() - 1);
    const DType dtype = x.dtype();
    const bool interpolates = mode_ != GridMode::kNearest;
    if (interpolates &&
        (dtype == DType::kString || dtype == DType::kComplex64 || dtype == DType::kComplex128)) {
      context.fail("{} mode needs a real number type, got {}", mode_name_, dtype_name(dtype));
    }
    Tensor& y = context.allocate_output(0, dtype, y_shape);
    if (y.numel() == 0) return;
    std::vector<double> coords(static_cast<size_t>(grid.numel()));
    dispatch_float(grid.dtype(), "GridSample grid", [&](auto tag) {
      using G = typename decltype(tag)::type;
      const G* pg = grid.data<G>();
      for (size_t i = 0; i < coords.size(); ++i) coords[i] = static_cast<double>(pg[i]);
    });
    const int64_t points = shape_numel(std::span(y_shape).subspan(2));
    const int64_t volume = shape_numel(in);
    const size_t per_axis = taps_per_axis();
    size_t per_point = 1;
    for (size_t d = 0; d < rank; ++d) per_point *= per_axis;
    std::vector<GridTap> taps(static_cast<size_t>(points) * per_point);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t p = 0; p < points; ++p) {
        const double* g = coords.data() + (b * points + p) * static_cast<int64_t>(rank);
        plan_point(g, in, taps.data() + static_cast<size_t>(p) * per_point);
      }
      const int64_t in_base = b * channels * volume, out_base = b * channels * points;
      if (interpolates) {
        dispatch_numeric_bool(dtype, "GridSample", [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* px = x.data<T>() + in_base;
          T* py = y.mutable_data<T>() + out_base;
          for (int64_t c = 0; c < channels; ++c) {
            const T* xc = px + c * volume;
            for (int64_t p = 0; p < points; ++p) {
              const GridTap* t = taps.data() + static_cast<size_t>(p) * per_point;
              double sum = 0;
              for (size_t k = 0; k < per_point; ++k) {
                if (t[k].offset >= 0) sum += t[k].weight * static_cast<double>(xc[t[k].offset]);
              }
              py[c * points + p] = from_double<T>(sum);
            }
          }
        });
      } else {
        dispatch_storage(dtype, "GridSample", [&](auto tag) {
          using S = typename decltype(tag)::type;
          const S* px = tensor_elements<S>(x) + in_base;
          S* py = mutable_tensor_elements<S>(y) + out_base;
          for (int64_t c = 0; c < channels; ++c) {
            const S* xc = px + c * volume;
            for (int64_t p = 0; p < points; ++p) {
              const int64_t offset = taps[static_cast<size_t>(p)].offset;
              py[c * points + p] = offset >= 0 ? xc[offset] : S{};
            }
          }
        });
      }
    }
  }

 private:
  size_t taps_per_axis() const {
    return mode_ == GridMode::kNearest ? 1 : mode_ == GridMode::kBilinear ? 2 : 4;
  }

  // Input coordinate of a normalized grid value on an axis of `size` elements.
  double denormalize(double v, int64_t size) const {
    const double n = static_cast<double>(size);
    return align_corners_ ? (v + 1) / 2 * (n - 1) : ((v + 1) * n - 1) / 2;
  }

  // The element index read for integer position `i` of an axis (-1: a zero).
  int64_t tap_index(int64_t i, int64_t size) const {
    if (i >= 0 && i < size) return i;
    if (size <= 0 || padding_ == GridPadding::kZeros) return -1;
    if (padding_ == GridPadding::kReflection) {
      const double lo = align_corners_ ? 0.0 : -0.5;
      const double hi = static_cast<double>(size - 1) - lo;
      i = static_cast<int64_t>(reflect_coordinate(static_cast<double>(i), lo, hi));
    }
    return std::clamp<int64_t>(i, 0, size - 1);
  }

  // The taps of one axis for a grid value `v` (index -1: a zero), taps_per_axis() of them;
  // false when the coordinate is not a number (the point reads zeros).
  bool axis_taps(double v, int64_t size, int64_t* index, double* weight) const {
    double x = denormalize(v, size);
    if (mode_ == GridMode::kNearest) x = std::nearbyint(x);  // ties to even
    // A coordinate outside the image moves inside first (border: clamp; reflection: mirror).
    const double lo = align_corners_ ? 0.0 : -0.5;
    const double hi = static_cast<double>(size - 1) - lo;
    if (x < lo || x > hi) {
      if (padding_ == GridPadding::kBorder) {
        x = std::clamp(x, 0.0, std::max(0.0, static_cast<double>(size - 1)));
      } else if (padding_ == GridPadding::kReflection) {
        x = reflect_coordinate(x, lo, hi);
      }
    }
    if (!std::isfinite(x)) return false;
    // Far outside (zeros padding) every tap reads zero anyway; clamping keeps the integer
    // conversions below defined.
    x = std::clamp(x, -8.0, static_cast<double>(size) + 8);
    if (mode_ == GridMode::kNearest) {
      index[0] = tap_index(static_cast<int64_t>(x), size);
      weight[0] = 1.0;
      return true;
    }
    const double fx = std::floor(x);
    const auto x0 = static_cast<int64_t>(fx);
    const double dx = x - fx;
    if (mode_ == GridMode::kBilinear) {
      index[0] = tap_index(x0, size);
      index[1] = tap_index(x0 + 1, size);
      weight[0] = 1 - dx;
      weight[1] = dx;
      return true;
    }
    cubic_coefficients(dx, -0.75, weight);
    for (int64_t i = 0; i < 4; ++i) index[i] = tap_index(x0 - 1 + i, size);
    return true;
  }

  // The taps of the output point whose grid values are g[0 .. rank) (g[0] is the innermost
  // axis, as x before y): the product of each axis's taps, the innermost axis fastest.
  void plan_point(const double* g, const Shape& in, GridTap* taps) const {
    const size_t rank = in.size();
    const size_t per_axis = taps_per_axis();
    int64_t index[kMaxGridRank][4];
    double weight[kMaxGridRank][4];
    size_t count = 1;
    for (size_t d = 0; d < rank; ++d) count *= per_axis;
    for (size_t d = 0; d < rank; ++d) {
      if (!axis_taps(g[rank - 1 - d], in[d], index[d], weight[d])) {  // NaN reads zeros
        std::fill_n(taps, count, GridTap{-1, 0.0});
        return;
      }
    }
    for (size_t t = 0; t < count; ++t) {
      int64_t offset = 0;
      double w = 1;
      size_t rest = t;
      for (size_t d = rank; d-- > 0;) {
        const size_t k = rest % per_axis;
        rest /= per_axis;
        if (index[d][k] < 0) {
          offset = -1;
          break;
        }
        // Row-major offset: axis d's index times the product of the dims after it.
        int64_t stride = 1;
        for (size_t e = d + 1; e < rank; ++e) stride *= in[e];
        offset += index[d][k] * stride;
        w *= weight[d][k];
      }
      taps[t] = offset < 0 ? GridTap{-1, 0.0} : GridTap{offset, w};
    }
  }

  bool align_corners_;
  bool nd_;  // GridSample-20 and later
  std::string mode_name_;
  GridMode mode_ = GridMode::kBilinear;
  GridPadding padding_ = GridPadding::kZeros;
};

// ---------------------------------------------------------------------------------------
// AffineGrid (opset 20): the sampling grid GridSample reads for an affine map theta.

// The normalized coordinate of index i of an axis of `size` points.
double affine_grid_coordinate(int64_t i, int64_t size, bool align_corners) {
  const double n = static_cast<double>(size);
  if (align_corners) return size == 1 ? -1.0 : -1 + 2.0 * static_cast<double>(i) / (n - 1);
  return -1 + (2.0 * static_cast<double>(i) + 1) / n;
}

class AffineGridKernel : public OpKernel {
 public:
  explicit AffineGridKernel(const KernelCreateContext& context)
      : align_corners_(context.attr_int("align_corners", 0) != 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& theta = context.input(0);
    const std::vector<int64_t> size = read_int64s(context.input(1), "AffineGrid size");
    if (size.size() != 4 && size.size() != 5) {
      context.fail("size must be (N, C, H, W) or (N, C, D, H, W), got {} values", size.size());
    }
    const size_t rank = size.size() - 2;  // 2 or 3 spatial dims
    const auto r = static_cast<int64_t>(rank);
    const int64_t n = size[0];
    if (theta.rank() != 3 || theta.shape()[0] != n || theta.shape()[1] != r ||
        theta.shape()[2] != r + 1) {
      context.fail("theta must have shape [{}, {}, {}] for size {}, got {}", n, r, r + 1,
                   shape_to_string(size), shape_to_string(theta.shape()));
    }
    Shape out_shape{n};
    for (size_t d = 0; d < rank; ++d) {
      if (size[d + 2] < 0) context.fail("size[{}] is {}, must be >= 0", d + 2, size[d + 2]);
      out_shape.push_back(size[d + 2]);
    }
    out_shape.push_back(r);
    const Shape spatial(out_shape.begin() + 1, out_shape.end() - 1);
    const int64_t points = shape_numel(spatial);
    const std::vector<double> t = read_doubles(context, theta, "theta");
    std::vector<double> grid(static_cast<size_t>(n * points * r));
    // The homogeneous base point (x, y[, z], 1), x along the innermost axis.
    std::vector<double> base(rank + 1, 1.0);
    std::vector<int64_t> coord(rank, 0);
    size_t out = 0;
    for (int64_t b = 0; b < n; ++b) {
      const double* tb = t.data() + b * r * (r + 1);
      std::fill(coord.begin(), coord.end(), 0);
      for (int64_t p = 0; p < points; ++p) {
        for (size_t d = 0; d < rank; ++d) {
          base[rank - 1 - d] = affine_grid_coordinate(coord[d], spatial[d], align_corners_);
        }
        for (int64_t k = 0; k < r; ++k) {
          double sum = 0;
          for (int64_t j = 0; j <= r; ++j) sum += tb[k * (r + 1) + j] * base[j];
          grid[out++] = sum;
        }
        for (size_t d = rank; d-- > 0;) {
          if (++coord[d] < spatial[d]) break;
          coord[d] = 0;
        }
      }
    }
    write_doubles(context, 0, theta.dtype(), out_shape, grid);
  }

 private:
  bool align_corners_;
};

// grid: theta's dtype, [N, D1, ..., r] with the spatial dims from size when it is constant.
void infer_affine_grid(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* theta = input_dims(context, 0);
  if (theta && theta->size() != 3) fail("theta must have rank 3, got rank {}", theta->size());
  std::optional<std::vector<int64_t>> size = input_ints(context, 1);
  if (size && size->size() != 4 && size->size() != 5) {
    fail("size must have 4 or 5 values, got {}", size->size());
  }
  if (size) {
    std::vector<Dim> dims{theta ? (*theta)[0] : Dim::known((*size)[0])};
    for (size_t d = 2; d < size->size(); ++d) dims.push_back(Dim::known((*size)[d]));
    dims.push_back(Dim::known(static_cast<int64_t>(size->size()) - 2));
    context.set_output(0, tensor_type(dtype, dims));
    return;
  }
  // Without size, theta's [N, r, r + 1] still gives the rank.
  if (theta && (*theta)[1].is_known()) {
    const int64_t r = (*theta)[1].value;
    if (r != 2 && r != 3) fail("theta has shape [N, {}, ...]: AffineGrid is 2-D or 3-D", r);
    std::vector<Dim> dims{(*theta)[0]};
    dims.resize(static_cast<size_t>(r) + 1);
    dims.push_back(Dim::known(r));
    context.set_output(0, tensor_type(dtype, dims));
    return;
  }
  context.set_output(0, tensor_type(dtype, std::nullopt));
}

// GridSample: [N, C] of X, then the grid's spatial dims ([N, D1.., r] -> [N, C, D1..]).
void infer_grid_sample(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x = input_dims(context, 0);
  const std::vector<Dim>* grid = input_dims(context, 1);
  if (!grid || grid->size() < 3) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  std::vector<Dim> out{(*grid)[0], x && x->size() >= 2 ? (*x)[1] : Dim{}};
  if (x && !x->empty() && (*x)[0].is_known()) out[0] = (*x)[0];
  out.insert(out.end(), grid->begin() + 1, grid->end() - 1);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_grid_sample_ops(OpRegistry& registry) {
  registry.add("GridSample", {16, 20, 22}, kernel_factory<GridSampleKernel>());
  registry.add("AffineGrid", {20},
               OpDefinition(kernel_factory<AffineGridKernel>()).with_types(infer_affine_grid));

  // Type inference, every version.
  registry.set_type_rule("", "GridSample", infer_grid_sample);
}

}  // namespace onnxkit
