// The shapes of one matrix product op(A) @ op(B) as ONNX MatMul defines it (numpy matmul):
// batch dims broadcast, a 1-D A is promoted to [1, K] and a 1-D B to [K, 1] and the
// promoted dim is dropped from the output. One definition for MatMul, Gemm, FusedMatMul,
// MatMulInteger / QLinearMatMul and the oneDNN matmul kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "onnxkit/tensor.h"
#include "ops/op_utils.h"
#include "ops/type_inference.h"

namespace onnxkit {

struct MatMulShape {
  // op(A) and op(B): promoted to rank >= 2, the last two dims swapped where transposed.
  Shape a, b;
  Shape a_batch, b_batch;  // their leading dims
  Shape batch;             // a_batch and b_batch broadcast
  Shape out;               // batch, then M unless A is 1-D, then N unless B is 1-D
  int64_t m = 0, k = 0, n = 0;
  // The transposes applied: those asked for, except on a 1-D operand.
  bool trans_a = false, trans_b = false;

  // Calls f(index, a_matrix, b_matrix) for each output matrix in order: its index in
  // `batch` and the indices in a_batch and b_batch of the matrices it multiplies.
  template <typename F>
  void for_each_matrix(F&& f) const {
    const std::vector<std::vector<int64_t>> strides{broadcast_strides(a_batch, batch),
                                                    broadcast_strides(b_batch, batch)};
    for_each_broadcast(batch, strides, [&](int64_t index, const int64_t* matrices) {
      f(index, matrices[0], matrices[1]);
    });
  }
};

// The shapes of op(A) @ op(B) for A of shape `a` and B of shape `b`, `trans_*` swapping the
// last two dims of an operand of rank >= 2. Fails naming `node` when an operand is a
// scalar, the inner dims differ or the batch dims do not broadcast.
MatMulShape matmul_shape(const Node& node, const Shape& a, const Shape& b, bool trans_a = false,
                         bool trans_b = false);

// The same for type inference, on symbolic dims: op(A) @ op(B)'s output dims (unknown where
// they depend on an unknown dim). Fails when an operand is a scalar, the known inner dims
// differ or the batch dims do not broadcast.
std::vector<Dim> matmul_dims(std::vector<Dim> a, std::vector<Dim> b, bool trans_a = false,
                             bool trans_b = false);

}  // namespace onnxkit
