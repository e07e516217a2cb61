// Op family: shape and data movement (Identity, Shape, Size, Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Expand, Tile, ReverseSequence). The ops that make a
// tensor from attributes or scalars (Constant, ConstantOfShape, Range) are in generators.cc.
//
// Data movement never looks at element values, so it moves opaque words of the element's
// size (every dtype, complex included) or std::string. Ops that only change the shape
// (Reshape, Flatten, Squeeze, Unsqueeze) share the input's bytes instead of copying.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/shape_vector.h"

namespace onnxkit {
namespace {

// `input`'s elements under another shape of the same size: shares the bytes (strings, which
// have no byte buffer, are copied).
Tensor with_shape(const Tensor& input, Shape shape) {
  if (input.dtype() == DType::kString)
    return Tensor::from_strings(std::move(shape), input.strings());
  if (!input.buffer()) return Tensor(input.dtype(), std::move(shape));
  return Tensor::from_buffer(input.dtype(), std::move(shape), input.buffer());
}

// Merges dims that are contiguous in the source and drops size-1 dims, so the inner copy
// loop runs as long as possible. Keeps at least one dim.
void coalesce(Shape& shape, std::vector<int64_t>& strides) {
  Shape merged_shape;
  std::vector<int64_t> merged_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!merged_shape.empty() && merged_strides.back() == strides[d] * shape[d]) {
      merged_shape.back() *= shape[d];
      merged_strides.back() = strides[d];
    } else {
      merged_shape.push_back(shape[d]);
      merged_strides.push_back(strides[d]);
    }
  }
  if (merged_shape.empty()) {
    merged_shape.push_back(1);
    merged_strides.push_back(1);
  }
  shape = std::move(merged_shape);
  strides = std::move(merged_strides);
}

// Steps the index over the outer dims `counter` covers (the first counter.size() dims of
// `shape`), last dim fastest, keeping `offset` = sum(index[d] * strides[d]).
void next_index(std::vector<int64_t>& counter, const Shape& shape,
                const std::vector<int64_t>& strides, int64_t& offset) {
  for (size_t d = counter.size(); d-- > 0;) {
    if (++counter[d] < shape[d]) {
      offset += strides[d];
      return;
    }
    offset -= strides[d] * (shape[d] - 1);
    counter[d] = 0;
  }
}

// copy_strided when the two innermost output dims are a 2-D transpose of the input (the
// input's contiguous dim is the second last): walked in square tiles, so that both sides
// are read and written a cache line at a time (a weight's Transpose, [50257, 768] for
// GPT-2's tied LM head, otherwise reads one float per cache line).
template <typename T>
void copy_transposed_blocks(const T* src, const Shape& shape, const std::vector<int64_t>& strides,
                            T* dst) {
  constexpr int64_t kTile = 32;
  const size_t rank = shape.size();
  const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  const int64_t col_stride = strides[rank - 1];
  const int64_t blocks = shape_numel(std::span(shape).first(rank - 2));
  std::vector<int64_t> counter(rank - 2, 0);
  int64_t offset = 0;
  for (int64_t block = 0; block < blocks; ++block) {
    const T* from = src + offset;
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j) dst[i * cols + j] = from[i + j * col_stride];
        }
      }
    }
    dst += rows * cols;
    next_index(counter, shape, strides, offset);
  }
}

// dst, contiguous of `shape`, gets src[sum(index[d] * strides[d])] at each index.
// Strides may be 0 (broadcast) and in any order (transpose).
template <typename T>
void copy_strided(const T* src, Shape shape, std::vector<int64_t> strides, T* dst) {
  if (shape_numel(shape) == 0) return;
  coalesce(shape, strides);
  const size_t rank = shape.size();
  const int64_t total = shape_numel(shape);
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  if (rank >= 2 && inner_stride != 1 && strides[rank - 2] == 1) {
    copy_transposed_blocks(src, shape, strides, dst);
    return;
  }
  std::vector<int64_t> counter(rank - 1, 0);
  int64_t offset = 0;
  for (int64_t done = 0; done < total; done += inner) {
    const T* from = src + offset;
    if (inner_stride == 1) {
      std::copy_n(from, inner, dst);
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = from[i * inner_stride];
    }
    dst += inner;
    next_index(counter, shape, strides, offset);
  }
}

// Axes of rank `rank`, normalized, checked in range and free of duplicates.
std::vector<int64_t> normalize_axes(const KernelContext& context, std::vector<int64_t> axes,
                                    int64_t rank) {
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& axis : axes) {
    if (axis < -rank || axis >= rank) {
      context.fail("axis {} is out of range for rank {}", axis, rank);
    }
    if (axis < 0) axis += rank;
    if (seen[static_cast<size_t>(axis)]) context.fail("axis {} is repeated", axis);
    seen[static_cast<size_t>(axis)] = true;
  }
  return axes;
}

// Counts given as a tensor of the data's type (Split-1's split, Tile-1's tiles and axis are
// typed T, a float type, in that version's schema) or of an integer type, as int64; fails
// on a value that is not a whole number.
std::vector<int64_t> read_count_input(const KernelContext& context, size_t i,
                                      std::string_view what) {
  const Tensor& tensor = context.input(i);
  if (tensor.rank() > 1) {
    context.fail("{} must be 1-D, got shape {}", what, shape_to_string(tensor.shape()));
  }
  if (!dtype_is_float(tensor.dtype())) return read_int64s(tensor, what);
  std::vector<int64_t> values;
  for (double v : read_doubles(context, tensor, what)) {
    if (!(std::trunc(v) == v) || std::abs(v) > 9.0e15) {
      context.fail("{} holds {}, which is not a whole number", what, v);
    }
    values.push_back(static_cast<int64_t>(v));
  }
  return values;
}

// Identity: passes the value through (tensors share storage; sequences too).
class IdentityKernel : public OpKernel {
 public:
  explicit IdentityKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    context.set_output_value(0, context.input_value(0));
  }
};

std::optional<ShapeVector> identity_shape_vector(const ShapeVectorContext& context) {
  const ShapeVector* in = context.input(0);
  return in ? std::optional<ShapeVector>(*in) : std::nullopt;
}

