// Fast Transpose for 4-byte elements (float, int32, uint32): dims that move together are
// merged, then either contiguous rows are copied (the innermost dim stays innermost, as in
// [B, S, H, D] -> [B, H, S, D]) or the input's innermost dim and the output's innermost dim
// form 2-D planes transposed in tiles with 8 x 8 register transposes ([B, H, S, D] ->
// [B, H, D, S], 2-D weights). A Transpose that moves only size-1 dims hands over its input's
// bytes, as Reshape does (batch-1 [1, S, C] <-> [S, 1, C] in ViT's encoder). A Transpose of a
// constant (a weight that the session did not fold) is done once, when the kernel is created.
// 1-byte elements (int8 activations) whose transpose is one 2-D plane per outer item (NCHW
// <-> NHWC at the edges of a channels-last int8 chain) go through quantize_simd's 16 x 16
// byte tiles.
#include <cstring>
#include <optional>
#include <vector>

#include "core/buffer.h"
#include "core/parallel.h"
#include "kernels/fast_kernel_util.h"
#include "kernels/quantize_simd.h"
#include "kernels/vector_math.h"
#include "ops/op_utils.h"

namespace onnxkit {
namespace {

// The permutation for `rank`, or nullopt when `perm` is not one (the reference reports it).
std::optional<std::vector<int64_t>> resolve_perm(const std::optional<std::vector<int64_t>>& perm,
                                                 size_t rank) {
  std::vector<int64_t> result(rank);
  if (!perm) {
    for (size_t i = 0; i < rank; ++i) result[i] = static_cast<int64_t>(rank - 1 - i);
    return result;
  }
  if (perm->size() != rank) return std::nullopt;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t p = (*perm)[i];
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
      return std::nullopt;
    }
    seen[static_cast<size_t>(p)] = true;
    result[i] = p;
  }
  return result;
}

// A transpose as output dims (outermost first) with the input stride of each, after
// dropping dims of size 1 and merging output neighbours that are neighbours in the input.
struct TransposePlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> in_strides;
  std::vector<int64_t> out_strides;

  TransposePlan(const Shape& in_shape, const std::vector<int64_t>& perm) {
    const std::vector<int64_t> strides = contiguous_strides(in_shape);
    for (int64_t p : perm) {
      const int64_t dim = in_shape[static_cast<size_t>(p)];
      if (dim == 1) continue;
      if (!dims.empty() && in_strides.back() == strides[static_cast<size_t>(p)] * dim) {
        dims.back() *= dim;
        in_strides.back() = strides[static_cast<size_t>(p)];
      } else {
        dims.push_back(dim);
        in_strides.push_back(strides[static_cast<size_t>(p)]);
      }
    }
    out_strides = contiguous_strides(dims);
  }
};

// Offsets of item `index` of the odometer over `dims` (skipping `skip_a` and `skip_b`).
void item_offsets(int64_t index, const TransposePlan& plan, size_t skip_a, size_t skip_b,
                  int64_t& in_offset, int64_t& out_offset) {
  in_offset = out_offset = 0;
  for (size_t d = plan.dims.size(); d-- > 0;) {
    if (d == skip_a || d == skip_b) continue;
    const int64_t i = index % plan.dims[d];
    index /= plan.dims[d];
    in_offset += i * plan.in_strides[d];
    out_offset += i * plan.out_strides[d];
  }
}

