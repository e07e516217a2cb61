// Helpers shared by op families: dtype dispatch, broadcasting, axes, index tensors.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype_dispatch.h"
#include "core/status.h"
#include "onnxkit/tensor.h"
#include "ops/float_to_integer.h"
#include "ops/kernel.h"

namespace onnxkit {

// Element access that works for string tensors too.
template <typename T>
const T* tensor_elements(const Tensor& tensor) {
  if constexpr (std::is_same_v<T, std::string>) {
    return tensor.strings().data();
  } else {
    return tensor.data<T>();
  }
}
template <typename T>
T* mutable_tensor_elements(Tensor& tensor) {
  if constexpr (std::is_same_v<T, std::string>) {
    return tensor.mutable_strings().data();
  } else {
    return tensor.mutable_data<T>();
  }
}

// Row-major strides (in elements).
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);

// Multidirectional (numpy) broadcasting; fails naming the shapes when impossible.
Shape broadcast_shapes(std::span<const Shape> shapes);
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Whether `shape` broadcasts to `target` one way (numpy rules, `target` unchanged): no
// longer than it, each dim (aligned right) 1 or equal.
bool broadcasts_to(std::span<const int64_t> shape, std::span<const int64_t> target);

// Strides of `shape` read as if it had `out_shape` (0 where a dim is broadcast).
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out_shape);

// Visits every output element of `out_shape` in order, with the matching element offset
// of each input (given by its broadcast strides). f(out_index, offsets) where offsets has
// one entry per input.
template <typename F>
void for_each_broadcast(const Shape& out_shape, const std::vector<std::vector<int64_t>>& strides,
                        F&& f) {
  const int64_t total = shape_numel(out_shape);
  const size_t rank = out_shape.size();
  const size_t n = strides.size();
  std::vector<int64_t> offsets(n, 0);
  std::vector<int64_t> counter(rank, 0);
  for (int64_t index = 0; index < total; ++index) {
    f(index, offsets.data());
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < out_shape[d]) {
        for (size_t i = 0; i < n; ++i) offsets[i] += strides[i][d];
        break;
      }
      for (size_t i = 0; i < n; ++i) offsets[i] -= strides[i][d] * (out_shape[d] - 1);
      counter[d] = 0;
    }
  }
}

// out[i] = op(a[i'], b[i'']) with broadcasting; `out` must already have the broadcast shape.
template <typename TA, typename TB, typename TO, typename Op>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const TA* pa = tensor_elements<TA>(a);
  const TB* pb = tensor_elements<TB>(b);
  TO* po = mutable_tensor_elements<TO>(out);
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], pb[i]);
  } else if (a.shape() == out.shape() && b.numel() == 1) {
    const TB scalar = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], scalar);
  } else if (b.shape() == out.shape() && a.numel() == 1) {
    const TA scalar = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = op(scalar, pb[i]);
  } else if (out.rank() == 0 || n == 0) {
    if (n) po[0] = op(pa[0], pb[0]);
  } else {
    // Row by row along the last axis, where each input steps by 1 or 0 (broadcast): the
    // loops vectorize, and a one-hot's [N, L, 1] == [1, 1, 257] no longer pays the
    // per-element counter walk (2.4 ms for 526k elements, 30x ORT's time).
    std::vector<std::vector<int64_t>> strides{broadcast_strides(a.shape(), out.shape()),
                                              broadcast_strides(b.shape(), out.shape())};
    const int64_t row = out.shape().back(), step_a = strides[0].back(), step_b = strides[1].back();
    for (auto& s : strides) s.pop_back();
    const Shape rows(out.shape().begin(), out.shape().end() - 1);
    for_each_broadcast(rows, strides, [&](int64_t r, const int64_t* offsets) {
      const TA* ra = pa + offsets[0];
      const TB* rb = pb + offsets[1];
      TO* ro = po + r * row;
      if (step_a && step_b) {
        for (int64_t j = 0; j < row; ++j) ro[j] = op(ra[j], rb[j]);
      } else if (step_b) {
        const TA x = ra[0];
        for (int64_t j = 0; j < row; ++j) ro[j] = op(x, rb[j]);
      } else if (step_a) {
        const TB y = rb[0];
        for (int64_t j = 0; j < row; ++j) ro[j] = op(ra[j], y);
      } else {
        const TO value = op(ra[0], rb[0]);
        for (int64_t j = 0; j < row; ++j) ro[j] = value;
      }
    });
  }
}