// Shape: the input's dims as int64, from opset 15 sliced by start/end (clamped).
class ShapeKernel : public OpKernel {
 public:
  explicit ShapeKernel(const KernelCreateContext& context) {
    if (context.opset() >= 15) {
      start_ = context.attr_int("start", 0);
      if (context.has_attribute("end")) end_ = context.attr_int("end");
    }
  }
  void compute(KernelContext& context) const override {
    const Shape& shape = context.input(0).shape();
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto clamp = [&](int64_t index) {
      if (index < 0) index += rank;
      return std::clamp<int64_t>(index, 0, rank);
    };
    const int64_t start = clamp(start_);
    const int64_t end = end_ ? clamp(*end_) : rank;
    const int64_t count = std::max<int64_t>(end - start, 0);
    Tensor& out = context.allocate_output(0, DType::kInt64, {count});
    std::copy_n(shape.begin() + start, count, out.mutable_data<int64_t>());
  }

 private:
  int64_t start_ = 0;
  std::optional<int64_t> end_;
};

// The dims [start, end) of input 0's type (start/end from opset 15).
std::optional<ShapeVector> shape_shape_vector(const ShapeVectorContext& context) {
  const Value* x = context.node().input(0);
  if (!x || !x->type().is_tensor() || !x->type().shape) return std::nullopt;
  const auto rank = static_cast<int64_t>(x->type().shape->size());
  ShapeVector out;
  out.from_shape = true;
  int64_t start = 0, end = rank;
  if (context.opset() >= 15) {
    start = context.attr_int("start", 0);
    end = context.attr_int("end", rank);
  }
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  for (int64_t i = start; i < end; ++i) out.elems.push_back(SymbolicInt::dim(x, i));
  return out;
}

// Size: the input's element count as an int64 scalar.
class SizeKernel : public OpKernel {
 public:
  explicit SizeKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const int64_t numel = context.input(0).numel();
    context.allocate_output(0, DType::kInt64, {}).mutable_data<int64_t>()[0] = numel;
  }
};

// The product of input 0's dims.
std::optional<ShapeVector> size_shape_vector(const ShapeVectorContext& context) {
  const Value* x = context.node().input(0);
  if (!x || !x->type().is_tensor() || !x->type().shape) return std::nullopt;
  const auto rank = static_cast<int64_t>(x->type().shape->size());
  ShapeVector out;
  out.from_shape = true;
  out.scalar = true;
  SymbolicInt product = SymbolicInt::number(1);
  for (int64_t i = 0; i < rank; ++i) {
    auto next = SymbolicInt::arithmetic('*', product, SymbolicInt::dim(x, i), DType::kInt64);
    if (!next) return std::nullopt;
    product = std::move(*next);
  }
  out.elems.push_back(std::move(product));
  return out;
}

// Reshape: shape from input 1 (the `shape` attribute in version 1); 0 copies the input dim
// (or is a 0 dim with allowzero, opset 14), one -1 is inferred. The output shares the
// input's bytes.
class ReshapeKernel : public OpKernel {
 public:
  explicit ReshapeKernel(const KernelCreateContext& context) {
    if (context.opset() >= 14) allow_zero_ = context.attr_int("allowzero", 0) != 0;
    if (context.opset() < 5) {
      shape_attribute_ = context.attr_ints_opt("shape");
      if (!shape_attribute_) context.fail("Reshape-1 needs the `shape` attribute");
    }
  }
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const std::vector<int64_t> requested =
        shape_attribute_ ? *shape_attribute_ : read_index_input(context, 1, "shape");
    const Shape& in_shape = input.shape();
    Shape shape(requested.size());
    std::optional<size_t> inferred;
    bool has_zero = false;
    int64_t known = 1;
    for (size_t i = 0; i < requested.size(); ++i) {
      const int64_t dim = requested[i];
      if (dim == -1) {
        if (inferred) {
          context.fail("shape {} has more than one -1", shape_to_string(requested));
        }
        inferred = i;
        continue;
      }
      if (dim < -1) {
        context.fail("shape {} has the invalid dim {} at index {}", shape_to_string(requested), dim,
                     i);
      }
      if (dim == 0 && !allow_zero_) {
        if (i >= in_shape.size()) {
          context.fail("shape {}: 0 at index {} copies an input dim, but the input {} has rank {}",
                       shape_to_string(requested), i, shape_to_string(in_shape), in_shape.size());
        }
        shape[i] = in_shape[i];
      } else {
        shape[i] = dim;
        has_zero = has_zero || dim == 0;
      }
      if (__builtin_mul_overflow(known, shape[i], &known)) {
        context.fail("shape {} has too many elements", shape_to_string(requested));
      }
    }
    if (inferred) {
      if (has_zero) {
        context.fail("shape {} has both 0 and -1, which allowzero=1 forbids",
                     shape_to_string(requested));
      }
      if (known == 0 || input.numel() % known != 0) {
        context.fail("cannot reshape {} ({} elements) to {}: the -1 dim cannot be inferred",
                     shape_to_string(in_shape), input.numel(), shape_to_string(requested));
      }
      shape[*inferred] = input.numel() / known;
    }
    if (shape_numel(shape) != input.numel()) {
      context.fail("cannot reshape {} ({} elements) to {} ({} elements)", shape_to_string(in_shape),
                   input.numel(), shape_to_string(shape), shape_numel(shape));
    }
    context.set_output(0, with_shape(input, std::move(shape)));
  }

 private:
  bool allow_zero_ = false;
  std::optional<std::vector<int64_t>> shape_attribute_;  // version 1
};

// 1-D <-> 1-D or scalar, element order unchanged.
std::optional<ShapeVector> reshape_shape_vector(const ShapeVectorContext& context) {
  const ShapeVector* data = context.input(0);
  auto target = context.known_ints(1);
  if (!data || !target) return std::nullopt;
  const auto n = static_cast<int64_t>(data->elems.size());
  const bool allowzero = context.opset() >= 14 && context.attr_int("allowzero", 0) != 0;
  ShapeVector out = *data;
  if (target->empty()) {
    if (n != 1) return std::nullopt;
    out.scalar = true;
  } else if (target->size() == 1) {
    const int64_t t = (*target)[0];
    const bool copy = t == 0 && !allowzero && !data->scalar;
    if (!(t == -1 || t == n || copy)) return std::nullopt;
    out.scalar = false;
  } else {
    return std::nullopt;
  }
  if (const ShapeVector* in = context.input(1)) out.from_shape |= in->from_shape;
  return out;
}

