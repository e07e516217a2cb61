// Op family: spatial data movement and resampling (Pad, CenterCropPad, Resize, Upsample,
// DepthToSpace, SpaceToDepth; GridSample and AffineGrid are in grid_sample.cc).
//
// Pure data movement (Pad, DepthToSpace, SpaceToDepth, nearest resampling) works on element
// storage of the dtype's byte size, so every dtype the schemas allow (complex and string
// included) takes the same path. Linear and cubic resampling are separable: the input is
// interpolated axis by axis in double precision, each axis with precomputed taps.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/resource_limits.h"
#include "core/status.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/resampling.h"
#include "ops/type_inference.h"

namespace onnxkit {
namespace {

// Fills `out`, laid out row-major over the lengths of `offsets`, with
// in[offsets[0][o_0] + ... + offsets[r-1][o_r-1]], or with `fill` where any term is
// negative. Pad, nearest resampling and the block permutations are all this gather.
template <typename T>
class OffsetGather {
 public:
  OffsetGather(const T* in, T* out, const std::vector<std::vector<int64_t>>& offsets, const T& fill)
      : in_(in), out_(out), offsets_(offsets), fill_(fill), block_(offsets.size() + 1, 1) {
    for (size_t d = offsets.size(); d-- > 0;) {
      block_[d] = block_[d + 1] * static_cast<int64_t>(offsets[d].size());
    }
  }

  void run() {
    if (offsets_.empty()) {
      *out_ = in_[0];
      return;
    }
    if (block_[0] == 0) return;
    visit(0, 0);
  }

 private:
  void visit(size_t d, int64_t base) {
    const std::vector<int64_t>& axis = offsets_[d];
    if (d + 1 == offsets_.size()) {
      for (int64_t offset : axis) *out_++ = offset < 0 ? fill_ : in_[base + offset];
      return;
    }
    for (int64_t offset : axis) {
      if (offset < 0) {
        out_ = std::fill_n(out_, block_[d + 1], fill_);
      } else {
        visit(d + 1, base + offset);
      }
    }
  }

  const T* in_;
  T* out_;
  const std::vector<std::vector<int64_t>>& offsets_;
  const T& fill_;
  std::vector<int64_t> block_;  // output elements under one index of each axis
};

// Runs the gather for any dtype; `fill` is a one-element tensor of the same dtype (or
// undefined when no offset is negative).
void gather_elements(const Tensor& in, Tensor& out,
                     const std::vector<std::vector<int64_t>>& offsets, const Tensor& fill,
                     std::string_view what) {
  if (out.numel() == 0) return;
  dispatch_storage(in.dtype(), what, [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S fill_value = fill.defined() ? tensor_elements<S>(fill)[0] : S{};
    OffsetGather<S>(tensor_elements<S>(in), mutable_tensor_elements<S>(out), offsets, fill_value)
        .run();
  });
}

// Reads `in` as a tensor of `view_shape` and writes it with its axes permuted by `perm`
// (output axis i is view axis perm[i]); `out` must already have the output's shape.
void permute_elements(const Tensor& in, Tensor& out, const Shape& view_shape,
                      const std::vector<size_t>& perm, std::string_view what) {
  const std::vector<int64_t> strides = contiguous_strides(view_shape);
  std::vector<std::vector<int64_t>> offsets(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    offsets[i].resize(static_cast<size_t>(view_shape[perm[i]]));
    for (size_t o = 0; o < offsets[i].size(); ++o) {
      offsets[i][o] = static_cast<int64_t>(o) * strides[perm[i]];
    }
  }
  gather_elements(in, out, offsets, Tensor(), what);
}

// ---------------------------------------------------------------------------------------
// Pad

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// 'wrap' from Pad-19 on.
PadMode parse_pad_mode(const KernelCreateContext& context) {
  const std::string mode = context.attr_string("mode", "constant");
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap" && context.opset() >= 19) return PadMode::kWrap;
  context.fail("mode '{}' is not one of constant, reflect, edge{}", mode,
               context.opset() >= 19 ? ", wrap" : "");
}

std::string_view pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::kConstant:
      return "constant";
    case PadMode::kReflect:
      return "reflect";
    case PadMode::kEdge:
      return "edge";
    case PadMode::kWrap:
      return "wrap";
  }
  return "";
}

