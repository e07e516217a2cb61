// onnxkit's channels-last int8 operators (domain "com.onnxkit", version 1): the contract
// between the `layout` level's int8_channels_last pass (src/passes/int8_channels_last.cc)
// that creates them, their reference kernels (src/ops/quantization.cc, src/ops/pool.cc) and
// their fast kernels (src/kernels/dnnl_int8.cc, src/kernels/channels_last_pool.cc). Like the
// blocked-layout ops (ops/blocked_ops.h) they only exist inside a Session.
//
// ChannelsLastQLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
//                         y_zero_point, B?) -> y
//   QLinearConv (opset 10: its inputs, attributes and integer arithmetic) on channels-last
//   activations: x is [N, spatial..., C] and y [N, spatial..., M]; w stays [M, C / group,
//   k...]. ONNX Runtime's com.microsoft QLinearConv with channels_last = 1.
//
// ChannelsLastMaxPool(x) -> y
//   MaxPool (opset 12: its attributes kernel_shape, strides, pads, dilations, ceil_mode,
//   auto_pad; no Indices output) on channels-last int8 / uint8 X [N, spatial..., C].
#pragma once

#include <string_view>

namespace onnxkit {

inline constexpr std::string_view kChannelsLastQLinearConv = "ChannelsLastQLinearConv";
inline constexpr std::string_view kChannelsLastMaxPool = "ChannelsLastMaxPool";

}  // namespace onnxkit
