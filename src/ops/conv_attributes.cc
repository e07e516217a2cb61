#include "ops/conv_attributes.h"

#include <algorithm>
#include <span>
#include <tuple>

#include "core/resource_limits.h"

namespace onnxkit {
namespace {

AutoPad parse_auto_pad(const KernelCreateContext& context) {
  const std::string value = context.attr_string("auto_pad", "NOTSET");
  if (value == "NOTSET" || value.empty()) return AutoPad::kNotSet;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value == "VALID") return AutoPad::kValid;
  context.fail("auto_pad '{}' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", value);
}

void check_at_least(const KernelCreateContext& context, const std::vector<int64_t>& values,
                    std::string_view name, int64_t min) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < min) context.fail("{}[{}] is {}, must be >= {}", name, i, values[i], min);
  }
}

// What both geometries take straight from X, W and the attributes; `out`, `pad_begin`
// and the sizes are left to the op.
ConvGeometry start_geometry(const KernelContext& context, const ConvAttributes& attrs,
                            const Shape& x, const Shape& w, bool transposed,
                            std::string_view x_name, std::string_view w_name) {
  if (const std::string error = attrs.shape_error(x, w, transposed, x_name, w_name);
      !error.empty()) {
    context.fail("{}", error);
  }
  ConvGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  g.maps = transposed ? checked_mul(w[1], attrs.group, "W's dim 1 x group") : w[0];
  g.group = attrs.group;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  for (size_t d = 0; d < g.rank(); ++d) {
    g.strides.push_back(attrs.stride(d));
    g.dilations.push_back(attrs.dilation(d));
  }
  return g;
}

void finish_geometry(ConvGeometry& g) {
  g.in_size = shape_numel(g.in);
  g.out_size = shape_numel(g.out);
  g.kernel_size = shape_numel(g.kernel);
  g.out_shape = {g.batch, g.maps};
  g.out_shape.insert(g.out_shape.end(), g.out.begin(), g.out.end());
}

}  // namespace

ConvAttributes::ConvAttributes(const KernelCreateContext& context)
    : auto_pad(parse_auto_pad(context)),
      group(context.attr_int("group", 1)),
      kernel_shape(context.attr_ints("kernel_shape")),
      strides(context.attr_ints("strides")),
      dilations(context.attr_ints("dilations")),
      pads(context.attr_ints("pads")) {
  if (group < 1) context.fail("group must be >= 1, got {}", group);
  check_at_least(context, strides, "strides", 1);
  check_at_least(context, dilations, "dilations", 1);
  check_at_least(context, pads, "pads", 0);
}

ConvAttributes ConvAttributes::pool(const KernelCreateContext& context, bool with_dilations,
                                    bool with_ceil_mode) {
  ConvAttributes a;
  a.kernel_shape = context.attr_ints("kernel_shape");
  if (a.kernel_shape.empty()) {
    context.fail("required attribute 'kernel_shape' is missing or empty");
  }
  check_at_least(context, a.kernel_shape, "kernel_shape", 1);
  const size_t rank = a.kernel_shape.size();
  a.strides = context.attr_ints("strides");
  a.pads = context.attr_ints("pads");
  if (with_dilations) a.dilations = context.attr_ints("dilations");
  if (a.strides.empty()) a.strides.assign(rank, 1);
  if (a.pads.empty()) a.pads.assign(2 * rank, 0);
  if (a.dilations.empty()) a.dilations.assign(rank, 1);
  if (a.strides.size() != rank) {
    context.fail("strides has {} values, kernel_shape has {}", a.strides.size(), rank);
  }
  if (a.pads.size() != 2 * rank) {
    context.fail("pads has {} values, needs {} (2 per spatial dim)", a.pads.size(), 2 * rank);
  }
  if (a.dilations.size() != rank) {
    context.fail("dilations has {} values, kernel_shape has {}", a.dilations.size(), rank);
  }
  check_at_least(context, a.strides, "strides", 1);
  check_at_least(context, a.dilations, "dilations", 1);
  check_at_least(context, a.pads, "pads", 0);
  a.auto_pad = parse_auto_pad(context);
  a.ceil_mode = with_ceil_mode && context.attr_int("ceil_mode", 0) != 0;
  return a;
}

ConvAttributes ConvAttributes::pool_of_version(const KernelCreateContext& context) {
  const std::string_view op = context.node().op_type();
  const int64_t opset = context.opset();
  if (op == "AveragePool") return pool(context, opset >= 19, opset >= 10);
  if (op == "LpPool") return pool(context, opset >= 18, opset >= 18);
  return pool(context, opset >= 10, opset >= 10);  // MaxPool
}

std::string ConvAttributes::list_error(size_t spatial, std::string_view x_name) const {
  for (const auto& [values, want, name] :
       {std::tuple{&kernel_shape, spatial, "kernel_shape"},
        std::tuple{&strides, spatial, "strides"}, std::tuple{&dilations, spatial, "dilations"},
        std::tuple{&pads, 2 * spatial, "pads"}}) {
    if (!values->empty() && values->size() != want) {
      return fmt::format("{} has {} values but {} has {} spatial dims (needs {})", name,
                         values->size(), x_name, spatial, want);
    }
  }
  return "";
}