// Maps a possibly negative axis into [0, rank); fails naming `what` when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what);

// Values of an integer tensor (int32 or int64, any shape) as int64.
std::vector<int64_t> read_int64s(const Tensor& tensor, std::string_view what);
// Input i, a 1-D (or scalar) integer tensor (a shape, axes), as int64 values; fails naming
// `what` for another rank.
std::vector<int64_t> read_index_input(const KernelContext& context, size_t i,
                                      std::string_view what);
// A scalar (or one-element) tensor of any numeric type, as double.
double read_scalar(const Tensor& tensor, std::string_view what);

// The elements of a floating-point tensor as doubles (`what` names it in the error).
std::vector<double> read_doubles(const KernelContext& context, const Tensor& tensor,
                                 std::string_view what);
// A new output of floating-point type `dtype` holding `values`.
Tensor& write_doubles(KernelContext& context, size_t output, DType dtype, Shape shape,
                      const std::vector<double>& values);
// For each element of `shape`, the offset of the element of `tensor` it reads when
// `tensor` broadcasts to `shape` one way (numpy rules); fails naming `what` when it does not.
std::vector<int64_t> broadcast_offsets(const KernelContext& context, const Tensor& tensor,
                                       const Shape& shape, std::string_view what);

// ---- data movement for any dtype (strings included) ----

// Elements [start, start + length) of `axis`, as a new tensor (same rank).
Tensor slice_along_axis(const Tensor& input, int64_t axis, int64_t start, int64_t length);
// Element `index` of `axis`, with that axis removed.
Tensor select_along_axis(const Tensor& input, int64_t axis, int64_t index);
// Joins tensors of equal dtype and rank along `axis` (other dims must match).
Tensor concat_tensors(const std::vector<Tensor>& inputs, int64_t axis, std::string_view what);
// Stacks tensors of identical shape along a new `axis`.
Tensor stack_tensors(const std::vector<Tensor>& inputs, int64_t axis, std::string_view what);

// Float16 and BFloat16: arithmetic on them runs in float.
template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type arithmetic on T elements runs in: float for the 16-bit floats, T otherwise.
template <typename T>
using ComputeType = std::conditional_t<kIsHalf<T>, float, T>;

template <typename T>
ComputeType<T> to_compute(T value) {
  return static_cast<ComputeType<T>>(value);
}

// Converts between element types as ONNX Cast does for numbers: float -> int truncates, and
// NaN or a value the integer type cannot hold converts as Cast's kernel does (a plain C++
// cast would be undefined for those).
template <typename To, typename From>
To convert_element(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (std::is_same_v<To, Float16> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(value));
  } else if constexpr (std::is_same_v<From, Float16> || std::is_same_v<From, BFloat16>) {
    return convert_element<To>(static_cast<float>(value));
  } else if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool> &&
                       std::is_floating_point_v<From>) {
    return float_to_integer<To>(static_cast<double>(value));
  } else {
    return static_cast<To>(value);
  }
}

// The elements of a T tensor as C: the tensor's own memory when the types match, else a
// converted copy kept in `storage`.
template <typename T, typename C>
const C* elements_as(const Tensor& tensor, std::vector<C>& storage) {
  if constexpr (std::is_same_v<T, C>) {
    return tensor.data<T>();
  } else {
    const T* src = tensor.data<T>();
    storage.resize(static_cast<size_t>(tensor.numel()));
    for (size_t i = 0; i < storage.size(); ++i) storage[i] = convert_element<C>(src[i]);
    return storage.data();
  }
}

}  // namespace onnxkit