// Pad-1 and Pad-2 take pads and value as attributes; Pad-11 and later take inputs, and
// Pad-18 and later an optional axes input that the pads refer to (default: every axis).
class PadKernel : public OpKernel {
 public:
  explicit PadKernel(const KernelCreateContext& context)
      : mode_(parse_pad_mode(context)),
        pads_from_input_(context.opset() >= 11),
        axes_input_(context.opset() >= 18) {
    if (!pads_from_input_) {
      const char* name = context.opset() >= 2 ? "pads" : "paddings";
      auto pads = context.attr_ints_opt(name);
      if (!pads) context.fail("required attribute '{}' is missing", name);
      pads_ = *pads;
      value_ = context.attr_float("value", 0.0f);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const int64_t rank = static_cast<int64_t>(data.rank());
    std::vector<int64_t> pads = pads_;
    if (pads_from_input_) pads = read_int64s(context.input(1), "Pad pads");
    if (axes_input_ && context.has_input(3)) pads = pads_of_axes(context, pads, rank);
    if (static_cast<int64_t>(pads.size()) != 2 * rank) {
      context.fail("pads has {} values, expected 2 * rank = {} for input shape {}", pads.size(),
                   2 * rank, shape_to_string(data.shape()));
    }

    Shape out_shape(data.rank());
    std::vector<std::vector<int64_t>> offsets(data.rank());
    const std::vector<int64_t> strides = contiguous_strides(data.shape());
    bool needs_fill = false;
    // Negative pads crop first; the positive ones then pad what is left.
    auto padded_dim = [&](int64_t d, int64_t& first, int64_t& kept, int64_t& before) {
      const int64_t dim = data.shape()[d];
      const int64_t begin = pads[d];
      const int64_t end = pads[d + rank];
      first = begin < 0 ? checked_mul(begin, -1, "pads") : 0;
      kept = checked_add(checked_add(dim, -first, "pads"), end < 0 ? end : 0, "pads");
      if (kept < 0) {
        context.fail("pads {} and {} crop more than dim {} of size {}", begin, end, d, dim);
      }
      before = std::max<int64_t>(0, begin);
      return checked_add(checked_add(kept, before, "pads"), std::max<int64_t>(0, end), "pads");
    };
    // The whole output is checked against the run's bounds before the per-axis tables.
    for (int64_t d = 0; d < rank; ++d) {
      int64_t first = 0, kept = 0, before = 0;
      out_shape[d] = padded_dim(d, first, kept, before);
    }
    check_allocation(
        checked_nbytes(data.dtype(), shape_numel(out_shape), shape_to_string(out_shape)));
    for (int64_t d = 0; d < rank; ++d) {
      int64_t first = 0, kept = 0, before = 0;
      const int64_t out_dim = padded_dim(d, first, kept, before);
      if (kept == 0 && out_dim > 0 && mode_ != PadMode::kConstant) {
        context.fail("{} mode cannot pad dim {}, which is empty after cropping",
                     pad_mode_name(mode_), d);
      }
      out_shape[d] = out_dim;
      std::vector<int64_t>& axis = offsets[d];
      axis.resize(static_cast<size_t>(out_dim));
      for (int64_t o = 0; o < out_dim; ++o) {
        int64_t j = o - before;  // index into the cropped axis
        if (j < 0 || j >= kept) {
          if (mode_ == PadMode::kConstant) {
            axis[o] = -1;
            needs_fill = true;
            continue;
          }
          if (mode_ == PadMode::kEdge) {
            j = std::clamp<int64_t>(j, 0, kept - 1);
          } else if (mode_ == PadMode::kWrap) {
            j = ((j % kept) + kept) % kept;
          } else {
            j = reflect(j, kept);
          }
        }
        axis[o] = (first + j) * strides[d];
      }
    }

    Tensor fill;
    if (needs_fill) fill = constant_value(context, data.dtype());
    Tensor& out = context.allocate_output(0, data.dtype(), out_shape);
    gather_elements(data, out, offsets, fill, "Pad");
  }

 private:
  // Pads given for the axes input's axes only, spread to 2 * rank values (0 elsewhere).
  static std::vector<int64_t> pads_of_axes(const KernelContext& context,
                                           const std::vector<int64_t>& pads, int64_t rank) {
    const std::vector<int64_t> axes = read_int64s(context.input(3), "Pad axes");
    const size_t n = axes.size();
    if (pads.size() != 2 * n) {
      context.fail("pads has {} values, expected 2 * {} for the {} axes given", pads.size(), n, n);
    }
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < n; ++i) {
      const int64_t axis = normalize_axis(axes[i], rank, "Pad axes");
      if (seen[axis]) context.fail("axes names axis {} twice", axis);
      seen[axis] = true;
      full[axis] = pads[i];
      full[axis + rank] = pads[n + i];
    }
    return full;
  }

  // numpy's 'reflect': mirrored on the first and last values, repeating as needed.
  static int64_t reflect(int64_t j, int64_t size) {
    if (size == 1) return 0;
    const int64_t period = 2 * (size - 1);
    int64_t m = j % period;
    if (m < 0) m += period;
    return m < size ? m : period - m;
  }

  Tensor constant_value(const KernelContext& context, DType dtype) const {
    Tensor fill(dtype, {});
    if (pads_from_input_) {
      if (!context.has_input(2)) return fill;  // 0, empty string or false
      const Tensor& value = context.input(2);
      if (value.dtype() != dtype) {
        context.fail("constant_value has type {}, data has type {}", dtype_name(value.dtype()),
                     dtype_name(dtype));
      }
      if (value.numel() == 0) return fill;
      if (value.numel() != 1) {
        context.fail("constant_value must be a scalar, got shape {}",
                     shape_to_string(value.shape()));
      }
      dispatch_storage(dtype, "Pad", [&](auto tag) {
        using S = typename decltype(tag)::type;
        mutable_tensor_elements<S>(fill)[0] = tensor_elements<S>(value)[0];
      });
      return fill;
    }
    if (dtype == DType::kString) context.fail("the value attribute cannot pad a string tensor");
    if (dtype == DType::kComplex64 || dtype == DType::kComplex128) {
      context.fail("the value attribute cannot pad a {} tensor", dtype_name(dtype));
    }
    dispatch_numeric_bool(dtype, "Pad", [&](auto tag) {
      using T = typename decltype(tag)::type;
      fill.mutable_data<T>()[0] = convert_element<T>(value_);
    });
    return fill;
  }

  PadMode mode_;
  bool pads_from_input_;
  bool axes_input_;
  std::vector<int64_t> pads_;
  float value_ = 0.0f;
};

// ---------------------------------------------------------------------------------------
// DepthToSpace / SpaceToDepth

int64_t parse_blocksize(const KernelCreateContext& context) {
  const int64_t blocksize = context.attr_int("blocksize");
  if (blocksize <= 0) context.fail("blocksize must be positive, got {}", blocksize);
  return blocksize;
}

void check_rank4(const KernelContext& context, const Tensor& input) {
  if (input.rank() != 4) {
    context.fail("input must have rank 4 (N, C, H, W), got shape {}",
                 shape_to_string(input.shape()));
  }
}

class DepthToSpaceKernel : public OpKernel {
 public:
  explicit DepthToSpaceKernel(const KernelCreateContext& context)
      : blocksize_(parse_blocksize(context)) {
    // Opset 1 has no mode attribute: it is always DCR.
    const std::string mode = context.opset() >= 11 ? context.attr_string("mode", "DCR") : "DCR";
    if (mode != "DCR" && mode != "CRD") context.fail("mode '{}' is not DCR or CRD", mode);
    crd_ = mode == "CRD";
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    check_rank4(context, input);
    const Shape& s = input.shape();
    const int64_t b = blocksize_;
    const int64_t b2 = checked_mul(b, b, "blocksize^2");
    if (s[1] % b2 != 0) {
      context.fail("channels {} are not divisible by blocksize^2 = {}", s[1], b2);
    }
    const int64_t c = s[1] / b2;
    Tensor& out = context.allocate_output(
        0, input.dtype(),
        {s[0], c, checked_mul(s[2], b, "H x blocksize"), checked_mul(s[3], b, "W x blocksize")});
    if (crd_) {  // (N, C', b, b, H, W) -> (N, C', H, b, W, b)
      permute_elements(input, out, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3}, "DepthToSpace");
    } else {  // (N, b, b, C', H, W) -> (N, C', H, b, W, b)
      permute_elements(input, out, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2}, "DepthToSpace");
    }
  }

 private:
  int64_t blocksize_;
  bool crd_ = false;
};