// Flatten: [d0 * ... * d(axis-1), d(axis) * ... * d(n-1)], sharing the input's bytes.
class FlattenKernel : public OpKernel {
 public:
  explicit FlattenKernel(const KernelCreateContext& context) : axis_(context.attr_int("axis", 1)) {}
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const int64_t rank = static_cast<int64_t>(input.rank());
    if (axis_ < -rank || axis_ > rank) {
      context.fail("axis {} is out of range for rank {} (allowed: {}..{})", axis_, rank, -rank,
                   rank);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const Shape& shape = input.shape();
    const int64_t outer = shape_numel(std::span(shape).first(static_cast<size_t>(axis)));
    const int64_t inner = shape_numel(std::span(shape).subspan(static_cast<size_t>(axis)));
    context.set_output(0, with_shape(input, {outer, inner}));
  }

 private:
  int64_t axis_;
};

// Squeeze: removes the given 1-dims (attribute before opset 13, optional input after), or
// every 1-dim when no axes are given. Shares the input's bytes.
class SqueezeKernel : public OpKernel {
 public:
  explicit SqueezeKernel(const KernelCreateContext& context) : axes_input_(context.opset() >= 13) {
    if (!axes_input_) {
      axes_ = context.attr_ints("axes");
    }
  }
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Shape& in_shape = input.shape();
    const int64_t rank = static_cast<int64_t>(in_shape.size());
    std::vector<int64_t> axes = axes_;
    if (axes_input_ && context.has_input(1)) axes = read_index_input(context, 1, "axes");
    std::vector<bool> drop(in_shape.size(), false);
    if (axes.empty()) {
      for (size_t d = 0; d < in_shape.size(); ++d) drop[d] = in_shape[d] == 1;
    } else {
      for (int64_t axis : normalize_axes(context, std::move(axes), rank)) {
        if (in_shape[static_cast<size_t>(axis)] != 1) {
          context.fail("cannot squeeze axis {} of size {} (input shape {})", axis,
                       in_shape[static_cast<size_t>(axis)], shape_to_string(in_shape));
        }
        drop[static_cast<size_t>(axis)] = true;
      }
    }
    Shape shape;
    for (size_t d = 0; d < in_shape.size(); ++d) {
      if (!drop[d]) shape.push_back(in_shape[d]);
    }
    context.set_output(0, with_shape(input, std::move(shape)));
  }

 private:
  bool axes_input_;
  std::vector<int64_t> axes_;
};

// Unsqueeze: inserts 1-dims at the given output axes (attribute before opset 13, input
// after). Shares the input's bytes.
class UnsqueezeKernel : public OpKernel {
 public:
  explicit UnsqueezeKernel(const KernelCreateContext& context)
      : axes_input_(context.opset() >= 13) {
    if (!axes_input_) {
      auto axes = context.attr_ints_opt("axes");
      if (!axes) context.fail("required attribute 'axes' is missing");
      axes_ = std::move(*axes);
    }
  }
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    std::vector<int64_t> axes = axes_input_ ? read_index_input(context, 1, "axes") : axes_;
    const Shape& in_shape = input.shape();
    const int64_t out_rank = static_cast<int64_t>(in_shape.size() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t axis : normalize_axes(context, std::move(axes), out_rank)) {
      inserted[static_cast<size_t>(axis)] = true;
    }
    Shape shape;
    size_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      shape.push_back(inserted[static_cast<size_t>(d)] ? 1 : in_shape[next++]);
    }
    context.set_output(0, with_shape(input, std::move(shape)));
  }

 private:
  bool axes_input_;
  std::vector<int64_t> axes_;
};

// Unsqueeze turns a scalar into [1] and Squeeze [1] into a scalar (axes: an attribute before
// opset 13, input 1 from 13).
std::optional<ShapeVector> squeeze_or_unsqueeze_shape_vector(const ShapeVectorContext& context,
                                                             bool unsqueeze) {
  const ShapeVector* data = context.input(0);
  if (!data) return std::nullopt;
  std::optional<std::vector<int64_t>> axes;
  if (context.opset() < 13) {
    if (const auto* a = context.attr_ints("axes")) axes = *a;
  } else if (context.node().input(1)) {
    axes = context.known_ints(1);
    if (!axes) return std::nullopt;
  }
  ShapeVector out = *data;
  if (unsqueeze) {
    if (!data->scalar || !axes || !ShapeVector::names_axis_zero(*axes)) return std::nullopt;
    out.scalar = false;
  } else {
    if (data->scalar || data->elems.size() != 1) return std::nullopt;
    if (axes && !ShapeVector::names_axis_zero(*axes)) return std::nullopt;
    out.scalar = true;
  }
  if (const ShapeVector* in = context.input(1)) out.from_shape |= in->from_shape;
  return out;
}

std::optional<ShapeVector> squeeze_shape_vector(const ShapeVectorContext& context) {
  return squeeze_or_unsqueeze_shape_vector(context, false);
}

std::optional<ShapeVector> unsqueeze_shape_vector(const ShapeVectorContext& context) {
  return squeeze_or_unsqueeze_shape_vector(context, true);
}

