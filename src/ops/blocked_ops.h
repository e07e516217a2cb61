// onnxkit's blocked-layout operators (domain "com.onnxkit", version 1): the contract between
// the `layout` level's convert_layout pass (src/passes/convert_layout.cc) that creates them,
// their reference kernels (src/ops/blocked_ops.cc) and their oneDNN kernels
// (src/kernels/dnnl_conv.cc, dnnl_pool.cc).
//
// The blocked layout is oneDNN's nChw16c: a logical NCHW tensor with C a multiple of 16,
// stored as the 5-D tensor [N, C/16, H, W, 16] (element (n, c, h, w) at [n, c/16, h, w, c%16]).
// Blocked tensors are ordinary float32 tensors with that physical shape, so the graph stays
// verifiable, and element-wise ops (Relu, Add of two blocked tensors of one shape, Mul by a
// scalar, ...) and Concat on axis 1 work on them unchanged. Like the fused ops, they only
// exist inside a Session.
//
// ReorderToBlocked(X: [N, C, H, W]) -> Y: [N, C/16, H, W, 16]
// ReorderFromBlocked(X: [N, C/16, H, W, 16]) -> Y: [N, C, H, W]
//
// BlockedConv(X, W, B?, Z?) -> Y
//   FusedConv (fused_ops.h) with its attributes and meaning, 2-D; Y and Z blocked, X blocked
//   (rank 5) or plain NCHW (rank 4: a chain's first conv, e.g. on an RGB image); W and B in
//   ONNX's layout.
// BlockedMaxPool(X) -> Y, BlockedAveragePool(X) -> Y
//   MaxPool (opset 12, no Indices) / AveragePool (opset 11) on blocked X and Y, 2-D.
// BlockedGlobalAveragePool(X) -> Y, BlockedGlobalMaxPool(X) -> Y
//   Y blocked [N, C/16, 1, 1, 16] (the same bytes as the plain [N, C, 1, 1]).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "ir/tensor.h"

namespace onnxkit {

inline constexpr int64_t kChannelBlock = 16;

inline constexpr std::string_view kReorderToBlocked = "ReorderToBlocked";
inline constexpr std::string_view kReorderFromBlocked = "ReorderFromBlocked";
inline constexpr std::string_view kBlockedConv = "BlockedConv";

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

// [N, C, H, W] -> [N, C/16, H, W, 16] (C must be a multiple of 16).
inline Shape blocked_shape(const Shape& plain) {
  return {plain[0], plain[1] / kChannelBlock, plain[2], plain[3], kChannelBlock};
}
// [N, C/16, H, W, 16] -> [N, C, H, W].
inline Shape plain_shape(const Shape& blocked) {
  return {blocked[0], blocked[1] * blocked[4], blocked[2], blocked[3]};
}
// True for a tensor shape that is a blocked layout (rank 5, last dim 16).
inline bool is_blocked_shape(const Shape& shape) {
  return shape.size() == 5 && shape[4] == kChannelBlock;
}

}  // namespace onnxkit