// SpaceToDepth-28 adds DepthToSpace's mode attribute; before, the order is always DCR.
class SpaceToDepthKernel : public OpKernel {
 public:
  explicit SpaceToDepthKernel(const KernelCreateContext& context)
      : blocksize_(parse_blocksize(context)) {
    const std::string mode = context.opset() >= 28 ? context.attr_string("mode", "DCR") : "DCR";
    if (mode != "DCR" && mode != "CRD") context.fail("mode '{}' is not DCR or CRD", mode);
    crd_ = mode == "CRD";
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    check_rank4(context, input);
    const Shape& s = input.shape();
    const int64_t b = blocksize_;
    if (s[2] % b != 0 || s[3] % b != 0) {
      context.fail("spatial dims {}x{} are not divisible by blocksize {}", s[2], s[3], b);
    }
    const int64_t h = s[2] / b;
    const int64_t w = s[3] / b;
    const int64_t channels =
        checked_mul(s[1], checked_mul(b, b, "blocksize^2"), "channels x blocksize^2");
    Tensor& out = context.allocate_output(0, input.dtype(), {s[0], channels, h, w});
    if (crd_) {  // (N, C, H', b, W', b) -> (N, C, b, b, H', W')
      permute_elements(input, out, {s[0], s[1], h, b, w, b}, {0, 1, 3, 5, 2, 4}, "SpaceToDepth");
    } else {  // (N, C, H', b, W', b) -> (N, b, b, C, H', W')
      permute_elements(input, out, {s[0], s[1], h, b, w, b}, {0, 3, 5, 1, 2, 4}, "SpaceToDepth");
    }
  }

 private:
  int64_t blocksize_;
  bool crd_ = false;
};

// ---------------------------------------------------------------------------------------
// Resize / Upsample

enum class InterpMode { kNearest, kLinear, kCubic };
enum class CoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
// kSimple is the rounding of Upsample and Resize-10: floor up, ceil when downsampling.
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct ResizeOptions {
  InterpMode mode = InterpMode::kNearest;
  CoordMode coord = CoordMode::kAsymmetric;
  NearestMode nearest = NearestMode::kSimple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  // Resize-18: linear and cubic downsampling widen their filter by 1 / scale.
  bool antialias = false;
};

InterpMode parse_interp_mode(const KernelCreateContext& context, bool allow_cubic) {
  const std::string mode = context.attr_string("mode", "nearest");
  if (mode == "nearest") return InterpMode::kNearest;
  if (mode == "linear") return InterpMode::kLinear;
  if (mode == "cubic" && allow_cubic) return InterpMode::kCubic;
  context.fail("mode '{}' is not one of nearest, linear{}", mode, allow_cubic ? ", cubic" : "");
}

// Where output coordinate x of an axis samples the input (spec of Resize-11/13/19).
// `length_resized` is the output length, or input length * scale when scales are given
// (what the ONNX reference and its test data use); `out` is the integer output length.
double original_coordinate(CoordMode coord, double x, double scale, double length_resized,
                           int64_t out, int64_t length_original, double roi_start, double roi_end) {
  const double original = static_cast<double>(length_original);
  switch (coord) {
    case CoordMode::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      // Centres the sampled span when the output length was rounded down.
      const double adjustment = static_cast<double>(out) / length_resized;
      return original / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case CoordMode::kPytorchHalfPixel:
      return length_resized > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::kAlignCorners:
      return length_resized == 1 ? 0.0 : x * (original - 1) / (length_resized - 1);
    case CoordMode::kAsymmetric:
      return x / scale;
    case CoordMode::kTfHalfPixelForNn:
      return (x + 0.5) / scale;
    case CoordMode::kTfCropAndResize:
      if (length_resized > 1) {
        return roi_start * (original - 1) +
               x * (roi_end - roi_start) * (original - 1) / (length_resized - 1);
      }
      return 0.5 * (roi_start + roi_end) * (original - 1);
  }
  return x;
}

int64_t nearest_index(NearestMode mode, double x, bool downsampling) {
  const double floor_x = std::floor(x);
  const double frac = x - floor_x;
  const auto low = static_cast<int64_t>(floor_x);
  if (frac == 0) return low;
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return frac <= 0.5 ? low : low + 1;
    case NearestMode::kRoundPreferCeil:
      return frac < 0.5 ? low : low + 1;
    case NearestMode::kFloor:
      return low;
    case NearestMode::kCeil:
      return low + 1;
    case NearestMode::kSimple:
      return downsampling ? low + 1 : static_cast<int64_t>(x);
  }
  return low;
}

// Keys' cubic convolution kernel at distance x.
double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// How one axis is resampled: for each output index, `taps` input indices and weights.
struct AxisPlan {
  int64_t out = 0;
  bool identity = true;
  int taps = 1;
  std::vector<int64_t> index;  // out * taps; -1 marks an extrapolated output
  std::vector<double> weight;  // out * taps
};

// With antialias, a linear or cubic filter stretched by 1 / scale when downsampling: the
// taps at integer distance k from floor(x) for k in [start, 1 - start], each weighted by the
// kernel at (i - x) * scale, normalized to sum 1 (as the ONNX reference computes them).
void antialias_taps(const ResizeOptions& options, double x, double scale, int64_t in, int taps,
                    int64_t* index, double* weight) {
  const double s = std::min(scale, 1.0);
  const auto x0 = static_cast<int64_t>(std::floor(x));
  // An integral x sits at ratio 1 of the cell left of it.
  const int64_t base = x == std::floor(x) ? x0 - 1 : x0;
  const int64_t start = 1 - taps / 2;
  double total = 0;
  for (int t = 0; t < taps; ++t) {
    const int64_t i = base + start + t;
    const double d = (static_cast<double>(i) - x) * s;
    weight[t] = options.mode == InterpMode::kLinear ? std::clamp(1 - std::fabs(d), 0.0, 1.0)
                                                    : cubic_kernel(d, options.cubic_a);
    total += weight[t];
    index[t] = i;
  }
  if (total != 0) {
    for (int t = 0; t < taps; ++t) weight[t] /= total;
  }
  total = 0;
  for (int t = 0; t < taps; ++t) {
    if (options.exclude_outside && (index[t] < 0 || index[t] >= in)) weight[t] = 0;
    total += weight[t];
    index[t] = std::clamp<int64_t>(index[t], 0, in - 1);  // outside samples repeat the edge
  }
  if (options.exclude_outside && total != 0) {
    for (int t = 0; t < taps; ++t) weight[t] /= total;
  }
}