// Transpose: output dim i is input dim perm[i]; perm defaults to the reversed dims.
class TransposeKernel : public OpKernel {
 public:
  explicit TransposeKernel(const KernelCreateContext& context)
      : perm_(context.attr_ints_opt("perm")) {}
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const size_t rank = input.rank();
    std::vector<int64_t> perm(rank);
    if (perm_) {
      if (perm_->size() != rank) {
        context.fail("perm has {} entries, the input {} has rank {}", perm_->size(),
                     shape_to_string(input.shape()), rank);
      }
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < rank; ++i) {
        int64_t p = (*perm_)[i];
        if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
          context.fail("perm {} is not a permutation of 0..{}", shape_to_string(*perm_),
                       static_cast<int64_t>(rank) - 1);
        }
        seen[static_cast<size_t>(p)] = true;
        perm[i] = p;
      }
    } else {
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    }
    const std::vector<int64_t> in_strides = contiguous_strides(input.shape());
    Shape shape(rank);
    std::vector<int64_t> strides(rank);
    for (size_t i = 0; i < rank; ++i) {
      shape[i] = input.shape()[static_cast<size_t>(perm[i])];
      strides[i] = in_strides[static_cast<size_t>(perm[i])];
    }
    Tensor& out = context.allocate_output_uninitialized(0, input.dtype(), shape);
    dispatch_storage(input.dtype(), "Transpose", [&](auto tag) {
      using T = typename decltype(tag)::type;
      copy_strided(tensor_elements<T>(input), shape, strides, mutable_tensor_elements<T>(out));
    });
  }

 private:
  std::optional<std::vector<int64_t>> perm_;
};

// Concat: joins the inputs along `axis`; every other dim must match.
class ConcatKernel : public OpKernel {
 public:
  explicit ConcatKernel(const KernelCreateContext& context)
      : axis_(context.opset() < 4 ? context.attr_int("axis", 1) : context.attr_int("axis")) {}
  void compute(KernelContext& context) const override {
    const size_t count = context.num_inputs();
    if (count == 0) context.fail("needs at least one input");
    const Tensor& first = context.input(0);
    const int64_t rank = static_cast<int64_t>(first.rank());
    if (rank == 0) context.fail("cannot concatenate scalars (inputs need rank >= 1)");
    if (axis_ < -rank || axis_ >= rank) {
      context.fail("axis {} is out of range for rank {}", axis_, rank);
    }
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    Shape shape = first.shape();
    shape[axis] = 0;
    for (size_t i = 0; i < count; ++i) {
      const Tensor& in = context.input(i);
      if (in.dtype() != first.dtype()) {
        context.fail("input {} has type {}, input 0 has {}", i, dtype_name(in.dtype()),
                     dtype_name(first.dtype()));
      }
      bool match = in.rank() == first.rank();
      for (size_t d = 0; match && d < in.rank(); ++d) {
        match = d == axis || in.shape()[d] == first.shape()[d];
      }
      if (!match) {
        context.fail("input {} has shape {}, which does not match input 0's {} outside axis {}", i,
                     shape_to_string(in.shape()), shape_to_string(first.shape()), axis);
      }
      shape[axis] += in.shape()[axis];
    }
    Tensor& out = context.allocate_output_uninitialized(0, first.dtype(), shape);
    if (out.numel() == 0) return;
    const int64_t outer = shape_numel(std::span(shape).first(axis));
    const int64_t inner = shape_numel(std::span(shape).subspan(axis + 1));
    const int64_t out_row = shape[axis] * inner;
    dispatch_storage(first.dtype(), "Concat", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = mutable_tensor_elements<T>(out);
      int64_t column = 0;
      for (size_t i = 0; i < count; ++i) {
        const Tensor& in = context.input(i);
        const int64_t row = in.shape()[axis] * inner;
        if (row == 0) continue;
        const T* src = tensor_elements<T>(in);
        for (int64_t o = 0; o < outer; ++o)
          std::copy_n(src + o * row, row, dst + o * out_row + column);
        column += row;
      }
    });
  }

 private:
  int64_t axis_;
};

// Vectors of one dtype joined along axis 0.
std::optional<ShapeVector> concat_shape_vector(const ShapeVectorContext& context) {
  const int64_t axis = context.attr_int("axis", std::numeric_limits<int64_t>::min());
  if (axis != 0 && axis != -1) return std::nullopt;
  const size_t count = context.node().inputs().size();
  ShapeVector out;
  for (size_t i = 0; i < count; ++i) {
    const ShapeVector* in = context.input(i);
    if (!in || in->scalar) return std::nullopt;
    if (i == 0) out.dtype = in->dtype;
    if (in->dtype != out.dtype) return std::nullopt;
    out.from_shape |= in->from_shape;
    out.elems.insert(out.elems.end(), in->elems.begin(), in->elems.end());
  }
  if (count == 0 || out.elems.size() > ShapeVector::kMaxElements) return std::nullopt;
  return out;
}

