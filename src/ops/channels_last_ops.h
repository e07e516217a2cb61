// onnxkit's channels-last int8 operator (domain "com.onnxkit", version 1): the contract
// between the `layout` level's int8_channels_last pass (src/passes/int8_channels_last.cc)
// that creates it, its reference kernel (src/ops/quantization.cc) and its oneDNN kernel
// (src/kernels/dnnl_int8.cc). Like the blocked-layout ops (ops/blocked_ops.h) it only
// exists inside a Session.
//
// ChannelsLastQLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
//                         y_zero_point, B?) -> y
//   QLinearConv (opset 10: its inputs, attributes and integer arithmetic) on channels-last
//   activations: x is [N, spatial..., C] and y [N, spatial..., M]; w stays [M, C / group,
//   k...]. ONNX Runtime's com.microsoft QLinearConv with channels_last = 1.
#pragma once

#include <string_view>

namespace onnxkit {

inline constexpr std::string_view kChannelsLastQLinearConv = "ChannelsLastQLinearConv";

}  // namespace onnxkit
