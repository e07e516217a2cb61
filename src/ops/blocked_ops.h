// onnxkit's blocked-layout operators (domain "com.onnxkit", version 1): the contract between
// the `layout` level's convert_layout pass (src/passes/convert_layout.cc) that creates them,
// their reference kernels (src/ops/blocked_ops.cc) and their oneDNN kernels
// (src/kernels/dnnl_conv.cc, dnnl_pool.cc).
//
// The blocked layout is oneDNN's nChw16c: a logical NCHW tensor stored as the 5-D tensor
// [N, ceil(C/16), H, W, 16] (element (n, c, h, w) at [n, c/16, h, w, c%16]). When C is no
// multiple of 16 (MobileNet's 24, EfficientNet's 40), the last block's lanes from C on are
// padding and hold zeros: every blocked op keeps them zero, so a conv reading them (whose
// packed weights are zero there) adds nothing, and the channel count a reorder back needs is
// the one the op carries (W's shape, or ReorderFromBlocked's `channels`).
// Blocked tensors are ordinary float32 tensors with that physical shape, so the graph stays
// verifiable, and element-wise ops (Relu, Add of two blocked tensors of one shape, Mul by a
// scalar, ...) and Concat on axis 1 (of unpadded tensors) work on them unchanged, as long as
// they map zeros to zeros where there is padding. Like the fused ops, they only exist inside
// a Session.
//
// ReorderToBlocked(X: [N, C, H, W]) -> Y: [N, ceil(C/16), H, W, 16]
// ReorderFromBlocked(X: [N, ceil(C/16), H, W, 16]) -> Y: [N, C, H, W]
//   attribute channels (int, default: all lanes, 16 * X.shape[1]): C.
//
// BlockedConv(X, W, B?, Z?) -> Y
//   FusedConv (fused_ops.h) with its attributes and meaning, 2-D; Y and Z blocked, X blocked
//   (rank 5) or plain NCHW (rank 4: a chain's first conv, e.g. on an RGB image); W and B in
//   ONNX's layout. X has W.shape[1] * group channels and Y W.shape[0].
// BlockedMaxPool(X) -> Y, BlockedAveragePool(X) -> Y
//   MaxPool (opset 12, no Indices) / AveragePool (opset 11) on blocked X and Y, 2-D; they
//   pool every lane, padding included (zeros pool to zero).
// BlockedGlobalAveragePool(X) -> Y, BlockedGlobalMaxPool(X) -> Y
//   Y blocked [N, ceil(C/16), 1, 1, 16] (the same bytes as the plain [N, 16 * ceil(C/16), 1, 1]).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "onnxkit/tensor.h"

namespace onnxkit {

inline constexpr int64_t kChannelBlock = 16;

inline constexpr std::string_view kReorderToBlocked = "ReorderToBlocked";
inline constexpr std::string_view kReorderFromBlocked = "ReorderFromBlocked";
inline constexpr std::string_view kBlockedConv = "BlockedConv";
inline constexpr std::string_view kChannelsAttribute = "channels";

// Each blocked op beside the op whose attributes and meaning it takes (standard domain,
// except FusedConv).
struct BlockedOp {
  std::string_view blocked;
  std::string_view standard;
};
inline constexpr std::array<BlockedOp, 5> kBlockedOps = {{
    {"BlockedConv", "FusedConv"},
    {"BlockedMaxPool", "MaxPool"},
    {"BlockedAveragePool", "AveragePool"},
    {"BlockedGlobalAveragePool", "GlobalAveragePool"},
    {"BlockedGlobalMaxPool", "GlobalMaxPool"},
}};

// Blocks holding `channels` channels.
inline int64_t channel_blocks(int64_t channels) {
  return (channels + kChannelBlock - 1) / kChannelBlock;
}
// [N, C, H, W] -> [N, ceil(C/16), H, W, 16].
inline Shape blocked_shape(const Shape& plain) {
  return {plain[0], channel_blocks(plain[1]), plain[2], plain[3], kChannelBlock};
}
// [N, B, H, W, 16] -> [N, C, H, W]; C defaults to every lane (16 * B).
inline Shape plain_shape(const Shape& blocked, int64_t channels = -1) {
  return {blocked[0], channels < 0 ? blocked[1] * blocked[4] : channels, blocked[2], blocked[3]};
}
// True for a tensor shape that is a blocked layout (rank 5, last dim 16), of `channels`
// channels when given.
inline bool is_blocked_shape(const Shape& shape, int64_t channels = -1) {
  return shape.size() == 5 && shape[4] == kChannelBlock &&
         (channels < 0 || (channels > 0 && shape[1] == channel_blocks(channels)));
}

// Zeroes the padding lanes (channels from `channels` on) of a float blocked tensor of shape
// `blocked`; for ops whose arithmetic would leave something else there.
void zero_channel_padding(float* data, const Shape& blocked, int64_t channels);

}  // namespace onnxkit
