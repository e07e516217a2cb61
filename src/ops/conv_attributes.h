// The window attributes of the convolutions and pools (Conv, ConvTranspose, ConvInteger,
// QLinearConv, com.onnxkit FusedConv, MaxPool, AveragePool, LpPool) and the arithmetic of
// their windows: one definition for the reference kernels and the oneDNN ones.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/resource_limits.h"
#include "onnxkit/tensor.h"
#include "ops/kernel.h"
#include "ops/type_inference.h"

namespace onnxkit {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// Where the windows of one spatial axis lie.
struct WindowAxis {
  int64_t pad_begin = 0, pad_end = 0;  // the padding in effect (declared, or SAME's)
  // The input with both paddings; for ConvTranspose the output before its padding is
  // cropped.
  int64_t padded = 0;
  int64_t out = 0;  // the output size along the axis (0 where no window fits)
};

struct ConvAttributes {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  bool ceil_mode = false;  // pools from opset 10
  // As the node gives them: empty where absent (a convolution's kernel_shape then comes
  // from W); pools fill in the defaults (strides and dilations 1, pads 0).
  std::vector<int64_t> kernel_shape, strides, dilations, pads;

  // Conv, ConvTranspose, ConvInteger, QLinearConv, FusedConv: every list optional; how
  // they fit X and W is checked when those arrive (shape_error).
  explicit ConvAttributes(const KernelCreateContext& context);
  // MaxPool, AveragePool, LpPool: kernel_shape required and every list of its rank;
  // dilations and ceil_mode where the op's version has them.
  static ConvAttributes pool(const KernelCreateContext& context, bool with_dilations,
                             bool with_ceil_mode);
  // The same for MaxPool, AveragePool or LpPool (the node's op type) at the node's opset:
  // dilations from MaxPool-10, AveragePool-19 and LpPool-18; ceil_mode from MaxPool-10,
  // AveragePool-10 and LpPool-18.
  static ConvAttributes pool_of_version(const KernelCreateContext& context);

  bool same_padding() const {
    return auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower;
  }
  int64_t stride(size_t d) const { return strides.empty() ? 1 : strides[d]; }
  int64_t dilation(size_t d) const { return dilations.empty() ? 1 : dilations[d]; }
  // The span of a dilated kernel of `kernel` taps along axis d.
  int64_t extent(size_t d, int64_t kernel) const {
    return checked_add(checked_mul(checked_add(kernel, -1, "a kernel dim"), dilation(d),
                                   "a kernel dim x dilation"),
                       1, "a dilated kernel's extent");
  }

  // Why X and W (named `x_name`, `w_name` in the op's schema) cannot be a convolution's
  // operands under these attributes, or "" when they can: X of rank >= 3 (N, C,
  // spatial...), W of X's rank with kernel_shape's spatial dims, the lists one value (pads
  // two) per spatial dim, and the channels the group splits (W [M, C / group, k...], or
  // ConvTranspose's [C, M / group, k...] when `transposed`).
  std::string shape_error(const Shape& x, const Shape& w, bool transposed = false,
                          std::string_view x_name = "X", std::string_view w_name = "W") const;
  // Why the lists do not fit `spatial` spatial dims of `x_name` (kernel_shape, strides and
  // dilations one value per dim, pads two), or "" when they do or are absent.
  std::string list_error(size_t spatial, std::string_view x_name = "X") const;

  // Spatial axis d of a convolution or pool over `in` elements with a kernel of `kernel`
  // taps. SAME padding gives ceil(in / stride) outputs, the odd padding unit at the end
  // (SAME_UPPER) or the beginning (SAME_LOWER); NOTSET takes the declared pads, VALID
  // none. ceil_mode rounds the count up, but no window starts in the end padding (as
  // PyTorch and ONNX Runtime count). The window fits when padded >= extent(d, kernel).
  WindowAxis window(size_t d, int64_t in, int64_t kernel) const;

 private:
  ConvAttributes() = default;
};

// ConvTranspose's attributes beside its ConvAttributes.
struct ConvTransposeAttributes {
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;  // the spatial dims, or (N, C, spatial...)
  // Where output_shape is given, opset 11 moved the odd padding unit to the end.
  bool extra_pad_at_end = true;

  explicit ConvTransposeAttributes(const KernelCreateContext& context);

  // Why the lists do not fit `rank` spatial dims, or "" when they do.
  std::string shape_error(size_t rank) const;

  // Spatial axis d of `rank` for an input of `in` elements and a kernel of `kernel` taps:
  // the output is output_shape's dim, or in * stride under SAME padding, the full output
  // less the declared pads otherwise; `padded` is the full output. `out` may come out
  // negative (pads larger than the full output).
  WindowAxis window(const ConvAttributes& conv, size_t d, size_t rank, int64_t in,
                    int64_t kernel) const;
};

// One convolution's sizes, laid out once per run for the kernels that walk its windows.
struct ConvGeometry {
  int64_t batch = 0, channels = 0, maps = 0, group = 1;  // N, C, M (output channels), group
  Shape in, out, kernel;  // spatial dims: the image the windows read, the output, W's
  std::vector<int64_t> strides, dilations, pad_begin;
  int64_t in_size = 1, out_size = 1, kernel_size = 1;  // their products
  Shape out_shape;                                     // [N, M, out...]

  size_t rank() const { return in.size(); }
};

// The geometry of a convolution (Conv, ConvInteger, QLinearConv) of X by W; fails naming
// the node where they do not fit the attributes (shape_error) or a kernel exceeds its
// padded input.
ConvGeometry conv_geometry(const KernelContext& context, const ConvAttributes& attrs,
                           const Shape& x, const Shape& w, std::string_view x_name = "X",
                           std::string_view w_name = "W");
// The geometry of ConvTranspose: `in` is X, scattered into `out`, Y's spatial dims.
ConvGeometry conv_transpose_geometry(const KernelContext& context, const ConvAttributes& attrs,
                                     const ConvTransposeAttributes& transpose, const Shape& x,
                                     const Shape& w);

// Type inference (ops/type_inference.h).

// The output dims of the spatial axes of a convolution or pool over `in` with a kernel of
// `kernel` taps (ConvAttributes::window): unknown where the input dim or the kernel is; fails when
// an attribute list does not fit the spatial rank (list_error).
std::vector<Dim> window_dims(const ConvAttributes& attrs, std::span<const Dim> in,
                             std::span<const Dim> kernel);
// A convolution's output (Conv, ConvInteger, QLinearConv, FusedConv): [N, M, spatial...] of
// `dtype` for X input `x` and W input `w`, M being W's first dim, the kernel W's spatial
// dims unless kernel_shape gives it.
void infer_conv_output(TypeInferenceContext& context, size_t x, size_t w, DType dtype);

}  // namespace onnxkit