// The taps per output of an antialiased filter: 2 - 2 * start, start = floor(-r / s) + 1
// for a kernel of radius r (linear 1, cubic 2) and s = min(scale, 1).
int antialias_tap_count(const ResizeOptions& options, double scale) {
  const double radius = options.mode == InterpMode::kLinear ? 1.0 : 2.0;
  const double start = std::floor(-radius / std::min(scale, 1.0)) + 1;
  // A scale of 1e-300 (or a size of 0) would ask for more taps than an int counts.
  if (!(start > -0x1p30)) {
    fail("an antialiased resize by the scale {} needs over 2^31 taps per output", scale);
  }
  return static_cast<int>(2 - 2 * static_cast<int64_t>(start));
}

AxisPlan plan_axis(const ResizeOptions& options, int64_t in, int64_t out, double scale,
                   double length_resized, double roi_start, double roi_end) {
  AxisPlan plan;
  plan.out = out;
  const bool antialias = options.antialias && options.mode != InterpMode::kNearest;
  // An empty axis plans no taps (its scale may be 1e-45, whose filter no int counts).
  plan.taps = antialias && out > 0                   ? antialias_tap_count(options, scale)
              : antialias                            ? 1
              : options.mode == InterpMode::kNearest ? 1
              : options.mode == InterpMode::kLinear  ? 2
                                                     : 4;
  plan.identity = in == out;
  const int64_t entries = checked_mul(out, plan.taps, "the resize plan's taps");
  check_allocation(static_cast<size_t>(checked_mul(
      entries, static_cast<int64_t>(sizeof(int64_t) + sizeof(double)), "the resize plan's taps")));
  plan.index.resize(static_cast<size_t>(entries));
  plan.weight.assign(static_cast<size_t>(entries), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t* index = &plan.index[static_cast<size_t>(o * plan.taps)];
    double* weight = &plan.weight[static_cast<size_t>(o * plan.taps)];
    const double x = original_coordinate(options.coord, static_cast<double>(o), scale,
                                         length_resized, out, in, roi_start, roi_end);
    if (x != static_cast<double>(o)) plan.identity = false;
    if (options.coord == CoordMode::kTfCropAndResize &&
        (x < 0 || x > static_cast<double>(in - 1))) {
      std::fill_n(index, plan.taps, -1);
      plan.identity = false;
      continue;
    }
    if (antialias) {
      antialias_taps(options, x, scale, in, plan.taps, index, weight);
      if (scale < 1) plan.identity = false;
      continue;
    }
    if (options.mode == InterpMode::kNearest || x == std::floor(x)) {
      // One source element (an integral coordinate hits a sample exactly).
      const int64_t source = options.mode == InterpMode::kNearest
                                 ? nearest_index(options.nearest, x, scale < 1)
                                 : static_cast<int64_t>(x);
      std::fill_n(index, plan.taps, std::clamp<int64_t>(source, 0, in - 1));
      weight[0] = 1.0;
      continue;
    }
    // The neighbours sit left of x first: x = i0 + ratio with ratio in (0, 1).
    const auto i0 = static_cast<int64_t>(std::floor(x));
    const double ratio = x - static_cast<double>(i0);
    int64_t first = i0;
    if (options.mode == InterpMode::kLinear) {
      weight[0] = 1 - ratio;
      weight[1] = ratio;
    } else {
      cubic_coefficients(ratio, options.cubic_a, weight);
      first = i0 - 1;
    }
    double total = 0;
    for (int t = 0; t < plan.taps; ++t) {
      const int64_t i = first + t;
      if (options.exclude_outside && (i < 0 || i >= in)) weight[t] = 0;
      total += weight[t];
      index[t] = std::clamp<int64_t>(i, 0, in - 1);  // outside samples repeat the edge
    }
    if (options.exclude_outside && total != 0) {
      for (int t = 0; t < plan.taps; ++t) weight[t] /= total;
    }
  }
  return plan;
}

// A one-element tensor of `dtype` holding `value` (the nearest-mode extrapolation value).
Tensor scalar_of(DType dtype, double value) {
  Tensor t(dtype, {});
  if (dtype == DType::kString) return t;
  if (dtype == DType::kComplex64) {
    t.mutable_data<float>()[0] = static_cast<float>(value);
  } else if (dtype == DType::kComplex128) {
    t.mutable_data<double>()[0] = value;
  } else {
    dispatch_numeric_bool(dtype, "Resize", [&](auto tag) {
      using T = typename decltype(tag)::type;
      t.mutable_data<T>()[0] = convert_element<T>(value);
    });
  }
  return t;
}

