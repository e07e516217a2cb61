#include "ops/op_utils.h"

#include <algorithm>

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
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    if (!(rank == 0 && (axis == 0 || axis == -1))) {
      fail("{}: axis {} is out of range for rank {}", what, axis, rank);
    }
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

}  // namespace onnxkit