// Split: cuts the input along `axis` into the outputs; sizes from `split` (attribute before
// opset 13, optional input after; version 1 takes either) or equal parts that must divide
// the dim exactly.
class SplitKernel : public OpKernel {
 public:
  explicit SplitKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", 0)),
        split_input_(context.opset() >= 13 || context.opset() < 2),
        uneven_(context.opset() >= 18) {
    if (context.opset() < 13) split_ = context.attr_ints_opt("split");
    if (context.opset() < 2 && split_ && context.node().inputs().size() > 1 &&
        context.node().input(1) != nullptr) {
      context.fail("split is given both as an attribute and as input 1");
    }
    if (uneven_ && context.has_attribute("num_outputs")) {
      const int64_t num_outputs = context.attr_int("num_outputs");
      if (num_outputs != static_cast<int64_t>(context.node().outputs().size())) {
        context.fail("num_outputs is {}, but the node has {} outputs", num_outputs,
                     context.node().outputs().size());
      }
      const auto& inputs = context.node().inputs();
      if (inputs.size() > 1 && inputs[1] != nullptr) {
        context.fail("split and num_outputs are both given");
      }
    }
  }
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const int64_t rank = static_cast<int64_t>(input.rank());
    if (rank == 0) context.fail("cannot split a scalar");
    if (axis_ < -rank || axis_ >= rank) {
      context.fail("axis {} is out of range for rank {}", axis_, rank);
    }
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    const int64_t dim = input.shape()[axis];
    const size_t parts = context.num_outputs();
    std::vector<int64_t> sizes;
    if (split_input_ && context.has_input(1)) {
      // Version 1's split input has the data's (float) type.
      sizes = read_count_input(context, 1, "split");
    } else if (split_) {
      sizes = *split_;
    }
    if (sizes.empty()) {
      const auto n = static_cast<int64_t>(parts);
      // From opset 18 parts of ceil(dim / n) with a smaller last one; before, equal parts.
      const bool even = n > 0 && dim % n == 0;
      const int64_t chunk = even ? dim / n : (n > 0 ? dim / n + 1 : 0);
      if (n == 0 || (!even && (!uneven_ || dim - chunk * (n - 1) < 0))) {
        context.fail("dim {} of size {} cannot be split into {} {}parts", axis, dim, parts,
                     uneven_ ? "" : "equal ");
      }
      sizes.assign(parts, chunk);
      sizes.back() = dim - chunk * (n - 1);
    } else {
      if (sizes.size() != parts) {
        context.fail("split {} has {} entries for {} outputs", shape_to_string(sizes), sizes.size(),
                     parts);
      }
      int64_t total = 0;
      for (int64_t size : sizes) {
        if (size < 0) context.fail("split {} has a negative size", shape_to_string(sizes));
        total += size;
      }
      if (total != dim) {
        context.fail("split {} sums to {}, but dim {} has size {}", shape_to_string(sizes), total,
                     axis, dim);
      }
    }
    const int64_t outer = shape_numel(std::span(input.shape()).first(axis));
    const int64_t inner = shape_numel(std::span(input.shape()).subspan(axis + 1));
    const int64_t in_row = dim * inner;
    dispatch_storage(input.dtype(), "Split", [&](auto tag) {
      using T = typename decltype(tag)::type;
      int64_t column = 0;
      for (size_t i = 0; i < parts; ++i) {
        Shape shape = input.shape();
        shape[axis] = sizes[i];
        const int64_t row = sizes[i] * inner;
        if (context.wants_output(i)) {
          Tensor& out = context.allocate_output(i, input.dtype(), shape);
          if (out.numel() > 0) {
            const T* src = tensor_elements<T>(input) + column;
            T* dst = mutable_tensor_elements<T>(out);
            for (int64_t o = 0; o < outer; ++o) std::copy_n(src + o * in_row, row, dst + o * row);
          }
        }
        column += row;
      }
    });
  }

 private:
  int64_t axis_;
  bool split_input_;
  bool uneven_;  // opset 18's num_outputs rule
  std::optional<std::vector<int64_t>> split_;
};

// Expand: broadcasts the input and the shape input against each other (numpy rules).
class ExpandKernel : public OpKernel {
 public:
  explicit ExpandKernel(const KernelCreateContext&) {}
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const std::vector<int64_t> requested = read_index_input(context, 1, "shape");
    for (int64_t dim : requested) {
      if (dim < 0) context.fail("shape {} has a negative dim", shape_to_string(requested));
    }
    const Shape shape = broadcast_shapes(input.shape(), requested);
    Tensor& out = context.allocate_output(0, input.dtype(), shape);
    dispatch_storage(input.dtype(), "Expand", [&](auto tag) {
      using T = typename decltype(tag)::type;
      copy_strided(tensor_elements<T>(input), shape, broadcast_strides(input.shape(), shape),
                   mutable_tensor_elements<T>(out));
    });
  }
};

// Tile: repeats the input repeats[d] times along each dim d. Version 1 repeats it `tiles`
// times along one `axis` (scalar inputs 1 and 2, of the data's type in its schema).
class TileKernel : public OpKernel {
 public:
  explicit TileKernel(const KernelCreateContext& context) : legacy_(context.opset() < 6) {}
  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const size_t rank = input.rank();
    const std::vector<int64_t> repeats =
        legacy_ ? legacy_repeats(context, rank) : read_index_input(context, 1, "repeats");
    if (repeats.size() != rank) {
      context.fail("repeats has {} entries, the input {} has rank {}", repeats.size(),
                   shape_to_string(input.shape()), rank);
    }
    // Reads the input as [r0, d0, r1, d1, ...] with stride 0 on each repeat dim; written
    // contiguously that is exactly the [r0*d0, r1*d1, ...] output.
    const std::vector<int64_t> in_strides = contiguous_strides(input.shape());
    Shape shape(rank);
    Shape view_shape;
    std::vector<int64_t> view_strides;
    for (size_t d = 0; d < rank; ++d) {
      if (repeats[d] < 0) {
        context.fail("repeats {} has a negative value", shape_to_string(repeats));
      }
      shape[d] = checked_mul(input.shape()[d], repeats[d], "Tile's output dim");
      view_shape.insert(view_shape.end(), {repeats[d], input.shape()[d]});
      view_strides.insert(view_strides.end(), {0, in_strides[d]});
    }
    Tensor& out = context.allocate_output(0, input.dtype(), shape);
    dispatch_storage(input.dtype(), "Tile", [&](auto tag) {
      using T = typename decltype(tag)::type;
      copy_strided(tensor_elements<T>(input), view_shape, view_strides,
                   mutable_tensor_elements<T>(out));
    });
  }

 private:
  // Version 1's (tiles, axis) as one repeat per dim.
  static std::vector<int64_t> legacy_repeats(const KernelContext& context, size_t rank) {
    const std::vector<int64_t> tiles = read_count_input(context, 1, "tiles");
    const std::vector<int64_t> axis = read_count_input(context, 2, "axis");
    if (tiles.size() != 1 || axis.size() != 1) {
      context.fail("tiles and axis must be single values, got {} and {}", tiles.size(),
                   axis.size());
    }
    std::vector<int64_t> repeats(rank, 1);
    const auto r = static_cast<int64_t>(rank);
    if (axis[0] < -r || axis[0] >= r) {
      context.fail("axis {} is out of range for rank {}", axis[0], rank);
    }
    repeats[static_cast<size_t>(axis[0] < 0 ? axis[0] + r : axis[0])] = tiles[0];
    return repeats;
  }

  bool legacy_;
};

