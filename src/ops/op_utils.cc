#include "ops/op_utils.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/resource_limits.h"

namespace onnxkit {

std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

Shape broadcast_shapes(std::span<const Shape> shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
  Shape out(rank, 1);
  for (const Shape& shape : shapes) {
    size_t offset = rank - shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t dim = shape[d];
      int64_t& target = out[offset + d];
      if (dim == target || dim == 1) continue;
      if (target == 1) {
        target = dim;
        continue;
      }
      std::string text;
      for (const Shape& s : shapes) text += (text.empty() ? "" : " and ") + shape_to_string(s);
      fail("shapes {} cannot be broadcast together", text);
    }
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const Shape shapes[] = {a, b};
  return broadcast_shapes(shapes);
}

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  std::vector<int64_t> own = contiguous_strides(shape);
  size_t offset = out_shape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    strides[offset + d] = shape[d] == 1 ? 0 : own[d];
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    fail("{}: axis {} is out of range for rank {}", what, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> read_int64s(const Tensor& tensor, std::string_view what) {
  std::vector<int64_t> values(static_cast<size_t>(tensor.numel()));
  switch (tensor.dtype()) {
    case DType::kInt64:
      std::copy_n(tensor.data<int64_t>(), values.size(), values.begin());
      break;
    case DType::kInt32:
      std::copy_n(tensor.data<int32_t>(), values.size(), values.begin());
      break;
    default:
      fail("{}: expected an int64 or int32 tensor, got {}", what, dtype_name(tensor.dtype()));
  }
  return values;
}

std::vector<int64_t> read_index_input(const KernelContext& context, size_t i,
                                      std::string_view what) {
  const Tensor& tensor = context.input(i);
  if (tensor.rank() > 1) {
    context.fail("{} must be 1-D, got shape {}", what, shape_to_string(tensor.shape()));
  }
  return read_int64s(tensor, what);
}

double read_scalar(const Tensor& tensor, std::string_view what) {
  if (tensor.numel() != 1) {
    fail("{}: expected a single value, got shape {}", what, shape_to_string(tensor.shape()));
  }
  if (tensor.dtype() == DType::kBool) return tensor.data<bool>()[0] ? 1.0 : 0.0;
  return dispatch_numeric(tensor.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return convert_element<double>(tensor.data<T>()[0]);
  });
}

namespace {

// Copies `rows` blocks: row r takes `bytes` bytes from src + r*src_stride to dst + r*dst_stride.
// Strings are copied element-wise with the same geometry in elements.
void copy_rows(const Tensor& src, int64_t src_offset, int64_t src_stride, Tensor& dst,
               int64_t dst_offset, int64_t dst_stride, int64_t rows, int64_t row_elements) {
  if (row_elements == 0 || rows == 0) return;
  if (src.dtype() == DType::kString) {
    const auto& in = src.strings();
    auto& out = dst.mutable_strings();
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(in.begin() + src_offset + r * src_stride, row_elements,
                  out.begin() + dst_offset + r * dst_stride);
    }
    return;
  }
  const size_t size = dtype_size(src.dtype());
  const auto* in = static_cast<const uint8_t*>(src.raw_data());
  auto* out = static_cast<uint8_t*>(dst.mutable_raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(out + (dst_offset + r * dst_stride) * size,
                in + (src_offset + r * src_stride) * size,
                static_cast<size_t>(row_elements) * size);
  }
}

// Product of dims [from, to).
int64_t dims_product(const Shape& shape, size_t from, size_t to) {
  int64_t product = 1;
  for (size_t d = from; d < to; ++d) product *= shape[d];
  return product;
}

}  // namespace

Tensor slice_along_axis(const Tensor& input, int64_t axis, int64_t start, int64_t length) {
  const Shape& shape = input.shape();
  const size_t a = static_cast<size_t>(axis);
  if (start < 0 || length < 0 || start + length > shape.at(a)) {
    fail("slice [{}, {}) is out of range for dim {} of size {}", start, start + length, axis,
         shape.at(a));
  }
  Shape out_shape = shape;
  out_shape[a] = length;
  Tensor out(input.dtype(), out_shape);
  const int64_t outer = dims_product(shape, 0, a);
  const int64_t inner = dims_product(shape, a + 1, shape.size());
  copy_rows(input, start * inner, shape[a] * inner, out, 0, length * inner, outer, length * inner);
  return out;
}