// Resamples `x` to `out_shape`. `scales` has one entry per axis; `from_sizes` says the
// output shape was given (so the resized length is exact); `roi` is empty or 2 * rank.
void resize_tensor(KernelContext& context, const ResizeOptions& options, const Tensor& x,
                   const Shape& out_shape, const std::vector<double>& scales, bool from_sizes,
                   const std::vector<double>& roi) {
  const size_t rank = x.rank();
  Tensor& out = context.allocate_output(0, x.dtype(), out_shape);
  if (out.numel() == 0) return;
  if (x.numel() == 0) {
    context.fail("cannot resize an empty input of shape {} to shape {}", shape_to_string(x.shape()),
                 shape_to_string(out_shape));
  }
  std::vector<AxisPlan> plans;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = x.shape()[d];
    const double length_resized =
        from_sizes ? static_cast<double>(out_shape[d]) : scales[d] * static_cast<double>(in);
    const double roi_start = roi.empty() ? 0.0 : roi[d];
    const double roi_end = roi.empty() ? 1.0 : roi[d + rank];
    // An axis kept as it is (scale 1, whole roi) is not resampled, whatever the coordinate
    // mode would make of it (the reference skips it too).
    if (out_shape[d] == in && std::fabs(scales[d] - 1) < 1e-12 && roi_start == 0 && roi_end == 1) {
      AxisPlan& plan = plans.emplace_back();
      plan.out = in;
      plan.index.resize(static_cast<size_t>(in));
      for (int64_t i = 0; i < in; ++i) plan.index[static_cast<size_t>(i)] = i;
      plan.weight.assign(static_cast<size_t>(in), 1.0);
      continue;
    }
    plans.push_back(
        plan_axis(options, in, out_shape[d], scales[d], length_resized, roi_start, roi_end));
  }

  if (options.mode == InterpMode::kNearest) {
    const std::vector<int64_t> strides = contiguous_strides(x.shape());
    std::vector<std::vector<int64_t>> offsets(rank);
    bool extrapolates = false;
    for (size_t d = 0; d < rank; ++d) {
      offsets[d] = plans[d].index;
      for (int64_t& i : offsets[d]) {
        if (i < 0) {
          extrapolates = true;
        } else {
          i *= strides[d];
        }
      }
    }
    if (extrapolates && x.dtype() == DType::kString) {
      context.fail("tf_crop_and_resize cannot extrapolate a string tensor");
    }
    gather_elements(x, out, offsets,
                    extrapolates ? scalar_of(x.dtype(), options.extrapolation) : Tensor(),
                    "Resize");
    return;
  }

  if (!dtype_is_float(x.dtype()) && !dtype_is_integer(x.dtype())) {
    context.fail("{} mode needs a numeric input, got {}",
                 options.mode == InterpMode::kLinear ? "linear" : "cubic", dtype_name(x.dtype()));
  }
  dispatch_numeric(x.dtype(), "Resize", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    std::vector<double> current(static_cast<size_t>(x.numel()));
    for (size_t i = 0; i < current.size(); ++i) current[i] = convert_element<double>(src[i]);
    Shape shape = x.shape();
    std::vector<double> next;
    // Separable: interpolate one axis at a time over rows of `inner` contiguous elements.
    for (size_t d = 0; d < rank; ++d) {
      const AxisPlan& plan = plans[d];
      if (plan.identity) continue;
      int64_t outer = 1;
      int64_t inner = 1;
      for (size_t k = 0; k < d; ++k) outer *= shape[k];
      for (size_t k = d + 1; k < rank; ++k) inner *= shape[k];
      const int64_t in = shape[d];
      next.assign(static_cast<size_t>(outer * plan.out * inner), 0.0);
      for (int64_t o = 0; o < outer; ++o) {
        const double* src_rows = current.data() + o * in * inner;
        for (int64_t j = 0; j < plan.out; ++j) {
          double* dst = next.data() + (o * plan.out + j) * inner;
          const int64_t* index = &plan.index[static_cast<size_t>(j * plan.taps)];
          const double* weight = &plan.weight[static_cast<size_t>(j * plan.taps)];
          if (index[0] < 0) {
            std::fill_n(dst, inner, options.extrapolation);
            continue;
          }
          for (int t = 0; t < plan.taps; ++t) {
            if (weight[t] == 0) continue;
            const double w = weight[t];
            const double* row = src_rows + index[t] * inner;
            for (int64_t k = 0; k < inner; ++k) dst[k] += w * row[k];
          }
        }
      }
      current.swap(next);
      shape[d] = plan.out;
    }
    T* dst = out.mutable_data<T>();
    for (size_t i = 0; i < current.size(); ++i) dst[i] = from_double<T>(current[i]);
  });
}

// Output shape and per-axis scales from a scales list (output = floor(input * scale)).
Shape shape_from_scales(const KernelContext& context, const Tensor& x,
                        const std::vector<double>& scales, bool upsample_only) {
  if (scales.size() != x.rank()) {
    context.fail("scales has {} values, expected one per axis of the rank-{} input", scales.size(),
                 x.rank());
  }
  Shape out(x.rank());
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d])) {
      context.fail("scale {} of axis {} must be a positive number", scales[d], d);
    }
    if (upsample_only && scales[d] < 1) {
      context.fail("scale {} of axis {} is below 1 (Upsample only enlarges)", scales[d], d);
    }
    const double size = std::floor(scales[d] * static_cast<double>(x.shape()[d]));
    if (size >= 9.2e18) {
      context.fail("scale {} of axis {} makes a dim of {:.3g}, past int64", scales[d], d, size);
    }
    out[d] = static_cast<int64_t>(size);
  }
  return out;
}

