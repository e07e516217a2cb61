// What the fast CPU kernels (fast_elementwise.cc, fast_normalization.cc, fast_movement.cc)
// share: the reference fallback, work-size thresholds for parallel_for, and broadcasting
// read as rows.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/vector_math.h"
#include "onnxkit/tensor.h"
#include "ops/kernel.h"
#include "ops/registry.h"

namespace onnxkit {

// Registration of each fast kernel file, called by register_fast_cpu_kernels.
void register_fast_elementwise_kernels(OpRegistry& registry);
void register_fast_normalization_kernels(OpRegistry& registry);
void register_fast_movement_kernels(OpRegistry& registry);
void register_fast_cast_kernels(OpRegistry& registry);
void register_fast_quantize_kernels(OpRegistry& registry);
void register_fast_qlinear_kernels(OpRegistry& registry);

// Elements per parallel_for chunk below which threads cost more than they save: a plain
// streaming op (Add) and an op that evaluates a polynomial per element (Erf, Softmax).
inline constexpr int64_t kMinParallelStreaming = 1 << 15;
inline constexpr int64_t kMinParallelCompute = 1 << 12;

// Runs `fallback` (KernelCreateContext::reference_kernel, nullptr when the op has no
// reference kernel) on what the fast kernel declined: other dtypes, unusual attributes, so
// a node never fails for being on the fast tier.
inline void run_fallback(const OpKernel* fallback, KernelContext& context) {
  if (!fallback) {
    const Tensor& x = context.input(0);
    context.fail("input type {} is not supported (float only)", dtype_name(x.dtype()));
  }
  fallback->compute(context);
}

// True when input `i`'s static type is known and is not float32 (the factory can decline).
inline bool known_non_float(const KernelCreateContext& context, size_t i) {
  const Value* value = context.node().input(i);
  return value && value->type().is_tensor() && value->type().elem_type != DType::kUndefined &&
         value->type().elem_type != DType::kFloat;
}

// out = a op b with numpy broadcasting; out_shape is the broadcast shape. Parallel.
void broadcast_binary_f32(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                          const Shape& b_shape, float* out, const Shape& out_shape);

// Broadcasting (numpy rules) of up to kMaxInputs inputs, read as rows: the output is
// `rows` rows of `inner` contiguous elements, and within a row every input is either
// contiguous (inner_stride 1) or one repeated element (inner_stride 0). Dims of size 1 are
// dropped and neighbouring dims that every input walks the same way are merged, so
// [N, C, H, W] + [C, 1, 1] is N * C rows of H * W with the second input repeated, and
// [S, 768] + [768] is S rows with both inputs contiguous.
class BroadcastRows {
 public:
  static constexpr size_t kMaxInputs = 3;

  BroadcastRows(const Shape& out_shape, const std::vector<const Shape*>& input_shapes);

  int64_t rows() const { return rows_; }
  int64_t inner() const { return inner_; }
  int64_t inner_stride(size_t input) const { return inner_stride_[input]; }

  // Calls f(row_offsets, column, count, out_offset) for each run of elements in output
  // [begin, end): row_offsets[k] is input k's element offset of the run's row start (add
  // `column` for contiguous inputs), out_offset the output element of the run's first.
  template <typename F>
  void for_each_run(int64_t begin, int64_t end, F&& f) const;

 private:
  void row_offsets(int64_t row, std::array<int64_t, kMaxInputs>& offsets) const;

  size_t inputs_;
  int64_t rows_ = 1;
  int64_t inner_ = 1;
  std::array<int64_t, kMaxInputs> inner_stride_{};
  std::vector<int64_t> outer_dims_;                             // merged, outermost first
  std::vector<std::array<int64_t, kMaxInputs>> outer_strides_;  // per outer dim, per input
};

template <typename F>
void BroadcastRows::for_each_run(int64_t begin, int64_t end, F&& f) const {
  if (begin >= end) return;
  int64_t row = begin / inner_;
  int64_t column = begin % inner_;
  std::array<int64_t, kMaxInputs> offsets{};
  row_offsets(row, offsets);
  // Odometer over the outer dims (innermost last), advanced once per row.
  std::vector<int64_t> counter(outer_dims_.size());
  for (size_t d = outer_dims_.size(), r = static_cast<size_t>(row); d-- > 0;) {
    counter[d] = static_cast<int64_t>(r % static_cast<size_t>(outer_dims_[d]));
    r /= static_cast<size_t>(outer_dims_[d]);
  }
  int64_t position = begin;
  while (position < end) {
    const int64_t count = std::min(inner_ - column, end - position);
    f(offsets, column, count, position);
    position += count;
    column = 0;
    for (size_t d = outer_dims_.size(); d-- > 0;) {
      if (++counter[d] < outer_dims_[d]) {
        for (size_t k = 0; k < inputs_; ++k) offsets[k] += outer_strides_[d][k];
        break;
      }
      counter[d] = 0;
      for (size_t k = 0; k < inputs_; ++k) {
        offsets[k] -= outer_strides_[d][k] * (outer_dims_[d] - 1);
      }
    }
  }
}

}  // namespace onnxkit