void transpose_4byte(const uint32_t* in, const Shape& in_shape, const std::vector<int64_t>& perm,
                     uint32_t* out) {
  const int64_t total = shape_numel(in_shape);
  if (total == 0) return;
  const TransposePlan plan(in_shape, perm);
  const size_t rank = plan.dims.size();
  if (rank <= 1) {  // nothing moves
    parallel_for(total, kMinParallelStreaming, [&](int64_t begin, int64_t end) {
      std::memcpy(out + begin, in + begin, static_cast<size_t>(end - begin) * sizeof(uint32_t));
    });
    return;
  }
  const size_t last = rank - 1;
  if (plan.in_strides[last] == 1) {
    // The innermost dim stays innermost: copy rows.
    const int64_t row = plan.dims[last];
    const int64_t rows = total / row;
    const int64_t min_rows = std::max<int64_t>(1, kMinParallelStreaming / row);
    parallel_for(rows, min_rows, [&](int64_t begin, int64_t end) {
      // Output rows are consecutive; the input offset follows an odometer over the outer dims.
      std::vector<int64_t> counter(last);
      int64_t in_offset = 0;
      for (size_t d = last, r = static_cast<size_t>(begin); d-- > 0;) {
        counter[d] = static_cast<int64_t>(r % static_cast<size_t>(plan.dims[d]));
        r /= static_cast<size_t>(plan.dims[d]);
        in_offset += counter[d] * plan.in_strides[d];
      }
      const size_t bytes = static_cast<size_t>(row) * sizeof(uint32_t);
      for (int64_t r = begin; r < end; ++r) {
        std::memcpy(out + r * row, in + in_offset, bytes);
        for (size_t d = last; d-- > 0;) {
          in_offset += plan.in_strides[d];
          if (++counter[d] < plan.dims[d]) break;
          in_offset -= plan.in_strides[d] * plan.dims[d];
          counter[d] = 0;
        }
      }
    });
    return;
  }
  // Planes of (output's innermost dim) x (input's innermost dim), tiled in blocks of rows.
  size_t inner_in = 0;  // the output position of the input's innermost dim
  for (size_t d = 0; d < rank; ++d) {
    if (plan.in_strides[d] == 1) inner_in = d;
  }
  const int64_t plane_rows = plan.dims[last];
  const int64_t plane_cols = plan.dims[inner_in];
  const int64_t planes = total / (plane_rows * plane_cols);
  constexpr int64_t kBlockRows = 64;
  const int64_t blocks = (plane_rows + kBlockRows - 1) / kBlockRows;
  const int64_t min_tasks = std::max<int64_t>(1, kMinParallelStreaming / (kBlockRows * plane_cols));
  parallel_for(planes * blocks, min_tasks, [&](int64_t begin, int64_t end) {
    const VectorKernels& k = vector_kernels();
    for (int64_t task = begin; task < end; ++task) {
      const int64_t plane = task / blocks;
      const int64_t first_row = (task % blocks) * kBlockRows;
      const int64_t rows = std::min(kBlockRows, plane_rows - first_row);
      int64_t in_offset, out_offset;
      item_offsets(plane, plan, last, inner_in, in_offset, out_offset);
      k.transpose_2d(in + in_offset + first_row * plan.in_strides[last], plan.in_strides[last],
                     out + out_offset + first_row, plan.out_strides[inner_in], rows, plane_cols);
    }
  });
}

// A transpose of 1-byte elements that swaps the last two dims of contiguous [rows, cols]
// planes (outer dims staying in place): each plane is one quantize_simd::transpose_bytes.
struct BytePlanes {
  int64_t planes, rows, cols;
};
std::optional<BytePlanes> byte_planes(const Shape& in_shape, const std::vector<int64_t>& perm) {
  const TransposePlan plan(in_shape, perm);
  const size_t rank = plan.dims.size();
  if (rank < 2) return std::nullopt;
  const int64_t rows = plan.dims[rank - 1], cols = plan.dims[rank - 2];
  if (plan.in_strides[rank - 2] != 1 || plan.in_strides[rank - 1] != cols) return std::nullopt;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (plan.in_strides[d] != plan.out_strides[d]) return std::nullopt;
  }
  return BytePlanes{shape_numel(in_shape) / (rows * cols), rows, cols};
}