// Upsample-1 (NCHW, height_scale and width_scale; mode nearest or bilinear), Upsample-7
// (scales attribute) and Upsample-9/10 (scales input): asymmetric coordinates.
class UpsampleKernel : public OpKernel {
 public:
  explicit UpsampleKernel(const KernelCreateContext& context)
      : scales_from_input_(context.opset() >= 9) {
    if (context.opset() < 7) {
      // Version 1's bilinear is Upsample-7's linear over the two spatial axes (what onnx's
      // version converter turns it into).
      const std::string mode = context.attr_string("mode", "nearest");
      if (mode != "nearest" && mode != "bilinear") {
        context.fail("mode '{}' is not one of nearest, bilinear", mode);
      }
      options_.mode = mode == "nearest" ? InterpMode::kNearest : InterpMode::kLinear;
      scales_ = {1.0, 1.0, context.attr_float("height_scale"), context.attr_float("width_scale")};
      return;
    }
    options_.mode = parse_interp_mode(context, false);
    if (!scales_from_input_) {
      if (!context.has_attribute("scales")) context.fail("required attribute 'scales' is missing");
      for (float s : context.attr_floats("scales")) scales_.push_back(s);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    std::vector<double> scales =
        scales_from_input_ ? read_doubles(context, context.input(1), "scales") : scales_;
    const Shape out_shape = shape_from_scales(context, x, scales, true);
    resize_tensor(context, options_, x, out_shape, scales, false, {});
  }

 private:
  ResizeOptions options_;
  bool scales_from_input_;
  std::vector<double> scales_;
};

enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

// Resize-10 (X, scales; Upsample's sampling), Resize-11 (X, roi, scales, sizes?),
// Resize-13 (roi and scales optional), Resize-18 (antialias, axes, keep_aspect_ratio_policy)
// and Resize-19 (half_pixel_symmetric).
class ResizeKernel : public OpKernel {
 public:
  explicit ResizeKernel(const KernelCreateContext& context) : opset_(context.opset()) {
    options_.mode = parse_interp_mode(context, opset_ >= 11);
    if (opset_ < 11) return;  // asymmetric coordinates, simple nearest rounding
    const std::string coord = context.attr_string("coordinate_transformation_mode", "half_pixel");
    if (coord == "half_pixel") {
      options_.coord = CoordMode::kHalfPixel;
    } else if (coord == "half_pixel_symmetric" && opset_ >= 19) {
      options_.coord = CoordMode::kHalfPixelSymmetric;
    } else if (coord == "pytorch_half_pixel") {
      options_.coord = CoordMode::kPytorchHalfPixel;
    } else if (coord == "align_corners") {
      options_.coord = CoordMode::kAlignCorners;
    } else if (coord == "asymmetric") {
      options_.coord = CoordMode::kAsymmetric;
    } else if (coord == "tf_half_pixel_for_nn") {
      options_.coord = CoordMode::kTfHalfPixelForNn;
    } else if (coord == "tf_crop_and_resize") {
      options_.coord = CoordMode::kTfCropAndResize;
    } else {
      context.fail("coordinate_transformation_mode '{}' is not supported", coord);
    }
    const std::string nearest = context.attr_string("nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor") {
      options_.nearest = NearestMode::kRoundPreferFloor;
    } else if (nearest == "round_prefer_ceil") {
      options_.nearest = NearestMode::kRoundPreferCeil;
    } else if (nearest == "floor") {
      options_.nearest = NearestMode::kFloor;
    } else if (nearest == "ceil") {
      options_.nearest = NearestMode::kCeil;
    } else {
      context.fail("nearest_mode '{}' is not supported", nearest);
    }
    options_.cubic_a = context.attr_float("cubic_coeff_a", -0.75f);
    options_.exclude_outside = context.attr_int("exclude_outside", 0) != 0;
    options_.extrapolation = context.attr_float("extrapolation_value", 0.0f);
    if (opset_ < 18) return;
    options_.antialias = context.attr_int("antialias", 0) != 0;
    if (context.has_attribute("axes")) axes_ = context.attr_ints("axes");
    const std::string policy = context.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      policy_ = AspectPolicy::kStretch;
    } else if (policy == "not_larger") {
      policy_ = AspectPolicy::kNotLarger;
    } else if (policy == "not_smaller") {
      policy_ = AspectPolicy::kNotSmaller;
    } else {
      context.fail("keep_aspect_ratio_policy '{}' is not stretch, not_larger or not_smaller",
                   policy);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const size_t rank = x.rank();
    if (opset_ < 11) {
      std::vector<double> scales = read_doubles(context, context.input(1), "scales");
      const Shape out_shape = shape_from_scales(context, x, scales, false);
      resize_tensor(context, options_, x, out_shape, scales, false, {});
      return;
    }
    // Omitted and empty inputs both mean "not given".
    auto given = [&](size_t i) { return context.has_input(i) && context.input(i).numel() > 0; };
    // The axes that roi, scales and sizes describe (all of them unless axes says otherwise).
    std::vector<size_t> axes;
    std::vector<bool> resized(rank, axes_.empty());
    if (axes_.empty()) {
      for (size_t d = 0; d < rank; ++d) axes.push_back(d);
    } else {
      for (int64_t a : axes_) {
        const auto d = static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(rank), "axes"));
        if (resized[d]) context.fail("axes names axis {} twice", d);
        resized[d] = true;
        axes.push_back(d);
      }
    }
    const size_t n = axes.size();
    std::vector<double> roi;
    if (options_.coord == CoordMode::kTfCropAndResize) {
      if (!given(1)) context.fail("tf_crop_and_resize needs the roi input");
      const std::vector<double> values = read_doubles(context, context.input(1), "roi");
      if (values.size() != 2 * n) {
        context.fail("roi has {} values, expected 2 * {} (starts and ends of the resized axes)",
                     values.size(), n);
      }
      roi.assign(rank, 0.0);
      roi.resize(2 * rank, 1.0);
      for (size_t i = 0; i < n; ++i) {
        roi[axes[i]] = values[i];
        roi[axes[i] + rank] = values[i + n];
      }
    }
    const bool has_scales = given(2);
    const bool has_sizes = given(3);
    if (has_scales && has_sizes) context.fail("scales and sizes are both given; give only one");
    if (!has_scales && !has_sizes) context.fail("one of scales and sizes must be given");
    std::vector<double> scales(rank, 1.0);
    if (has_scales) {
      const std::vector<double> values = read_doubles(context, context.input(2), "scales");
      if (values.size() != n) {
        context.fail("scales has {} values, expected one per {}", values.size(), axes_text(rank));
      }
      for (size_t i = 0; i < n; ++i) scales[axes[i]] = values[i];
      const Shape out_shape = shape_from_scales(context, x, scales, false);
      resize_tensor(context, options_, x, out_shape, scales, false, roi);
      return;
    }
    const std::vector<int64_t> sizes = read_int64s(context.input(3), "Resize sizes");
    if (sizes.size() != n) {
      context.fail("sizes has {} values, expected one per {}", sizes.size(), axes_text(rank));
    }
    Shape out_shape = x.shape();
    for (size_t i = 0; i < n; ++i) {
      const size_t d = axes[i];
      if (sizes[i] < 0) context.fail("sizes value {} of axis {} is negative", sizes[i], d);
      const int64_t in = x.shape()[d];
      out_shape[d] = sizes[i];
      scales[d] = in == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in);
    }
    if (policy_ == AspectPolicy::kStretch) {
      resize_tensor(context, options_, x, out_shape, scales, true, roi);
      return;
    }
    // One scale for every resized axis: the smallest (the output fits inside sizes) or the
    // largest (it covers sizes); each length rounds half up.
    double scale = scales[axes[0]];
    for (size_t d : axes) {
      scale = policy_ == AspectPolicy::kNotLarger ? std::min(scale, scales[d])
                                                  : std::max(scale, scales[d]);
    }
    for (size_t d : axes) {
      scales[d] = scale;
      // One axis's size over its length scales every other: past int64 is an error.
      out_shape[d] = checked_int64(std::floor(scale * static_cast<double>(x.shape()[d]) + 0.5),
                                   "a resized dim");
    }
    resize_tensor(context, options_, x, out_shape, scales, false, roi);
  }

 private:
  // What roi, scales and sizes have one value (roi two) per.
  std::string axes_text(size_t rank) const {
    return axes_.empty() ? fmt::format("axis of the rank-{} input", rank)
                         : fmt::format("axis in axes ({} of them)", axes_.size());
  }

  int64_t opset_;
  ResizeOptions options_;
  std::vector<int64_t> axes_;  // Resize-18's axes attribute; empty: every axis
  AspectPolicy policy_ = AspectPolicy::kStretch;
};

