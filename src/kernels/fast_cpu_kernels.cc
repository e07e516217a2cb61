// The fast CPU kernels' one registration entry point, and the broadcasting-as-rows plan
// they share (fast_kernel_util.h).
#include "kernels/fast_kernel_util.h"
#include "ops/op_utils.h"

namespace onnxkit {

void register_fast_cpu_kernels(OpRegistry& registry) {
  register_fast_elementwise_kernels(registry);
  register_fast_normalization_kernels(registry);
  register_fast_movement_kernels(registry);
  register_fast_cast_kernels(registry);
  register_fast_quantize_kernels(registry);
  register_fast_qlinear_kernels(registry);
}

BroadcastRows::BroadcastRows(const Shape& out_shape, const std::vector<const Shape*>& input_shapes)
    : inputs_(input_shapes.size()) {
  if (inputs_ > kMaxInputs) fail("BroadcastRows: {} inputs, at most {}", inputs_, kMaxInputs);
  std::vector<std::vector<int64_t>> strides;
  for (const Shape* shape : input_shapes) strides.push_back(broadcast_strides(*shape, out_shape));
  // Dims of size 1 move nothing.
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, kMaxInputs>> dim_strides;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    dims.push_back(out_shape[d]);
    std::array<int64_t, kMaxInputs> s{};
    for (size_t k = 0; k < inputs_; ++k) s[k] = strides[k][d];
    dim_strides.push_back(s);
  }
  if (dims.empty()) return;  // one element
  // The innermost dim, widened while every input continues it the same way.
  size_t d = dims.size() - 1;
  inner_ = dims[d];
  inner_stride_ = dim_strides[d];
  while (d > 0) {
    bool continues = true;
    for (size_t k = 0; k < inputs_; ++k) {
      continues = continues && dim_strides[d - 1][k] == inner_stride_[k] * inner_;
    }
    if (!continues) break;
    --d;
    inner_ *= dims[d];
  }
  // The remaining dims, merged where an outer dim steps over a whole inner one.
  for (size_t e = 0; e < d; ++e) {
    bool merges = !outer_dims_.empty();
    for (size_t k = 0; merges && k < inputs_; ++k) {
      merges = outer_strides_.back()[k] == dim_strides[e][k] * dims[e];
    }
    if (merges) {
      outer_dims_.back() *= dims[e];
      outer_strides_.back() = dim_strides[e];
    } else {
      outer_dims_.push_back(dims[e]);
      outer_strides_.push_back(dim_strides[e]);
    }
  }
  for (int64_t dim : outer_dims_) rows_ *= dim;
}

void BroadcastRows::row_offsets(int64_t row, std::array<int64_t, kMaxInputs>& offsets) const {
  offsets.fill(0);
  for (size_t d = outer_dims_.size(); d-- > 0;) {
    const int64_t index = row % outer_dims_[d];
    row /= outer_dims_[d];
    for (size_t k = 0; k < inputs_; ++k) offsets[k] += index * outer_strides_[d][k];
  }
}

}  // namespace onnxkit