// ReverseSequence: reverses the first sequence_lens[b] steps of each batch entry along the
// time axis; later steps are copied as they are.
class ReverseSequenceKernel : public OpKernel {
 public:
  explicit ReverseSequenceKernel(const KernelCreateContext& context)
      : batch_axis_(context.attr_int("batch_axis", 1)),
        time_axis_(context.attr_int("time_axis", 0)) {
    if ((batch_axis_ != 0 && batch_axis_ != 1) || (time_axis_ != 0 && time_axis_ != 1) ||
        batch_axis_ == time_axis_) {
      context.fail("batch_axis {} and time_axis {} must be 0 and 1 in some order", batch_axis_,
                   time_axis_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.rank() < 2) context.fail("input must have rank >= 2, got {}", input.rank());
    const int64_t batch = input.shape()[static_cast<size_t>(batch_axis_)];
    const int64_t steps = input.shape()[static_cast<size_t>(time_axis_)];
    const Tensor& lens_tensor = context.input(1);
    if (lens_tensor.rank() != 1 || lens_tensor.shape()[0] != batch) {
      context.fail("sequence_lens must have shape [{}] (the batch size), got {}", batch,
                   shape_to_string(lens_tensor.shape()));
    }
    const std::vector<int64_t> lens = read_int64s(lens_tensor, "sequence_lens");
    for (int64_t b = 0; b < batch; ++b) {
      if (lens[b] < 0 || lens[b] > steps) {
        context.fail("sequence_lens value {} (batch {}) is out of range [0, {}]", lens[b], b,
                     steps);
      }
    }
    const int64_t inner = input.rank() > 2 ? shape_numel(std::span(input.shape()).subspan(2)) : 1;
    Tensor& out = context.allocate_output(0, input.dtype(), input.shape());
    if (out.numel() == 0) return;
    // Element offset of (batch b, time t).
    auto offset = [&](int64_t b, int64_t t) {
      return (batch_axis_ == 0 ? b * steps + t : t * batch + b) * inner;
    };
    dispatch_storage(input.dtype(), "ReverseSequence", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = tensor_elements<T>(input);
      T* dst = mutable_tensor_elements<T>(out);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t t = 0; t < steps; ++t) {
          const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
          std::copy_n(src + offset(b, from), inner, dst + offset(b, t));
        }
      }
    });
  }

 private:
  int64_t batch_axis_;
  int64_t time_axis_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// Shape: int64 [end - start], start/end (opset 15) clamped to the rank.
void infer_shape(TypeInferenceContext& context) {
  if (!context.input_type(0)) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  Dim length;
  if (dims) {
    const auto rank = static_cast<int64_t>(dims->size());
    int64_t start = 0, end = rank;
    if (context.opset() >= 15) {
      const KernelCreateContext attributes = attribute_reader(context);
      start = attributes.attr_int("start", 0);
      end = attributes.attr_int("end", rank);
    }
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    length = Dim::known(std::max<int64_t>(end - start, 0));
  }
  context.set_output(0, tensor_type(DType::kInt64, std::vector<Dim>{length}));
}

void infer_size(TypeInferenceContext& context) {
  if (context.input_type(0)) context.set_output(0, tensor_type(DType::kInt64, std::vector<Dim>{}));
}

// The dim -1 stands for in Reshape: what is left of the input's element count after the
// other output dims. Dims the input and output share (equal numbers, equal names) cancel
// first, so [batch, 3, 4] to [0, -1] gives [batch, 12].
Dim reshape_inferred_dim(std::vector<Dim> in, std::vector<Dim> out) {
  for (auto it = out.begin(); it != out.end();) {
    const auto same = std::find_if(in.begin(), in.end(), [&](const Dim& dim) {
      return (dim.is_known() && it->is_known() && dim.value == it->value) ||
             (dim.is_symbolic() && it->is_symbolic() && dim.param == it->param);
    });
    if (same != in.end()) {
      in.erase(same);
      it = out.erase(it);
    } else {
      ++it;
    }
  }
  const Dim rest = dims_product(out);
  if (!rest.is_known() || rest.value == 0) return Dim{};
  int64_t known = 1;
  std::vector<Dim> unknown;
  for (const Dim& dim : in) {
    if (dim.is_known()) {
      known = checked_mul(known, dim.value, "the input's element count");
    } else {
      unknown.push_back(dim);
    }
  }
  if (unknown.empty()) return Dim::known(known / rest.value);
  if (unknown.size() == 1 && known == rest.value) return unknown[0];
  return Dim{};
}

// Reshape: the shape input's dims (the `shape` attribute in version 1); 0 copies the input
// dim (unless allowzero, opset 14), -1 takes the rest.
void infer_reshape(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::optional<std::vector<int64_t>> shape =
      context.opset() < 5 ? attribute_reader(context).attr_ints_opt("shape")
                          : input_ints(context, 1);
  if (!shape && context.opset() < 5) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  if (!shape) {
    // A computed target (Shape -> Gather -> Concat): its named dims pass through; an
    // element known only at run time may be 0 or -1, so it stays unknown.
    if (SymbolicShape target = context.input_as_dims(1)) {
      for (Dim& dim : *target) {
        if (dim.is_known() && dim.value <= 0) dim = Dim{};
      }
      context.set_output(0, tensor_type(dtype, std::move(target)));
      return;
    }
    const std::optional<int64_t> rank = input_length(context, 1);
    context.set_output(
        0, tensor_type(dtype, rank ? SymbolicShape(unknown_dims(*rank)) : std::nullopt));
    return;
  }
  const bool allowzero =
      context.opset() >= 14 && attribute_reader(context).attr_int("allowzero", 0) != 0;
  const std::vector<Dim>* dims = input_dims(context, 0);
  std::vector<Dim> out;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < shape->size(); ++i) {
    const int64_t value = (*shape)[i];
    if (value == 0 && !allowzero) {
      if (dims && i >= dims->size())
        fail("shape[{}] is 0 but the input has rank {}", i, dims->size());
      out.push_back(dims ? (*dims)[i] : Dim{});
    } else if (value == -1) {
      if (inferred) fail("shape {} has more than one -1", shape_to_string(*shape));
      inferred = i;
      out.emplace_back();
    } else if (value < -1) {
      fail("shape[{}] is {}", i, value);
    } else {
      out.push_back(Dim::known(value));
    }
  }
  if (inferred && dims) {
    std::vector<Dim> others = out;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(*inferred));
    out[*inferred] = reshape_inferred_dim(*dims, std::move(others));
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Flatten: [product of the dims before axis, product of the rest].
void infer_flatten(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(dtype, unknown_dims(2)));
    return;
  }
  const auto rank = static_cast<int64_t>(dims->size());
  int64_t axis = attribute_reader(context).attr_int("axis", 1);
  if (axis < -rank || axis > rank) fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const std::span<const Dim> all(*dims);
  context.set_output(
      0,
      tensor_type(dtype, std::vector<Dim>{dims_product(all.first(static_cast<size_t>(axis))),
                                          dims_product(all.subspan(static_cast<size_t>(axis)))}));
}