// ---------------------------------------------------------------------------------------
// CenterCropPad (opset 18): each named axis cropped or zero-padded to its length, centred
// (the odd element goes to the end).

class CenterCropPadKernel : public OpKernel {
 public:
  explicit CenterCropPadKernel(const KernelCreateContext& context)
      : axes_(context.attr_ints("axes")) {}

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const std::vector<int64_t> shape = read_int64s(context.input(1), "CenterCropPad shape");
    const auto rank = static_cast<int64_t>(data.rank());
    std::vector<int64_t> axes = axes_;
    if (axes.empty()) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    if (shape.size() != axes.size()) {
      context.fail("shape has {} values, expected one per axis ({})", shape.size(), axes.size());
    }
    Shape out_shape = data.shape();
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t axis = normalize_axis(axes[i], rank, "CenterCropPad axes");
      if (seen[axis]) context.fail("axes names axis {} twice", axis);
      seen[axis] = true;
      if (shape[i] < 0) context.fail("shape[{}] is {}, must be >= 0", i, shape[i]);
      out_shape[axis] = shape[i];
    }
    // The whole output is checked against the run's bounds before the per-axis tables its
    // dims size (a shape of [2^31, 2^31] had built 32 GiB of them).
    check_allocation(
        checked_nbytes(data.dtype(), shape_numel(out_shape), shape_to_string(out_shape)));
    const std::vector<int64_t> strides = contiguous_strides(data.shape());
    std::vector<std::vector<int64_t>> offsets(data.rank());
    bool needs_fill = false;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t in = data.shape()[d], out = out_shape[d];
      // Output index o reads input o + shift: a crop starts inside, a pad before the input.
      const int64_t shift = in >= out ? (in - out) / 2 : -((out - in) / 2);
      std::vector<int64_t>& axis = offsets[d];
      axis.resize(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o) {
        const int64_t i = o + shift;
        if (i < 0 || i >= in) {
          axis[o] = -1;
          needs_fill = true;
        } else {
          axis[o] = i * strides[d];
        }
      }
    }
    Tensor& out = context.allocate_output(0, data.dtype(), out_shape);
    gather_elements(data, out, offsets, needs_fill ? Tensor(data.dtype(), {}) : Tensor(),
                    "CenterCropPad");
  }

 private:
  std::vector<int64_t> axes_;
};