std::string ConvAttributes::shape_error(const Shape& x, const Shape& w, bool transposed,
                                        std::string_view x_name, std::string_view w_name) const {
  if (x.size() < 3) {
    return fmt::format("{} must have rank >= 3 (N, C, spatial...), got shape {}", x_name,
                       shape_to_string(x));
  }
  if (w.size() != x.size()) {
    return fmt::format("{} has rank {} but {} has rank {}", w_name, w.size(), x_name, x.size());
  }
  const size_t rank = x.size() - 2;
  const std::span<const int64_t> kernel(w.begin() + 2, w.end());
  if (!kernel_shape.empty() && !std::ranges::equal(kernel_shape, kernel)) {
    return fmt::format("kernel_shape {} does not match {}'s spatial dims {}",
                       shape_to_string(kernel_shape), w_name, shape_to_string(kernel));
  }
  if (std::string error = list_error(rank, x_name); !error.empty()) return error;
  const int64_t channels = x[1];
  if (transposed) {
    if (w[0] != channels) {
      return fmt::format("{} has {} input channels but {} has {}", w_name, w[0], x_name, channels);
    }
    if (channels % group != 0) {
      return fmt::format("{} has {} channels, not divisible by group {}", x_name, channels, group);
    }
    return {};
  }
  int64_t expected = 0;
  if (__builtin_mul_overflow(w[1], group, &expected)) {
    return fmt::format("{}'s dim 1 {} x group {} overflows int64", w_name, w[1], group);
  }
  if (expected != channels) {
    return fmt::format("{} has {} channels but {} expects {} per group x group {} = {}", x_name,
                       channels, w_name, w[1], group, expected);
  }
  if (w[0] % group != 0) {
    return fmt::format("{} has {} output channels, not divisible by group {}", w_name, w[0], group);
  }
  return {};
}

namespace {

// extent(d, kernel), checked: kernel_shape and dilations are a model's numbers.
int64_t checked_extent(const ConvAttributes& attrs, size_t d, int64_t kernel) {
  return checked_add(checked_mul(checked_add(kernel, -1, "kernel_shape"), attrs.dilation(d),
                                 "the window's extent"),
                     1, "the window");
}

int64_t checked_sub(int64_t a, int64_t b, std::string_view what) {
  int64_t difference = 0;
  if (__builtin_sub_overflow(a, b, &difference)) fail("{}: {} - {} overflows int64", what, a, b);
  return difference;
}

}  // namespace

WindowAxis ConvAttributes::window(size_t d, int64_t in, int64_t kernel) const {
  // Strides, dilations and pads are a model's numbers: the arithmetic is checked.
  const int64_t stride = this->stride(d);
  const int64_t extent = checked_extent(*this, d, kernel);
  WindowAxis axis;
  if (same_padding()) {
    axis.out = in / stride + (in % stride != 0 ? 1 : 0);
    const int64_t total = std::max<int64_t>(
        0, checked_add(checked_mul(axis.out - 1, stride, "padding"), extent - in, "padding"));
    axis.pad_begin = auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
    axis.pad_end = total - axis.pad_begin;
    axis.padded = checked_add(in, total, "padding");
    return axis;
  }
  if (auto_pad == AutoPad::kNotSet && !pads.empty()) {
    axis.pad_begin = pads[d];
    axis.pad_end = pads[pads.size() / 2 + d];
  }
  axis.padded = checked_add(checked_add(in, axis.pad_begin, "pads"), axis.pad_end, "pads");
  const int64_t room = checked_add(axis.padded, -extent, "pads");
  if (room < 0) return axis;
  axis.out = (ceil_mode ? room / stride + (room % stride != 0 ? 1 : 0) : room / stride) + 1;
  if (ceil_mode && axis.out > 1 &&
      checked_mul(axis.out - 1, stride, "strides") >= in + axis.pad_begin) {
    --axis.out;
  }
  return axis;
}

ConvTransposeAttributes::ConvTransposeAttributes(const KernelCreateContext& context)
    : output_padding(context.attr_ints("output_padding")),
      output_shape(context.attr_ints("output_shape")),
      extra_pad_at_end(context.opset() >= 11) {}

std::string ConvTransposeAttributes::shape_error(size_t rank) const {
  if (!output_padding.empty() && output_padding.size() != rank) {
    return fmt::format("output_padding has {} values but X has {} spatial dims",
                       output_padding.size(), rank);
  }
  if (!output_shape.empty() && output_shape.size() != rank && output_shape.size() != rank + 2) {
    return fmt::format("output_shape has {} values but X has {} spatial dims", output_shape.size(),
                       rank);
  }
  return {};
}