// The axes of Squeeze and Unsqueeze: an attribute before opset 13, input 1 from 13; nullopt
// when they are an input not known before running. Absent: an empty list.
std::optional<std::vector<int64_t>> squeeze_axes(const TypeInferenceContext& context) {
  if (context.opset() < 13) return attribute_reader(context).attr_ints("axes");
  if (!context.has_input(1)) return std::vector<int64_t>{};
  return input_ints(context, 1);
}

// Squeeze: drops the axes named (every dim of 1 when none are).
void infer_squeeze(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  const std::optional<std::vector<int64_t>> axes = squeeze_axes(context);
  if (!dims || !axes) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  std::vector<bool> drop(dims->size(), false);
  if (axes->empty()) {
    for (size_t d = 0; d < dims->size(); ++d) {
      const Dim& dim = (*dims)[d];
      if (!dim.is_known()) {
        // Dropped only if it turns out to be 1: the rank is unknown.
        context.set_output(0, tensor_type(dtype));
        return;
      }
      drop[d] = dim.value == 1;
    }
  }
  for (int64_t axis : *axes) {
    const size_t d = rule_axis(axis, dims->size(), "axes");
    if ((*dims)[d].is_known() && (*dims)[d].value != 1) {
      fail("cannot squeeze axis {} of size {}", d, (*dims)[d].value);
    }
    drop[d] = true;
  }
  std::vector<Dim> out;
  for (size_t d = 0; d < dims->size(); ++d) {
    if (!drop[d]) out.push_back((*dims)[d]);
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Unsqueeze: a 1 at each axis named (axes of the output's rank).
void infer_unsqueeze(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  const std::optional<std::vector<int64_t>> axes = squeeze_axes(context);
  if (!dims || !axes) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const size_t rank = dims->size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    const size_t d = rule_axis(axis, rank, "axes");
    if (inserted[d]) fail("axis {} appears more than once in axes", d);
    inserted[d] = true;
  }
  std::vector<Dim> out;
  auto next = dims->begin();
  for (size_t d = 0; d < rank; ++d) out.push_back(inserted[d] ? Dim::known(1) : *next++);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Transpose: the dims in `perm` order (reversed when absent).
void infer_transpose(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  const KernelCreateContext attributes = attribute_reader(context);
  if (!dims) {
    const std::vector<int64_t> perm = attributes.attr_ints("perm");
    context.set_output(
        0,
        tensor_type(dtype, perm.empty() ? std::nullopt : SymbolicShape(unknown_dims(perm.size()))));
    return;
  }
  std::vector<int64_t> perm = attributes.attr_ints("perm");
  if (perm.empty()) {
    for (size_t d = dims->size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
  }
  if (perm.size() != dims->size()) {
    fail("perm {} has {} entries, the input has rank {}", shape_to_string(perm), perm.size(),
         dims->size());
  }
  std::vector<Dim> out;
  for (int64_t axis : perm) out.push_back((*dims)[rule_axis(axis, dims->size(), "perm")]);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Concat: the inputs' dims, `axis` summed; a dim one input knows and another does not is
// the known one (they must agree).
void infer_concat(TypeInferenceContext& context) {
  DType dtype = DType::kUndefined;
  std::vector<const std::vector<Dim>*> shapes;
  bool all_shapes = true;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    if (dtype == DType::kUndefined) dtype = input_dtype(context, i);
    const std::vector<Dim>* dims = input_dims(context, i);
    if (dims) {
      shapes.push_back(dims);
    } else {
      all_shapes = false;
    }
  }
  if (dtype == DType::kUndefined) return;
  if (shapes.empty()) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const size_t rank = shapes[0]->size();
  const int64_t axis_value = context.opset() < 4 ? attribute_reader(context).attr_int("axis", 1)
                                                 : attribute_reader(context).attr_int("axis");
  const size_t axis = rule_axis(axis_value, rank);
  std::vector<Dim> out(rank);
  std::vector<Dim> along;
  for (const std::vector<Dim>* dims : shapes) {
    if (dims->size() != rank) fail("inputs have ranks {} and {}", rank, dims->size());
    for (size_t d = 0; d < rank; ++d) {
      const Dim& dim = (*dims)[d];
      if (d == axis) continue;
      if (dim.is_known() && out[d].is_known() && dim.value != out[d].value) {
        fail("inputs differ in dim {}: {} and {}", d, out[d].value, dim.value);
      }
      if (dim.is_known() || (!out[d].is_known() && !out[d].is_symbolic())) out[d] = dim;
    }
    along.push_back((*dims)[axis]);
  }
  out[axis] = all_shapes ? dims_sum(along) : Dim{};
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Split: the input's dims with `axis` cut by `split` (an attribute before opset 13, input 1
// from 13), or in num_outputs (opset 18) / as many outputs equal parts.
void infer_split(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  const size_t parts = context.num_outputs();
  if (!dims) {
    for (size_t i = 0; i < parts; ++i) context.set_output(i, tensor_type(dtype));
    return;
  }
  const KernelCreateContext attributes = attribute_reader(context);
  const size_t axis = rule_axis(attributes.attr_int("axis", 0), dims->size());
  const Dim& dim = (*dims)[axis];
  std::vector<Dim> sizes(parts);
  std::optional<std::vector<int64_t>> split;
  bool split_unknown = false;
  if (context.opset() < 13) {
    if (attributes.has_attribute("split")) split = attributes.attr_ints("split");
  }
  if (context.opset() < 2 && !split && context.has_input(1)) {
    // Version 1's split input has the data's (float) type.
    if (const std::optional<std::vector<double>> values = input_doubles(context, 1)) {
      split.emplace();
      for (double v : *values) split->push_back(checked_int64(v, "split"));
    }
    split_unknown = !split;
  } else if (context.opset() >= 13 && context.has_input(1)) {
    split = input_ints(context, 1);
    split_unknown = !split;
  }
  if (split) {
    if (split->size() != parts) {
      fail("split {} has {} entries for {} outputs", shape_to_string(*split), split->size(), parts);
    }
    for (size_t i = 0; i < parts; ++i) sizes[i] = Dim::known((*split)[i]);
  } else if (!split_unknown && dim.is_known() && parts > 0) {
    const auto n = static_cast<int64_t>(parts);
    if (attributes.has_attribute("num_outputs")) {
      // Opset 18: parts of ceil(dim / n), the last one what is left.
      const int64_t chunk = dim.value / n + (dim.value % n != 0);
      for (size_t i = 0; i < parts; ++i) {
        sizes[i] =
            Dim::known(std::clamp<int64_t>(dim.value - chunk * static_cast<int64_t>(i), 0, chunk));
      }
    } else {
      if (dim.value % n != 0) {
        fail("dim {} of size {} cannot be split into {} equal parts", axis, dim.value, n);
      }
      for (Dim& size : sizes) size = Dim::known(dim.value / n);
    }
  } else if (!split_unknown && parts == 1) {
    sizes[0] = dim;
  }
  for (size_t i = 0; i < parts; ++i) {
    std::vector<Dim> out = *dims;
    out[axis] = sizes[i];
    context.set_output(i, tensor_type(dtype, std::move(out)));
  }
}

// Expand: the input broadcast with the shape input.
void infer_expand(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type || !type->is_tensor()) return;
  const std::vector<SymbolicShape> shapes{type->shape, shape_input_dims(context, 1)};
  context.set_output(0, tensor_type(type->elem_type, broadcast_shapes(shapes)));
}

// Tile: each dim times its repeat (version 1: dim `axis` times `tiles`, both scalar inputs).
void infer_tile(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  std::vector<Dim> out = *dims;
  std::optional<std::vector<int64_t>> repeats;
  if (context.opset() < 6) {
    const std::optional<double> axis = input_scalar(context, 2);
    const std::optional<double> tiles = input_scalar(context, 1);
    if (!axis) {
      context.set_output(0, tensor_type(dtype, unknown_dims(dims->size())));
      return;
    }
    const size_t d = rule_axis(checked_int64(*axis, "axis"), dims->size());
    if (tiles) {
      repeats.emplace(dims->size(), 1);
      (*repeats)[d] = checked_int64(*tiles, "tiles");
    } else {
      out[d] = Dim{};
      context.set_output(0, tensor_type(dtype, std::move(out)));
      return;
    }
  } else {
    repeats = input_ints(context, 1);
  }
  if (repeats && repeats->size() != dims->size()) {
    fail("repeats has {} values, the input has rank {}", repeats->size(), dims->size());
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (!repeats) {
      out[d] = Dim{};
    } else if ((*repeats)[d] != 1) {
      out[d] = map_dim(out[d], [&](int64_t value) {
        return checked_mul(value, (*repeats)[d], "Tile's output dim");
      });
    }
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

}  // namespace

void register_shape_ops(OpRegistry& registry) {
  // The versions from 13 on of Identity, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze,
  // Transpose (and generators.cc's Constant and ConstantOfShape) only added types (bfloat16, then
  // 19-25 the float8, int4/uint4, float4 and other small types), which the kernels move without
  // reading.
  registry.add("Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}, kernel_factory<IdentityKernel>(),
               kZeroKeepingElementwiseOp, identity_shape_vector);
  registry.add("Shape", {1, 13, 15, 19, 21, 23, 24, 25}, kernel_factory<ShapeKernel>(), {},
               shape_shape_vector);
  registry.add("Size", {1, 13, 19, 21, 23, 24, 25}, kernel_factory<SizeKernel>(), {},
               size_shape_vector);
  // Version 1 of Reshape (the shape an attribute), Split (split an attribute or an input) and
  // Tile (tiles and axis inputs) is read by the same kernels and rules, by opset.
  registry.add("Reshape", {1, 5, 13, 14, 19, 21, 23, 24, 25}, kernel_factory<ReshapeKernel>(), {},
               reshape_shape_vector);
  registry.add("Flatten", {1, 9, 11, 13, 21, 23, 24, 25}, kernel_factory<FlattenKernel>());
  registry.add("Squeeze", {1, 11, 13, 21, 23, 24, 25}, kernel_factory<SqueezeKernel>(), {},
               squeeze_shape_vector);
  registry.add("Unsqueeze", {1, 11, 13, 21, 23, 24, 25}, kernel_factory<UnsqueezeKernel>(), {},
               unsqueeze_shape_vector);
  registry.add("Transpose", {1, 13, 21, 23, 24, 25}, kernel_factory<TransposeKernel>());
  registry.add("Concat", {1, 4, 11, 13}, kernel_factory<ConcatKernel>(),
               OpTraits{.axes = AxisRule::kSingleAxis}, concat_shape_vector);
  registry.add("Split", {1, 2, 11, 13, 18}, kernel_factory<SplitKernel>());
  registry.add("Expand", {8, 13}, kernel_factory<ExpandKernel>());
  registry.add("Tile", {1, 6, 13}, kernel_factory<TileKernel>());
  // ReverseSequence 28 added bfloat16.
  registry.add("ReverseSequence", {10, 28}, kernel_factory<ReverseSequenceKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "Identity", infer_same_as_input);
  registry.set_type_rule("", "Shape", infer_shape);
  registry.set_type_rule("", "Size", infer_size);
  registry.set_type_rule("", "Reshape", infer_reshape);
  registry.set_type_rule("", "Flatten", infer_flatten);
  registry.set_type_rule("", "Squeeze", infer_squeeze);
  registry.set_type_rule("", "Unsqueeze", infer_unsqueeze);
  registry.set_type_rule("", "Transpose", infer_transpose);
  registry.set_type_rule("", "Concat", infer_concat);
  registry.set_type_rule("", "Split", infer_split);
  registry.set_type_rule("", "Expand", infer_expand);
  registry.set_type_rule("", "Tile", infer_tile);
  registry.set_type_rule("", "ReverseSequence", infer_same_as_input);
}

}  // namespace onnxkit