// output: input's dtype and rank; the named axes take shape's values when it is constant.
void infer_center_crop_pad(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(dtype, std::nullopt));
    return;
  }
  const auto rank = static_cast<int64_t>(dims->size());
  std::vector<int64_t> axes;
  if (const Attribute* a = context.node().find_attribute("axes")) axes = a->ints;
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const std::optional<std::vector<int64_t>> shape = input_ints(context, 1);
  if (shape && shape->size() != axes.size()) {
    fail("shape has {} values, expected one per axis ({})", shape->size(), axes.size());
  }
  std::vector<Dim> out = *dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalize_axis(axes[i], rank, "CenterCropPad axes");
    out[axis] = shape ? Dim::known((*shape)[i]) : Dim{};
  }
  context.set_output(0, tensor_type(dtype, out));
}

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// Pad: each dim grows by its two pads (an attribute before opset 11, named `paddings` in
// opset 1; input 1 from 11, over the axes of input 3 from 18).
void infer_pad(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  const size_t rank = dims->size();
  std::optional<std::vector<int64_t>> pads;
  std::vector<int64_t> axes;
  if (context.opset() < 11) {
    pads = attribute_reader(context).attr_ints(context.opset() >= 2 ? "pads" : "paddings");
  } else {
    pads = input_ints(context, 1);
    if (context.has_input(3)) {
      const std::optional<std::vector<int64_t>> given = input_ints(context, 3);
      if (!given) pads.reset();
      if (given) axes = *given;
    }
  }
  if (!pads) {
    context.set_output(0, tensor_type(dtype, unknown_dims(rank)));
    return;
  }
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (pads->size() != 2 * axes.size()) {
    fail("pads has {} values, needs {} (2 per padded axis)", pads->size(), 2 * axes.size());
  }
  std::vector<Dim> out = *dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t d = rule_axis(axes[i], rank, "axes");
    // pads are a model's numbers: past int64 is an error, as in the kernel.
    const int64_t grow = checked_add((*pads)[i], (*pads)[i + axes.size()], "pads");
    if (grow != 0) {
      out[d] = map_dim(out[d], [&](int64_t value) { return checked_add(value, grow, "pads"); });
    }
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// DepthToSpace [N, C, H, W] -> [N, C / b^2, H * b, W * b]; SpaceToDepth the other way.
template <bool kToSpace>
void infer_depth_space(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(dtype, unknown_dims(4)));
    return;
  }
  if (dims->size() != 4) fail("input must have rank 4, got {}", dims->size());
  const int64_t b = attribute_reader(context).attr_int("blocksize");
  if (b <= 0) fail("blocksize must be positive, got {}", b);
  const int64_t b2 = checked_mul(b, b, "blocksize^2");
  const auto grow = [&](int64_t value) { return checked_mul(value, b, "a dim x blocksize"); };
  const auto shrink = [&](int64_t value) { return value / b; };
  const auto grow2 = [&](int64_t value) { return checked_mul(value, b2, "a dim x blocksize^2"); };
  const auto shrink2 = [&](int64_t value) { return value / b2; };
  std::vector<Dim> out{(*dims)[0]};
  if (kToSpace) {
    out.push_back(map_dim((*dims)[1], shrink2));
    out.push_back(map_dim((*dims)[2], grow));
    out.push_back(map_dim((*dims)[3], grow));
  } else {
    out.push_back(map_dim((*dims)[1], grow2));
    out.push_back(map_dim((*dims)[2], shrink));
    out.push_back(map_dim((*dims)[3], shrink));
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// A dim resized by `scale`: floor(scale * dim), as the kernels size their outputs
// (shape_from_scales).
Dim scaled_dim(const Dim& dim, double scale) {
  if (scale == 1.0) return dim;
  return map_dim(dim, [&](int64_t value) {
    return checked_int64(std::floor(scale * static_cast<double>(value)), "a scaled dim");
  });
}

// Upsample: each dim times its scale (an attribute in opset 7, input 1 from 9; version 1's
// height_scale and width_scale scale dims 2 and 3 of NCHW).
void infer_upsample(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  std::optional<std::vector<double>> scales;
  if (context.opset() < 7) {
    const KernelCreateContext attributes = attribute_reader(context);
    scales = {1.0, 1.0, attributes.attr_float("height_scale"),
              attributes.attr_float("width_scale")};
  } else if (context.opset() < 9) {
    const std::vector<float> floats = attribute_reader(context).attr_floats("scales");
    scales.emplace(floats.begin(), floats.end());
  } else {
    scales = input_doubles(context, 1);
  }
  std::vector<Dim> out(dims->size());
  if (scales) {
    if (scales->size() != dims->size()) {
      fail("scales has {} values, the input has rank {}", scales->size(), dims->size());
    }
    for (size_t d = 0; d < out.size(); ++d) out[d] = scaled_dim((*dims)[d], (*scales)[d]);
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Resize: scales (input 1 in opset 10, 2 from 11) or sizes (input 3) over every axis, or
// over `axes` (opset 18); sizes with keep_aspect_ratio_policy (18) scale every axis named
// by one factor. An empty scales or sizes input counts as absent.
void infer_resize(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  const size_t rank = dims->size();
  const KernelCreateContext attributes = attribute_reader(context);
  std::vector<int64_t> axes = attributes.attr_ints("axes");
  if (axes.empty()) {
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  std::vector<Dim> out = *dims;
  const auto is_empty = [&](size_t i) {
    const ValueType* type = context.input_type(i);
    return !context.has_input(i) ||
           (type && type->shape && type->shape->size() == 1 && (*type->shape)[0] == Dim::known(0));
  };
  const size_t scales_input = context.opset() < 11 ? 1 : 2;
  if (!is_empty(scales_input)) {
    const std::optional<std::vector<double>> scales = input_doubles(context, scales_input);
    if (scales && !scales->empty()) {
      if (scales->size() != axes.size()) {
        fail("scales has {} values for {} axes", scales->size(), axes.size());
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        const size_t d = rule_axis(axes[i], rank, "axes");
        out[d] = scaled_dim((*dims)[d], (*scales)[i]);
      }
      context.set_output(0, tensor_type(dtype, std::move(out)));
      return;
    }
    if (!scales) {
      for (int64_t axis : axes) out[rule_axis(axis, rank, "axes")] = Dim{};
      context.set_output(0, tensor_type(dtype, std::move(out)));
      return;
    }
  }
  const std::optional<std::vector<int64_t>> sizes =
      context.opset() >= 11 ? input_ints(context, 3) : std::nullopt;
  if (!sizes || sizes->empty()) {
    for (int64_t axis : axes) out[rule_axis(axis, rank, "axes")] = Dim{};
    context.set_output(0, tensor_type(dtype, std::move(out)));
    return;
  }
  if (sizes->size() != axes.size()) {
    fail("sizes has {} values for {} axes", sizes->size(), axes.size());
  }
  const std::string policy = attributes.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) {
      out[rule_axis(axes[i], rank, "axes")] = Dim::known((*sizes)[i]);
    }
  } else {
    // One scale for every axis named: the smallest (not_larger) or largest (not_smaller)
    // ratio; each size is then round(scale * dim), halves to even as numpy rounds.
    // (A plain double and a flag: g++ 12 calls an engaged std::optional<double> read here
    // maybe-uninitialized.)
    double scale = 0;
    bool scale_known = true;
    for (size_t i = 0; i < axes.size() && scale_known; ++i) {
      const Dim& dim = (*dims)[rule_axis(axes[i], rank, "axes")];
      if (!dim.is_known() || dim.value == 0) {
        scale_known = false;
        break;
      }
      const double ratio = static_cast<double>((*sizes)[i]) / static_cast<double>(dim.value);
      if (i == 0) scale = ratio;
      if (policy == "not_larger") scale = std::min(scale, ratio);
      if (policy == "not_smaller") scale = std::max(scale, ratio);
    }
    for (int64_t axis : axes) {
      const size_t d = rule_axis(axis, rank, "axes");
      out[d] = scale_known ? map_dim((*dims)[d],
                                     [scale](int64_t value) {
                                       return checked_int64(
                                           std::nearbyint(scale * static_cast<double>(value)),
                                           "a scaled dim");
                                     })
                           : Dim{};
    }
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_spatial_ops(OpRegistry& registry) {
  registry.add("Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25}, kernel_factory<PadKernel>());
  registry.add("DepthToSpace", {1, 11, 13, 28}, kernel_factory<DepthToSpaceKernel>());
  registry.add("SpaceToDepth", {1, 13, 28}, kernel_factory<SpaceToDepthKernel>());
  // Upsample 10 only deprecated the op (Resize replaces it); its semantics are 9's.
  registry.add("Upsample", {1, 7, 9, 10}, kernel_factory<UpsampleKernel>());
  registry.add("Resize", {10, 11, 13, 18, 19}, kernel_factory<ResizeKernel>());
  registry.add(
      "CenterCropPad", {18},
      OpDefinition(kernel_factory<CenterCropPadKernel>()).with_types(infer_center_crop_pad));

  // Type inference, every version.
  registry.set_type_rule("", "Pad", infer_pad);
  registry.set_type_rule("", "DepthToSpace", infer_depth_space<true>);
  registry.set_type_rule("", "SpaceToDepth", infer_depth_space<false>);
  registry.set_type_rule("", "Upsample", infer_upsample);
  registry.set_type_rule("", "Resize", infer_resize);
}

}  // namespace onnxkit