WindowAxis ConvTransposeAttributes::window(const ConvAttributes& conv, size_t d, size_t rank,
                                           int64_t in, int64_t kernel) const {
  const int64_t stride = conv.stride(d);
  const int64_t adjust = output_padding.empty() ? 0 : output_padding[d];
  WindowAxis axis;
  // As in ConvAttributes::window, the model's numbers are added and multiplied checked.
  axis.padded =
      checked_add(checked_add(checked_mul(stride, in - 1, "strides"), adjust, "output_padding"),
                  checked_extent(conv, d, kernel), "the output");
  if (!output_shape.empty() || conv.same_padding()) {
    axis.out = output_shape.empty() ? checked_mul(in, stride, "strides")
                                    : output_shape[output_shape.size() - rank + d];
    const int64_t total = std::max<int64_t>(0, checked_sub(axis.padded, axis.out, "output_shape"));
    // Where begin gets the smaller half (the odd unit goes to the end).
    const bool small_begin = output_shape.empty() || extra_pad_at_end
                                 ? conv.auto_pad == AutoPad::kSameUpper
                                 : conv.auto_pad != AutoPad::kSameUpper;
    axis.pad_begin = small_begin ? total / 2 : total - total / 2;
    axis.pad_end = total - axis.pad_begin;
    return axis;
  }
  if (conv.auto_pad == AutoPad::kNotSet && !conv.pads.empty()) {
    axis.pad_begin = conv.pads[d];
    axis.pad_end = conv.pads[rank + d];
  }
  axis.out = checked_sub(checked_sub(axis.padded, axis.pad_begin, "pads"), axis.pad_end, "pads");
  return axis;
}

ConvGeometry conv_geometry(const KernelContext& context, const ConvAttributes& attrs,
                           const Shape& x, const Shape& w, std::string_view x_name,
                           std::string_view w_name) {
  ConvGeometry g = start_geometry(context, attrs, x, w, false, x_name, w_name);
  for (size_t d = 0; d < g.rank(); ++d) {
    const WindowAxis axis = attrs.window(d, g.in[d], g.kernel[d]);
    const int64_t extent = attrs.extent(d, g.kernel[d]);
    if (axis.padded < extent) {
      context.fail("kernel extent {} on spatial axis {} exceeds the padded input size {}", extent,
                   d, axis.padded);
    }
    g.pad_begin.push_back(axis.pad_begin);
    g.out.push_back(axis.out);
  }
  finish_geometry(g);
  return g;
}

ConvGeometry conv_transpose_geometry(const KernelContext& context, const ConvAttributes& attrs,
                                     const ConvTransposeAttributes& transpose, const Shape& x,
                                     const Shape& w) {
  ConvGeometry g = start_geometry(context, attrs, x, w, true, "X", "W");
  const size_t rank = g.rank();
  if (const std::string error = transpose.shape_error(rank); !error.empty()) {
    context.fail("{}", error);
  }
  for (size_t d = 0; d < rank; ++d) {
    const WindowAxis axis = transpose.window(attrs, d, rank, g.in[d], g.kernel[d]);
    if (axis.out < 0) {
      context.fail("output size on spatial axis {} would be {} (pads {} + {} exceed {})", d,
                   axis.out, axis.pad_begin, axis.pad_end, axis.padded);
    }
    g.pad_begin.push_back(axis.pad_begin);
    g.out.push_back(axis.out);
  }
  finish_geometry(g);
  return g;
}

std::vector<Dim> window_dims(const ConvAttributes& attrs, std::span<const Dim> in,
                             std::span<const Dim> kernel) {
  // Every rule's windows come through here: lists shorter than the rank would be read past.
  if (const std::string error = attrs.list_error(in.size()); !error.empty()) fail("{}", error);
  std::vector<Dim> out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d].is_known() && d < kernel.size() && kernel[d].is_known()) {
      out[d] = Dim::known(attrs.window(d, in[d].value, kernel[d].value).out);
    }
  }
  return out;
}

void infer_conv_output(TypeInferenceContext& context, size_t x, size_t w, DType dtype) {
  // The attributes are checked even when nothing is known of the inputs.
  const KernelCreateContext attributes = attribute_reader(context);
  const ConvAttributes attrs(attributes);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* x_dims = input_dims(context, x);
  const std::vector<Dim>* w_dims = input_dims(context, w);
  const size_t rank = x_dims ? x_dims->size() : w_dims ? w_dims->size() : 0;
  if (rank == 0) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  if (rank < 3) fail("X must have rank >= 3 (N, C, spatial...), got rank {}", rank);
  if (w_dims && w_dims->size() != rank) {
    fail("W has rank {} but X has rank {}", w_dims->size(), rank);
  }
  if (const std::string error = attrs.list_error(rank - 2); !error.empty()) fail("{}", error);
  std::vector<Dim> kernel =
      attrs.kernel_shape.empty()
          ? (w_dims ? std::vector<Dim>(w_dims->begin() + 2, w_dims->end()) : unknown_dims(rank - 2))
          : known_dims(attrs.kernel_shape);
  std::vector<Dim> out{x_dims ? (*x_dims)[0] : Dim{}, w_dims ? (*w_dims)[0] : Dim{}};
  const std::vector<Dim> spatial =
      x_dims ? window_dims(attrs, std::span(*x_dims).subspan(2), kernel) : unknown_dims(rank - 2);
  out.insert(out.end(), spatial.begin(), spatial.end());
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace onnxkit