// True when the dims other than 1s keep their order, so the output is the input's bytes.
bool moves_nothing(const Shape& shape, const std::vector<int64_t>& perm) {
  int64_t previous = -1;
  for (int64_t p : perm) {
    if (shape[static_cast<size_t>(p)] == 1) continue;
    if (p < previous) return false;
    previous = p;
  }
  return true;
}

bool is_four_byte(DType dtype) {
  return dtype != DType::kString && dtype_size(dtype) == 4;
}

class FastTransposeKernel : public OpKernel {
 public:
  explicit FastTransposeKernel(const KernelCreateContext& context)
      : perm_(context.attr_ints_opt("perm")), fallback_(context.reference_kernel()) {
    // A constant input (a weight; not a graph input, which a caller could override).
    const Value* input = context.node().input(0);
    if (input && input->has_initializer() && !context.node().graph()->is_input(input)) {
      const Tensor& x = input->initializer();
      const auto perm = resolve_perm(perm_, x.rank());
      if (perm && is_four_byte(x.dtype())) constant_output_ = transpose(x, *perm);
    }
  }

  void compute(KernelContext& context) const override {
    if (constant_output_) return context.set_output(0, *constant_output_);
    const Tensor& x = context.input(0);
    const auto perm = resolve_perm(perm_, x.rank());
    if (perm && moves_nothing(x.shape(), *perm) && x.buffer() && x.dtype() != DType::kString) {
      // Only size-1 dims move ([1, S, C] -> [S, 1, C]): the bytes are already in order.
      return context.set_output(
          0, Tensor::from_buffer(x.dtype(), permuted_shape(x.shape(), *perm), x.buffer()));
    }
    if (perm && x.dtype() != DType::kString && dtype_size(x.dtype()) == 1 && x.numel() > 0) {
      if (const std::optional<BytePlanes> planes = byte_planes(x.shape(), *perm)) {
        Tensor& out =
            context.allocate_output_uninitialized(0, x.dtype(), permuted_shape(x.shape(), *perm));
        const auto* in = static_cast<const uint8_t*>(x.raw_data());
        auto* y = static_cast<uint8_t*>(out.mutable_raw_data());
        const int64_t plane = planes->rows * planes->cols;
        parallel_for(planes->planes, 1, [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            quantize_simd::transpose_bytes(in + p * plane, planes->rows, planes->cols,
                                           y + p * plane);
          }
        });
        return;
      }
    }
    if (!perm || !is_four_byte(x.dtype())) return run_fallback(fallback_.get(), context);
    Tensor& out =
        context.allocate_output_uninitialized(0, x.dtype(), permuted_shape(x.shape(), *perm));
    transpose_4byte(static_cast<const uint32_t*>(x.raw_data()), x.shape(), *perm,
                    static_cast<uint32_t*>(out.mutable_raw_data()));
  }

 private:
  static Shape permuted_shape(const Shape& shape, const std::vector<int64_t>& perm) {
    Shape result(shape.size());
    for (size_t i = 0; i < perm.size(); ++i) result[i] = shape[static_cast<size_t>(perm[i])];
    return result;
  }
  static Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
    // Every element is written: no zero fill first (a weight's copy: BERT's 72 come to 340 MB).
    Tensor out = Tensor::from_buffer(x.dtype(), permuted_shape(x.shape(), perm),
                                     Buffer::allocate_uninitialized(x.nbytes()));
    transpose_4byte(static_cast<const uint32_t*>(x.raw_data()), x.shape(), perm,
                    static_cast<uint32_t*>(out.mutable_raw_data()));
    return out;
  }

  std::optional<std::vector<int64_t>> perm_;
  std::unique_ptr<OpKernel> fallback_;
  std::optional<Tensor> constant_output_;
};

}  // namespace

void register_fast_movement_kernels(OpRegistry& registry) {
  for (int64_t since : {1, 13, 21, 23, 24, 25}) {
    registry.add_optimized("", "Transpose", since, kernel_factory<FastTransposeKernel>());
  }
}

}  // namespace onnxkit
