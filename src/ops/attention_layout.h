// Where com.onnxkit Attention's operands live in memory (ops/fused_ops.h): its q_perm,
// k_perm, v_perm and y_perm attributes fold the Transposes around it (pass
// fuse_transpose_into_attention), so the kernels index each operand through strides.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "onnxkit/tensor.h"
#include "ops/kernel.h"

namespace onnxkit {

// A 4-D operand in the op's logical order: Q [B, H, Sq, D], K [B, H, Sk, D] (also when
// k_transposed), V [B, H, Sk, Dv], Y [B, H, Sq, Dv]; strides in elements.
struct AttentionView {
  std::array<int64_t, 4> dims{};
  std::array<int64_t, 4> strides{};
  Shape shape() const { return Shape(dims.begin(), dims.end()); }
};

class AttentionLayout {
 public:
  // Reads and checks the attributes; fails naming the node when a perm is not one of 4 axes.
  explicit AttentionLayout(const KernelCreateContext& context);

  // Input 0, 1 or 2 (Q, K, V) as stored in `stored` (rank 4, which callers check).
  AttentionView input_view(size_t input, const Shape& stored) const;
  // The stored shape of Y for logical dims [B, H, Sq, Dv], and the logical view of it.
  Shape output_shape(const std::array<int64_t, 4>& logical) const;
  AttentionView output_view(const std::array<int64_t, 4>& logical) const;

  bool k_transposed() const { return k_transposed_; }
  // The perm of operand i (0-2: Q, K, V; 3: Y).
  const std::array<int64_t, 4>& perm(size_t operand) const { return perms_.at(operand); }

 private:
  std::array<std::array<int64_t, 4>, 4> perms_{};  // q, k, v, y
  bool k_transposed_ = false;
};

}  // namespace onnxkit