Tensor select_along_axis(const Tensor& input, int64_t axis, int64_t index) {
  Tensor slice = slice_along_axis(input, axis, index, 1);
  Shape shape = slice.shape();
  shape.erase(shape.begin() + axis);
  if (slice.dtype() == DType::kString) return Tensor::from_strings(shape, slice.strings());
  return Tensor::from_buffer(slice.dtype(), shape, slice.buffer());
}

Tensor concat_tensors(const std::vector<Tensor>& inputs, int64_t axis, std::string_view what) {
  if (inputs.empty()) fail("{}: nothing to concatenate", what);
  const Tensor& first = inputs[0];
  const size_t rank = first.rank();
  axis = normalize_axis(axis, static_cast<int64_t>(rank), what);
  const size_t a = static_cast<size_t>(axis);
  Shape out_shape = first.shape();
  out_shape[a] = 0;
  for (const Tensor& t : inputs) {
    if (t.dtype() != first.dtype() || t.rank() != rank) {
      fail("{}: cannot concatenate {}{} with {}{}", what, dtype_name(first.dtype()),
           shape_to_string(first.shape()), dtype_name(t.dtype()), shape_to_string(t.shape()));
    }
    for (size_t d = 0; d < rank; ++d) {
      if (d != a && t.shape()[d] != first.shape()[d]) {
        fail("{}: shapes {} and {} differ in dim {} (concatenating along {})", what,
             shape_to_string(first.shape()), shape_to_string(t.shape()), d, axis);
      }
    }
    out_shape[a] += t.shape()[a];
  }
  Tensor out(first.dtype(), out_shape);
  const int64_t outer = dims_product(out_shape, 0, a);
  const int64_t inner = dims_product(out_shape, a + 1, rank);
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    const int64_t row = t.shape()[a] * inner;
    copy_rows(t, 0, row, out, offset, out_shape[a] * inner, outer, row);
    offset += row;
  }
  return out;
}

Tensor stack_tensors(const std::vector<Tensor>& inputs, int64_t axis, std::string_view what) {
  if (inputs.empty()) fail("{}: nothing to stack", what);
  const int64_t rank = static_cast<int64_t>(inputs[0].rank());
  axis = normalize_axis(axis, rank + 1, what);
  std::vector<Tensor> expanded;
  expanded.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    if (t.shape() != inputs[0].shape()) {
      fail("{}: cannot stack shapes {} and {}", what, shape_to_string(inputs[0].shape()),
           shape_to_string(t.shape()));
    }
    Shape shape = t.shape();
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(t.dtype() == DType::kString
                           ? Tensor::from_strings(shape, t.strings())
                           : Tensor::from_buffer(t.dtype(), shape, t.buffer()));
  }
  return concat_tensors(expanded, axis, what);
}

bool broadcasts_to(std::span<const int64_t> shape, std::span<const int64_t> target) {
  if (shape.size() > target.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t dim = shape[shape.size() - 1 - i];
    if (dim != 1 && dim != target[target.size() - 1 - i]) return false;
  }
  return true;
}

std::vector<double> read_doubles(const KernelContext& context, const Tensor& tensor,
                                 std::string_view what) {
  if (!dtype_is_float(tensor.dtype())) {
    context.fail("{} has type {}; it needs a floating-point type", what,
                 dtype_name(tensor.dtype()));
  }
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  dispatch_float(tensor.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(p[i]);
  });
  return values;
}

Tensor& write_doubles(KernelContext& context, size_t output, DType dtype, Shape shape,
                      const std::vector<double>& values) {
  Tensor& tensor = context.allocate_output(output, dtype, std::move(shape));
  dispatch_float(dtype, context.node().op_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = tensor.mutable_data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return tensor;
}

std::vector<int64_t> broadcast_offsets(const KernelContext& context, const Tensor& tensor,
                                       const Shape& shape, std::string_view what) {
  if (!broadcasts_to(tensor.shape(), shape)) {
    context.fail("{} of shape {} does not broadcast to {}", what, shape_to_string(tensor.shape()),
                 shape_to_string(shape));
  }
  // One offset per element of `shape` (often the output's, not yet allocated): bounded first.
  const int64_t numel = shape_numel(shape);
  check_allocation(checked_nbytes(DType::kInt64, numel, shape_to_string(shape)));
  std::vector<int64_t> offsets(static_cast<size_t>(numel));
  if (offsets.empty()) return offsets;
  for_each_broadcast(shape, {broadcast_strides(tensor.shape(), shape)},
                     [&](int64_t i, const int64_t* o) { offsets[i] = o[0]; });
  return offsets;
}

}  // namespace onnxkit
