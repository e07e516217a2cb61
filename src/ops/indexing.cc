// Op family: indexing (Slice, Gather, GatherElements, GatherND, Scatter, ScatterElements,
// ScatterND, NonZero, OneHot, Trilu, EyeLike, Compress, Unique).
//
// Most of these ops only move elements, so they dispatch on the element's storage (an
// unsigned integer of the dtype's size, or std::string) rather than on its meaning: one
// instantiation serves every dtype, complex included. Only reductions, NonZero and the
// constant-producing ops look at values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>

#include "core/resource_limits.h"
#include "ops/op_utils.h"
#include "ops/registry.h"
#include "ops/shape_vector.h"

namespace onnxkit {
namespace {

template <typename S>
const S* storage(const Tensor& tensor) {
  if constexpr (std::is_same_v<S, std::string>) {
    return tensor.strings().data();
  } else {
    return static_cast<const S*>(tensor.raw_data());
  }
}
template <typename S>
S* mutable_storage(Tensor& tensor) {
  if constexpr (std::is_same_v<S, std::string>) {
    return tensor.mutable_strings().data();
  } else {
    return static_cast<S*>(tensor.mutable_raw_data());
  }
}

// A copy of `tensor` whose elements this kernel may write (one copy of the bytes).
Tensor writable_copy(const Tensor& tensor) {
  Tensor copy = tensor;
  if (copy.dtype() == DType::kString) {
    copy.mutable_strings();
  } else {
    copy.mutable_raw_data();
  }
  return copy;
}

// Visits the positions of `shape` in row-major order: f(index, offset) with
// offset = sum(position[d] * strides[d]).
template <typename F>
void for_each_offset(const Shape& shape, const std::vector<int64_t>& strides, F&& f) {
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0;
  for (int64_t index = 0; index < total; ++index) {
    f(index, offset);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      counter[d] = 0;
    }
  }
}

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

// Maps an index in [-size, size) to [0, size); fails naming the index and its position.
int64_t wrap_index(const KernelContext& context, int64_t value, int64_t size, int64_t axis,
                   int64_t position) {
  if (value < -size || value >= size) {
    context.fail("indices value {} (at indices element {}) is out of bounds for axis {} of size {}",
                 value, position, axis, size);
  }
  return value < 0 ? value + size : value;
}

// Indices of the element-wise ops (GatherElements, ScatterElements): same rank as data,
// no dim larger than data's except along `axis`.
void check_element_indices(const KernelContext& context, const Shape& data, const Shape& indices,
                           int64_t axis) {
  if (indices.size() != data.size()) {
    context.fail("indices rank {} differs from data rank {}", indices.size(), data.size());
  }
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d]) {
      context.fail("indices dim {} is {}, larger than data dim {}", d, indices[d], data[d]);
    }
  }
}

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

// `reduction` came with opset 16 (add, mul) and 18 (max, min).
Reduction parse_reduction(const KernelCreateContext& context) {
  const std::string name = context.attr_string("reduction", "none");
  if (name == "none") return Reduction::kNone;
  const bool extreme = name == "max" || name == "min";
  const int64_t needs = extreme ? 18 : 16;
  if ((extreme || name == "add" || name == "mul") && context.opset() < needs) {
    context.fail("reduction '{}' needs opset {}, the model imports opset {}", name, needs,
                 context.opset());
  }
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  context.fail("reduction '{}' is not supported (none, add, mul, max or min)", name);
}

template <typename T>
T reduce_value(Reduction reduction, T a, T b) {
  if (reduction == Reduction::kMax || reduction == Reduction::kMin) {
    // NaN wins, as numpy's maximum and minimum.
    const auto x = to_compute(a), y = to_compute(b);
    if constexpr (!std::is_integral_v<decltype(x)>) {
      if (x != x) return a;
      if (y != y) return b;
    }
    return (reduction == Reduction::kMax ? x < y : y < x) ? b : a;
  }
  const bool add = reduction == Reduction::kAdd;
  if constexpr (std::is_same_v<T, bool>) {
    return add ? (a || b) : (a && b);
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(add ? static_cast<float>(a) + static_cast<float>(b)
                 : static_cast<float>(a) * static_cast<float>(b));
  } else if constexpr (std::is_integral_v<T>) {
    // Wrap around like the hardware instead of signed-overflow UB.
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(add ? static_cast<U>(static_cast<U>(a) + static_cast<U>(b))
                              : static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return add ? a + b : a * b;
  }
}

// Applies out[targets[i]] (op)= updates[i * block .. (i + 1) * block) for every i, in order.
// `targets` are element offsets of blocks of `block` contiguous elements.
void scatter_blocks(const KernelContext& context, Reduction reduction,
                    const std::vector<int64_t>& targets, int64_t block, const Tensor& updates,
                    Tensor& out) {
  if (reduction == Reduction::kNone) {
    dispatch_storage(out.dtype(), context.node().op_type(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(updates);
      S* dst = mutable_storage<S>(out);
      for (size_t i = 0; i < targets.size(); ++i) {
        std::copy_n(src + static_cast<int64_t>(i) * block, block, dst + targets[i]);
      }
    });
    return;
  }
  if (!dtype_is_float(out.dtype()) && !dtype_is_integer(out.dtype()) &&
      out.dtype() != DType::kBool) {
    context.fail("a reduction is not supported for type {}", dtype_name(out.dtype()));
  }
  dispatch_numeric_bool(out.dtype(), context.node().op_type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = updates.data<T>();
    T* dst = out.mutable_data<T>();
    for (size_t i = 0; i < targets.size(); ++i) {
      const T* from = src + static_cast<int64_t>(i) * block;
      T* to = dst + targets[i];
      for (int64_t j = 0; j < block; ++j) to[j] = reduce_value(reduction, to[j], from[j]);
    }
  });
}

// ---------------------------------------------------------------------------------------
// Slice

// Where Slice reads along one axis of `dim` elements: the first index and how many, with
// start and end counted from the back when negative and clamped as ONNX defines.
struct SliceAxis {
  int64_t first = 0, count = 0;
};

SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t count = 0;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end > start) count = (end - start - 1) / step + 1;
  } else if (dim > 0) {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // |step| as unsigned: -INT64_MIN does not fit an int64.
    const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(step);
    if (start > end) {
      count = static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude) + 1;
    }
  }
  return {count > 0 ? start : 0, count};
}

class SliceKernel : public OpKernel {
 public:
  explicit SliceKernel(const KernelCreateContext& context) : from_inputs_(context.opset() >= 10) {
    if (!from_inputs_) {
      starts_ = context.attr_ints("starts");
      ends_ = context.attr_ints("ends");
      axes_ = context.attr_ints_opt("axes");
      if (!context.has_attribute("starts") || !context.has_attribute("ends")) {
        context.fail("attributes 'starts' and 'ends' are required");
      }
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    std::vector<int64_t> starts = starts_;
    std::vector<int64_t> ends = ends_;
    std::optional<std::vector<int64_t>> axes = axes_;
    std::optional<std::vector<int64_t>> steps;
    if (from_inputs_) {
      starts = read_int64s(context.input(1), "Slice starts");
      ends = read_int64s(context.input(2), "Slice ends");
      if (context.has_input(3)) axes = read_int64s(context.input(3), "Slice axes");
      if (context.has_input(4)) steps = read_int64s(context.input(4), "Slice steps");
    }
    const int64_t rank = static_cast<int64_t>(data.rank());
    const size_t n = starts.size();
    if (ends.size() != n) context.fail("starts has {} values but ends has {}", n, ends.size());
    if (axes && axes->size() != n) {
      context.fail("starts has {} values but axes has {}", n, axes->size());
    }
    if (steps && steps->size() != n) {
      context.fail("starts has {} values but steps has {}", n, steps->size());
    }
    if (!axes && static_cast<int64_t>(n) > rank) {
      context.fail("starts has {} values, more than the data rank {}", n, rank);
    }

    const Shape& in_shape = data.shape();
    Shape out_shape = in_shape;
    std::vector<int64_t> first(rank, 0);
    std::vector<int64_t> step_of(rank, 1);
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < n; ++i) {
      int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
      if (axis < -rank || axis >= rank) {
        context.fail("axis {} is out of range for rank {}", axis, rank);
      }
      if (axis < 0) axis += rank;
      if (seen[axis]) context.fail("axis {} appears more than once in axes", axis);
      seen[axis] = true;
      const int64_t step = steps ? (*steps)[i] : 1;
      if (step == 0) context.fail("step for axis {} is 0", axis);
      const SliceAxis window = slice_axis(in_shape[axis], starts[i], ends[i], step);
      out_shape[axis] = window.count;
      first[axis] = window.first;
      step_of[axis] = step;
    }

    Tensor& out = context.allocate_output_uninitialized(0, data.dtype(), out_shape);
    if (out.numel() == 0) return;
    const std::vector<int64_t> in_strides = contiguous_strides(in_shape);
    std::vector<int64_t> strides(rank);
    int64_t base = 0;
    for (int64_t d = 0; d < rank; ++d) {
      base += first[d] * in_strides[d];
      strides[d] = step_of[d] * in_strides[d];
    }
    dispatch_storage(data.dtype(), "Slice", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(data) + base;
      S* dst = mutable_storage<S>(out);
      // Innermost axes taken whole, and the step-1 axis before them, are contiguous in both
      // tensors: copy whole runs (QKV splits, crops; a slice of everything is one copy).
      // Read one element at a time, magika's [1,512,256,1] identity Slice took 0.9 ms.
      int64_t inner = rank, run = 1;
      while (inner > 0 && first[inner - 1] == 0 && step_of[inner - 1] == 1 &&
             out_shape[inner - 1] == in_shape[inner - 1]) {
        run *= in_shape[--inner];
      }
      if (inner > 0 && step_of[inner - 1] == 1) run *= out_shape[--inner];
      if (inner < rank) {
        std::vector<int64_t> outer_shape(out_shape.begin(), out_shape.begin() + inner);
        std::vector<int64_t> outer_strides(strides.begin(), strides.begin() + inner);
        for_each_offset(outer_shape, outer_strides, [&](int64_t index, int64_t offset) {
          std::copy_n(src + offset, run, dst + index * run);
        });
        return;
      }
      for_each_offset(out_shape, strides,
                      [&](int64_t index, int64_t offset) { dst[index] = src[offset]; });
    });
  }

 private:
  bool from_inputs_;
  std::vector<int64_t> starts_;
  std::vector<int64_t> ends_;
  std::optional<std::vector<int64_t>> axes_;
};

// One slice of a vector along axis 0 (starts/ends/axes: attributes before opset 10, inputs
// 1.. from 10).
std::optional<ShapeVector> slice_shape_vector(const ShapeVectorContext& context) {
  const ShapeVector* data = context.input(0);
  if (!data || data->scalar) return std::nullopt;
  const Node& node = context.node();
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  bool from_shape = data->from_shape;
  if (context.opset() < 10) {
    if (const auto* a = context.attr_ints("starts")) starts = *a;
    if (const auto* a = context.attr_ints("ends")) ends = *a;
    if (const auto* a = context.attr_ints("axes")) axes = *a;
  } else {
    starts = context.known_ints(1);
    ends = context.known_ints(2);
    if (node.input(3) && !(axes = context.known_ints(3))) return std::nullopt;
    if (node.input(4) && !(steps = context.known_ints(4))) return std::nullopt;
    for (size_t i = 1; i < 5; ++i) {
      if (const ShapeVector* in = context.input(i)) from_shape |= in->from_shape;
    }
  }
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  if (axes && !ShapeVector::names_axis_zero(*axes)) return std::nullopt;
  if (steps && steps->size() != 1) return std::nullopt;
  const int64_t step = steps ? (*steps)[0] : 1;
  if (step == 0) return std::nullopt;
  const auto n = static_cast<int64_t>(data->elems.size());
  ShapeVector out;
  out.dtype = data->dtype;
  out.from_shape = from_shape;
  if (n == 0) return out;
  int64_t start = (*starts)[0], end = (*ends)[0];
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
  } else {
    start = std::clamp<int64_t>(start, 0, n - 1);
    end = std::clamp<int64_t>(end, -1, n - 1);
  }
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) {
    out.elems.push_back(data->elems[i]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Gather, GatherElements, GatherND

class GatherKernel : public OpKernel {
 public:
  explicit GatherKernel(const KernelCreateContext& context) : axis_(context.attr_int("axis", 0)) {}

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const Tensor& indices_tensor = context.input(1);
    if (data.rank() == 0) context.fail("data must have rank >= 1, got a scalar");
    const int64_t rank = static_cast<int64_t>(data.rank());
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    std::vector<int64_t> indices = read_int64s(indices_tensor, context.node().describe());
    const int64_t dim = data.shape()[axis];
    for (size_t i = 0; i < indices.size(); ++i) {
      indices[i] = wrap_index(context, indices[i], dim, axis, static_cast<int64_t>(i));
    }
    Shape out_shape(data.shape().begin(), data.shape().begin() + axis);
    out_shape.insert(out_shape.end(), indices_tensor.shape().begin(), indices_tensor.shape().end());
    out_shape.insert(out_shape.end(), data.shape().begin() + axis + 1, data.shape().end());
    Tensor& out = context.allocate_output_uninitialized(0, data.dtype(), out_shape);
    if (out.numel() == 0) return;
    const int64_t outer = product(data.shape(), 0, axis);
    const int64_t inner = product(data.shape(), axis + 1, rank);
    const int64_t count = static_cast<int64_t>(indices.size());
    dispatch_storage(data.dtype(), "Gather", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(data);
      S* dst = mutable_storage<S>(out);
      for (int64_t o = 0; o < outer; ++o) {
        const S* block = src + o * dim * inner;
        for (int64_t j = 0; j < count; ++j) {
          std::copy_n(block + indices[j] * inner, inner, dst);
          dst += inner;
        }
      }
    });
  }

 private:
  int64_t axis_;
};

// Known indices into a vector (axis 0).
std::optional<ShapeVector> gather_shape_vector(const ShapeVectorContext& context) {
  const ShapeVector* data = context.input(0);
  const ShapeVector* indices_vec = context.input(1);
  if (!data || data->scalar || !indices_vec) return std::nullopt;
  auto indices = context.known_ints(1);
  const int64_t axis = context.attr_int("axis", 0);
  if (!indices || (axis != 0 && axis != -1)) return std::nullopt;
  const auto n = static_cast<int64_t>(data->elems.size());
  ShapeVector out;
  out.dtype = data->dtype;
  out.scalar = indices_vec->scalar;
  out.from_shape = data->from_shape || indices_vec->from_shape;
  for (int64_t index : *indices) {
    if (index < -n || index >= n) return std::nullopt;
    out.elems.push_back(data->elems[index < 0 ? index + n : index]);
  }
  return out;
}

class GatherElementsKernel : public OpKernel {
 public:
  explicit GatherElementsKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", 0)) {}

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const Tensor& indices_tensor = context.input(1);
    if (data.rank() == 0) context.fail("data must have rank >= 1, got a scalar");
    const int64_t rank = static_cast<int64_t>(data.rank());
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    check_element_indices(context, data.shape(), indices_tensor.shape(), axis);
    const std::vector<int64_t> indices = read_int64s(indices_tensor, context.node().describe());
    const int64_t dim = data.shape()[axis];
    std::vector<int64_t> strides = contiguous_strides(data.shape());
    const int64_t axis_stride = strides[axis];
    strides[axis] = 0;
    std::vector<int64_t> offsets(indices.size());
    for_each_offset(indices_tensor.shape(), strides, [&](int64_t i, int64_t offset) {
      offsets[i] = offset + wrap_index(context, indices[i], dim, axis, i) * axis_stride;
    });
    Tensor& out = context.allocate_output_uninitialized(0, data.dtype(), indices_tensor.shape());
    if (out.numel() == 0) return;
    dispatch_storage(data.dtype(), "GatherElements", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(data);
      S* dst = mutable_storage<S>(out);
      for (size_t i = 0; i < offsets.size(); ++i) dst[i] = src[offsets[i]];
    });
  }

 private:
  int64_t axis_;
};

// Element offsets into `data` of the index tuples of an ND index tensor (GatherND,
// ScatterND), in order; `batch_dims` leading dims are shared by data and indices.
struct NdTargets {
  std::vector<int64_t> offsets;
  int64_t block = 1;  // elements per slice: product of data.shape[batch_dims + k:]
};

NdTargets nd_targets(const KernelContext& context, const Shape& data_shape,
                     const Tensor& indices_tensor, int64_t batch_dims) {
  const Shape& index_shape = indices_tensor.shape();
  const int64_t r = static_cast<int64_t>(data_shape.size());
  const int64_t q = static_cast<int64_t>(index_shape.size());
  if (r < 1) context.fail("data must have rank >= 1, got a scalar");
  if (q < 1) context.fail("indices must have rank >= 1, got a scalar");
  if (batch_dims < 0 || batch_dims >= std::min(q, r)) {
    context.fail("batch_dims {} must be in [0, {}) for data rank {} and indices rank {}",
                 batch_dims, std::min(q, r), r, q);
  }
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (data_shape[d] != index_shape[d]) {
      context.fail("batch dim {} of data is {} but of indices is {}", d, data_shape[d],
                   index_shape[d]);
    }
  }
  const int64_t k = index_shape[q - 1];
  if (k > r - batch_dims) {
    context.fail("indices last dim {} is larger than data rank {} minus batch_dims {}", k, r,
                 batch_dims);
  }
  const std::vector<int64_t> indices = read_int64s(indices_tensor, context.node().describe());
  const std::vector<int64_t> strides = contiguous_strides(data_shape);
  NdTargets targets;
  targets.block = product(data_shape, batch_dims + k, r);
  const int64_t batches = product(data_shape, 0, batch_dims);
  const int64_t batch_stride = product(data_shape, batch_dims, r);
  const int64_t tuples = product(index_shape, 0, q - 1);
  const int64_t per_batch = batches > 0 ? tuples / batches : 0;
  targets.offsets.resize(tuples);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (per_batch > 0 ? t / per_batch : 0) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t axis = batch_dims + j;
      const int64_t value =
          wrap_index(context, indices[t * k + j], data_shape[axis], axis, t * k + j);
      offset += value * strides[axis];
    }
    targets.offsets[t] = offset;
  }
  return targets;
}

class GatherNDKernel : public OpKernel {
 public:
  explicit GatherNDKernel(const KernelCreateContext& context)
      : batch_dims_(context.attr_int("batch_dims", 0)) {}

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const Tensor& indices = context.input(1);
    const NdTargets targets = nd_targets(context, data.shape(), indices, batch_dims_);
    Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
    const int64_t k = indices.shape().back();
    out_shape.insert(out_shape.end(), data.shape().begin() + batch_dims_ + k, data.shape().end());
    Tensor& out = context.allocate_output(0, data.dtype(), out_shape);
    if (out.numel() == 0) return;
    dispatch_storage(data.dtype(), "GatherND", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(data);
      S* dst = mutable_storage<S>(out);
      for (int64_t offset : targets.offsets) {
        std::copy_n(src + offset, targets.block, dst);
        dst += targets.block;
      }
    });
  }

 private:
  int64_t batch_dims_;
};

// ---------------------------------------------------------------------------------------
// Scatter (deprecated, = ScatterElements without reduction), ScatterElements, ScatterND

class ScatterElementsKernel : public OpKernel {
 public:
  explicit ScatterElementsKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", 0)),
        reduction_(context.node().op_type() == "Scatter" ? Reduction::kNone
                                                         : parse_reduction(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const Tensor& indices_tensor = context.input(1);
    const Tensor& updates = context.input(2);
    if (data.rank() == 0) context.fail("data must have rank >= 1, got a scalar");
    if (updates.dtype() != data.dtype()) {
      context.fail("updates type {} differs from data type {}", dtype_name(updates.dtype()),
                   dtype_name(data.dtype()));
    }
    if (updates.shape() != indices_tensor.shape()) {
      context.fail("updates shape {} differs from indices shape {}",
                   shape_to_string(updates.shape()), shape_to_string(indices_tensor.shape()));
    }
    const int64_t rank = static_cast<int64_t>(data.rank());
    const int64_t axis = normalize_axis(axis_, rank, context.node().describe());
    check_element_indices(context, data.shape(), indices_tensor.shape(), axis);
    const std::vector<int64_t> indices = read_int64s(indices_tensor, context.node().describe());
    const int64_t dim = data.shape()[axis];
    std::vector<int64_t> strides = contiguous_strides(data.shape());
    const int64_t axis_stride = strides[axis];
    strides[axis] = 0;
    std::vector<int64_t> targets(indices.size());
    for_each_offset(indices_tensor.shape(), strides, [&](int64_t i, int64_t offset) {
      targets[i] = offset + wrap_index(context, indices[i], dim, axis, i) * axis_stride;
    });
    Tensor out = writable_copy(data);
    scatter_blocks(context, reduction_, targets, 1, updates, out);
    context.set_output(0, std::move(out));
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

class ScatterNDKernel : public OpKernel {
 public:
  explicit ScatterNDKernel(const KernelCreateContext& context)
      : reduction_(parse_reduction(context)) {}

  void compute(KernelContext& context) const override {
    const Tensor& data = context.input(0);
    const Tensor& indices = context.input(1);
    const Tensor& updates = context.input(2);
    if (updates.dtype() != data.dtype()) {
      context.fail("updates type {} differs from data type {}", dtype_name(updates.dtype()),
                   dtype_name(data.dtype()));
    }
    const NdTargets targets = nd_targets(context, data.shape(), indices, 0);
    Shape expected(indices.shape().begin(), indices.shape().end() - 1);
    const int64_t k = indices.shape().back();
    expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
    if (updates.shape() != expected) {
      context.fail("updates shape {} must be {} (indices.shape[:-1] + data.shape[{}:])",
                   shape_to_string(updates.shape()), shape_to_string(expected), k);
    }
    Tensor out = writable_copy(data);
    scatter_blocks(context, reduction_, targets.offsets, targets.block, updates, out);
    context.set_output(0, std::move(out));
  }

 private:
  Reduction reduction_;
};

// ---------------------------------------------------------------------------------------
// NonZero

// Flat indices of the non-zero elements of `x`, in order. Floats compare as numbers (-0.0
// is zero, NaN is not), strings are non-zero when not empty, complex when either part is.
std::vector<int64_t> nonzero_positions(const Tensor& x) {
  std::vector<int64_t> hits;
  const int64_t total = x.numel();
  auto collect = [&](auto is_nonzero) {
    for (int64_t i = 0; i < total; ++i) {
      if (is_nonzero(i)) hits.push_back(i);
    }
  };
  if (x.dtype() == DType::kComplex64) {
    const float* p = static_cast<const float*>(x.raw_data());
    collect([p](int64_t i) { return p[2 * i] != 0 || p[2 * i + 1] != 0; });
  } else if (x.dtype() == DType::kComplex128) {
    const double* p = static_cast<const double*>(x.raw_data());
    collect([p](int64_t i) { return p[2 * i] != 0 || p[2 * i + 1] != 0; });
  } else {
    dispatch_all(x.dtype(), "NonZero", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = tensor_elements<T>(x);
      if constexpr (std::is_same_v<T, std::string>) {
        collect([p](int64_t i) { return !p[i].empty(); });
      } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        collect([p](int64_t i) { return static_cast<float>(p[i]) != 0.0f; });
      } else {
        collect([p](int64_t i) { return p[i] != T{}; });
      }
    });
  }
  return hits;
}

class NonZeroKernel : public OpKernel {
 public:
  explicit NonZeroKernel(const KernelCreateContext&) {}

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    const Shape& shape = x.shape();
    const size_t rank = shape.size();
    const std::vector<int64_t> hits = nonzero_positions(x);
    const int64_t nnz = static_cast<int64_t>(hits.size());
    // A scalar gives shape [0, nnz] (unlike numpy's [1, nnz]).
    Tensor& out = context.allocate_output(0, DType::kInt64, Shape{static_cast<int64_t>(rank), nnz});
    if (rank == 0 || nnz == 0) return;
    int64_t* dst = out.mutable_data<int64_t>();
    for (int64_t j = 0; j < nnz; ++j) {
      int64_t rest = hits[j];
      for (size_t d = rank; d-- > 0;) {
        dst[static_cast<int64_t>(d) * nnz + j] = rest % shape[d];
        rest /= shape[d];
      }
    }
  }
};

// ---------------------------------------------------------------------------------------
// OneHot

// An index value as int64: floats truncate toward zero, values beyond int64 saturate
// (they are out of range for any depth either way), NaN becomes out of range.
template <typename T>
int64_t to_index(T value) {
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      return value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(value);
    } else {
      return static_cast<int64_t>(value);
    }
  } else {
    double v;
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<double>(value);
    } else {
      v = static_cast<float>(value);  // Float16, BFloat16
    }
    if (std::isnan(v) || v >= 9.2e18) return std::numeric_limits<int64_t>::max();
    if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  }
}

class OneHotKernel : public OpKernel {
 public:
  explicit OneHotKernel(const KernelCreateContext& context)
      : axis_(context.attr_int("axis", -1)), wrap_negative_(context.opset() >= 11) {}

  void compute(KernelContext& context) const override {
    const Tensor& indices_tensor = context.input(0);
    const Tensor& depth_tensor = context.input(1);
    const Tensor& values = context.input(2);
    if (depth_tensor.numel() != 1) {
      context.fail("depth must hold exactly one value, got shape {}",
                   shape_to_string(depth_tensor.shape()));
    }
    if (!dtype_is_float(depth_tensor.dtype()) && !dtype_is_integer(depth_tensor.dtype())) {
      context.fail("depth must be numeric, got {}", dtype_name(depth_tensor.dtype()));
    }
    const double depth_value = read_scalar(depth_tensor, context.node().describe());
    if (!(depth_value >= 0 && depth_value < 9.2e18)) {
      context.fail("depth {} is invalid (must be a non-negative number)", depth_value);
    }
    const int64_t depth = static_cast<int64_t>(depth_value);
    if (values.numel() != 2) {
      context.fail("values must hold two elements [off_value, on_value], got shape {}",
                   shape_to_string(values.shape()));
    }
    if (!dtype_is_float(indices_tensor.dtype()) && !dtype_is_integer(indices_tensor.dtype())) {
      context.fail("indices must be numeric, got {}", dtype_name(indices_tensor.dtype()));
    }
    const int64_t rank = static_cast<int64_t>(indices_tensor.rank());
    if (axis_ < -(rank + 1) || axis_ > rank) {
      context.fail("axis {} is out of range for output rank {}", axis_, rank + 1);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank + 1 : axis_;

    // Position along the one-hot axis of each index, or -1 when it is out of range.
    std::vector<int64_t> hot(static_cast<size_t>(indices_tensor.numel()));
    dispatch_numeric(indices_tensor.dtype(), "OneHot indices", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = indices_tensor.data<T>();
      for (size_t i = 0; i < hot.size(); ++i) {
        int64_t v = to_index(src[i]);
        if (v < 0 && wrap_negative_ && v >= -depth) v += depth;
        hot[i] = (v >= 0 && v < depth) ? v : -1;
      }
    });

    Shape out_shape = indices_tensor.shape();
    out_shape.insert(out_shape.begin() + axis, depth);
    Tensor& out = context.allocate_output(0, values.dtype(), out_shape);
    if (out.numel() == 0) return;
    const int64_t inner = product(indices_tensor.shape(), axis, rank);
    const int64_t outer = product(indices_tensor.shape(), 0, axis);
    dispatch_storage(values.dtype(), "OneHot", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S off = storage<S>(values)[0];
      const S on = storage<S>(values)[1];
      S* dst = mutable_storage<S>(out);
      std::fill_n(dst, out.numel(), off);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t h = hot[o * inner + i];
          if (h >= 0) dst[(o * depth + h) * inner + i] = on;
        }
      }
    });
  }

 private:
  int64_t axis_;
  bool wrap_negative_;
};

// ---------------------------------------------------------------------------------------
// Trilu, EyeLike

class TriluKernel : public OpKernel {
 public:
  explicit TriluKernel(const KernelCreateContext& context)
      : upper_(context.attr_int("upper", 1) != 0) {}

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.rank() < 2) context.fail("input must have rank >= 2, got rank {}", input.rank());
    const int64_t rows = input.shape()[input.rank() - 2];
    const int64_t cols = input.shape()[input.rank() - 1];
    int64_t k = 0;
    if (context.has_input(1)) {
      const std::vector<int64_t> kv = read_int64s(context.input(1), "Trilu k");
      if (kv.size() != 1) context.fail("k must hold one value, got {}", kv.size());
      // Beyond these bounds every k keeps all or nothing; clamping avoids overflow below.
      k = std::clamp<int64_t>(kv[0], -rows - 1, cols + 1);
    }
    Tensor& out = context.allocate_output(0, input.dtype(), input.shape());
    if (out.numel() == 0) return;
    const int64_t matrices = out.numel() / (rows * cols);
    dispatch_storage(input.dtype(), "Trilu", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(input);
      S* dst = mutable_storage<S>(out);
      for (int64_t m = 0; m < matrices; ++m) {
        for (int64_t i = 0; i < rows; ++i) {
          // Upper keeps columns j with j - i >= k, lower those with j - i <= k.
          const int64_t begin = upper_ ? std::clamp<int64_t>(i + k, 0, cols) : 0;
          const int64_t end = upper_ ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
          const int64_t row = (m * rows + i) * cols;
          std::copy(src + row + begin, src + row + std::max(begin, end), dst + row + begin);
        }
      }
    });
  }

 private:
  bool upper_;
};

class EyeLikeKernel : public OpKernel {
 public:
  explicit EyeLikeKernel(const KernelCreateContext& context) : k_(context.attr_int("k", 0)) {
    if (context.has_attribute("dtype")) {
      const int64_t code = context.attr_int("dtype");
      if (code < 0 || code > std::numeric_limits<int32_t>::max() ||
          !dtype_is_known(static_cast<int32_t>(code))) {
        context.fail("dtype {} is not a known data type", code);
      }
      dtype_ = static_cast<DType>(code);
      check_dtype(context, *dtype_);
    }
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    if (input.rank() != 2) context.fail("input must have rank 2, got rank {}", input.rank());
    const DType dtype = dtype_.value_or(input.dtype());
    if (!dtype_) check_dtype(context, dtype);
    Tensor& out = context.allocate_output(0, dtype, input.shape());
    const int64_t rows = input.shape()[0];
    const int64_t cols = input.shape()[1];
    // Beyond these bounds no diagonal element exists; clamping avoids overflow below.
    const int64_t k = std::clamp<int64_t>(k_, -rows - 1, cols + 1);
    dispatch_numeric_bool(dtype, "EyeLike", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out.mutable_data<T>();
      // Row i holds its one at column i + k.
      const int64_t first = std::clamp<int64_t>(-k, 0, rows);
      const int64_t last = std::clamp<int64_t>(cols - k, 0, rows);
      for (int64_t i = first; i < last; ++i) dst[i * cols + i + k] = convert_element<T>(1);
    });
  }

 private:
  template <typename Context>
  static void check_dtype(const Context& context, DType dtype) {
    if (!dtype_is_float(dtype) && !dtype_is_integer(dtype) && dtype != DType::kBool) {
      context.fail("output type {} is not supported (needs a numeric or bool type)",
                   dtype_name(dtype));
    }
  }

  int64_t k_;
  std::optional<DType> dtype_;
};

// ---------------------------------------------------------------------------------------
// Compress

class CompressKernel : public OpKernel {
 public:
  explicit CompressKernel(const KernelCreateContext& context) {
    if (context.has_attribute("axis")) axis_ = context.attr_int("axis");
  }

  void compute(KernelContext& context) const override {
    const Tensor& input = context.input(0);
    const Tensor& condition = context.input(1);
    if (condition.dtype() != DType::kBool) {
      context.fail("condition must be bool, got {}", dtype_name(condition.dtype()));
    }
    if (condition.rank() != 1) {
      context.fail("condition must be 1-D, got shape {}", shape_to_string(condition.shape()));
    }
    // Without an axis the input is read flattened: one axis of numel elements.
    int64_t outer = 1, length = input.numel(), inner = 1;
    int64_t axis = 0;
    if (axis_) {
      if (input.rank() == 0) context.fail("input must have rank >= 1 when axis is given");
      axis = normalize_axis(*axis_, static_cast<int64_t>(input.rank()), "Compress axis");
      outer = product(input.shape(), 0, static_cast<size_t>(axis));
      length = input.shape()[static_cast<size_t>(axis)];
      inner = product(input.shape(), static_cast<size_t>(axis) + 1, input.rank());
    }
    const bool* cond = condition.data<bool>();
    std::vector<int64_t> selected;
    for (int64_t i = 0; i < condition.numel(); ++i) {
      if (!cond[i]) continue;
      if (i >= length) {
        context.fail("condition is true at index {}, beyond the {} slices of the input", i, length);
      }
      selected.push_back(i);
    }
    const int64_t count = static_cast<int64_t>(selected.size());
    Shape out_shape{count};
    if (axis_) {
      out_shape = input.shape();
      out_shape[static_cast<size_t>(axis)] = count;
    }
    Tensor& out = context.allocate_output(0, input.dtype(), out_shape);
    if (out.numel() == 0) return;
    dispatch_storage(input.dtype(), "Compress", [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* src = storage<S>(input);
      S* dst = mutable_storage<S>(out);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i : selected) {
          dst = std::copy_n(src + (o * length + i) * inner, inner, dst);
        }
      }
    });
  }

 private:
  std::optional<int64_t> axis_;
};

// ---------------------------------------------------------------------------------------
// Unique

// A complex element, ordered as numpy orders complex numbers (real part, then imaginary).
template <typename F>
struct ComplexPair {
  F re, im;
};

// Three-way comparison of two real values; NaN sorts after every number and equals NaN
// (numpy's unique collapses NaNs).
template <typename F>
int compare_real(F a, F b) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return a_nan == b_nan ? 0 : a_nan ? 1 : -1;
  return a < b ? -1 : b < a ? 1 : 0;
}

template <typename T>
int compare_values(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, std::string>) {
    const int c = a.compare(b);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return compare_real(static_cast<float>(a), static_cast<float>(b));
  } else if constexpr (std::is_same_v<T, ComplexPair<float>> ||
                       std::is_same_v<T, ComplexPair<double>>) {
    const int c = compare_real(a.re, b.re);
    return c != 0 ? c : compare_real(a.im, b.im);
  } else {
    return compare_real(a, b);
  }
}

// Like dispatch_all, with complex numbers as ComplexPair.
template <typename F>
decltype(auto) dispatch_comparable(DType dtype, std::string_view what, F&& f) {
  if (dtype == DType::kComplex64) return f(TypeTag<ComplexPair<float>>{});
  if (dtype == DType::kComplex128) return f(TypeTag<ComplexPair<double>>{});
  return dispatch_all(dtype, what, std::forward<F>(f));
}

class UniqueKernel : public OpKernel {
 public:
  explicit UniqueKernel(const KernelCreateContext& context)
      : sorted_(context.attr_int("sorted", 1)) {
    if (sorted_ != 0 && sorted_ != 1) context.fail("sorted is {}, must be 0 or 1", sorted_);
    if (context.has_attribute("axis")) axis_ = context.attr_int("axis");
  }

  void compute(KernelContext& context) const override {
    const Tensor& x = context.input(0);
    // The items compared are the slices of `axis`, or the elements when there is no axis.
    int64_t outer = 1, length = x.numel(), inner = 1;
    size_t axis = 0;
    if (axis_) {
      if (x.rank() == 0) context.fail("input must have rank >= 1 when axis is given");
      axis = static_cast<size_t>(normalize_axis(*axis_, static_cast<int64_t>(x.rank()), "axis"));
      outer = product(x.shape(), 0, axis);
      length = x.shape()[axis];
      inner = product(x.shape(), axis + 1, x.rank());
    }
    dispatch_comparable(x.dtype(), "Unique", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = tensor_elements<T>(x);
      // Lexicographic over the slice's elements in row-major order, as numpy compares.
      auto compare = [&](int64_t i, int64_t j) {
        for (int64_t o = 0; o < outer; ++o) {
          const T* a = px + (o * length + i) * inner;
          const T* b = px + (o * length + j) * inner;
          for (int64_t k = 0; k < inner; ++k) {
            if (const int c = compare_values(a[k], b[k]); c != 0) return c;
          }
        }
        return 0;
      };
      std::vector<int64_t> order(static_cast<size_t>(length));
      std::iota(order.begin(), order.end(), int64_t{0});
      // Stable: the first item of each run of equal items is its first occurrence.
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return compare(i, j) < 0; });
      std::vector<int64_t> first, counts;
      std::vector<int64_t> inverse(static_cast<size_t>(length));
      for (size_t k = 0; k < order.size(); ++k) {
        if (k == 0 || compare(order[k - 1], order[k]) != 0) {
          first.push_back(order[k]);
          counts.push_back(0);
        }
        ++counts.back();
        inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(first.size()) - 1;
      }
      const int64_t unique = static_cast<int64_t>(first.size());
      if (sorted_ == 0) {  // order of first occurrence
        std::vector<int64_t> by_first(first.size());
        std::iota(by_first.begin(), by_first.end(), int64_t{0});
        std::sort(by_first.begin(), by_first.end(),
                  [&](int64_t a, int64_t b) { return first[a] < first[b]; });
        std::vector<int64_t> rank_of(first.size()), new_first(first.size()),
            new_counts(first.size());
        for (size_t r = 0; r < by_first.size(); ++r) {
          rank_of[static_cast<size_t>(by_first[r])] = static_cast<int64_t>(r);
          new_first[r] = first[static_cast<size_t>(by_first[r])];
          new_counts[r] = counts[static_cast<size_t>(by_first[r])];
        }
        for (int64_t& v : inverse) v = rank_of[static_cast<size_t>(v)];
        first.swap(new_first);
        counts.swap(new_counts);
      }
      Shape y_shape{unique};
      if (axis_) {
        y_shape = x.shape();
        y_shape[axis] = unique;
      }
      Tensor& y = context.allocate_output(0, x.dtype(), y_shape);
      if (y.numel() > 0) {
        T* py = mutable_tensor_elements<T>(y);
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t u : first) py = std::copy_n(px + (o * length + u) * inner, inner, py);
        }
      }
      auto write = [&](size_t i, const std::vector<int64_t>& values) {
        Tensor& t =
            context.allocate_output(i, DType::kInt64, {static_cast<int64_t>(values.size())});
        std::copy(values.begin(), values.end(), t.mutable_data<int64_t>());
      };
      write(1, first);
      write(2, inverse);
      write(3, counts);
    });
  }

 private:
  int64_t sorted_;
  std::optional<int64_t> axis_;
};

}  // namespace

namespace {

// Type inference (ops/type_inference.h).

// Slice: starts/ends/axes attributes before opset 10, inputs (with steps) from 10. An axis
// whose window is unknown (unknown dim or bounds) gets an unknown dim; an axis read whole
// keeps its dim, named or not.
void infer_slice(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  const std::vector<Dim>* dims = ranked_input_dims(context, 0);
  if (!dims) return;
  const size_t rank = dims->size();
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (context.opset() < 10) {
    const KernelCreateContext attributes = attribute_reader(context);
    starts = attributes.attr_ints("starts");
    ends = attributes.attr_ints("ends");
    if (attributes.has_attribute("axes")) axes = attributes.attr_ints("axes");
  } else {
    starts = input_ints(context, 1);
    ends = input_ints(context, 2);
    if (context.has_input(3)) axes = input_ints(context, 3);
    if (context.has_input(4)) steps = input_ints(context, 4);
  }
  std::vector<Dim> out = *dims;
  const bool axes_known = !context.has_input(3) || axes;
  if (!axes_known || (!axes && !starts)) {
    // Which axes are sliced is unknown: every dim may change.
    context.set_output(0, tensor_type(dtype, unknown_dims(rank)));
    return;
  }
  const size_t n = axes ? axes->size() : starts->size();
  if (steps && steps->size() != n) fail("steps has {} values for {} axes", steps->size(), n);
  const bool bounds_known = starts && ends && (!context.has_input(4) || steps) &&
                            starts->size() == n && ends->size() == n;
  for (size_t i = 0; i < n; ++i) {
    const size_t axis = rule_axis(axes ? (*axes)[i] : static_cast<int64_t>(i), rank, "axes");
    if (!bounds_known) {
      out[axis] = Dim{};
      continue;
    }
    const int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) fail("step for axis {} is 0", axis);
    const Dim& dim = (*dims)[axis];
    const int64_t start = (*starts)[i], end = (*ends)[i];
    if (dim.is_known()) {
      out[axis] = Dim::known(slice_axis(dim.value, start, end, step).count);
    } else if (!(step == 1 && start == 0 && end >= std::numeric_limits<int32_t>::max())) {
      out[axis] = Dim{};
    }
  }
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Gather: data's dims with `axis` replaced by the indices' dims.
void infer_gather(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* data = input_dims(context, 0);
  const std::vector<Dim>* indices = input_dims(context, 1);
  if (!data || !indices) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const size_t axis = rule_axis(attribute_reader(context).attr_int("axis", 0), data->size());
  std::vector<Dim> out(data->begin(), data->begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(axis) + 1, data->end());
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// GatherElements: data's dtype, the indices' shape.
void infer_gather_elements(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const ValueType* indices = context.input_type(1);
  context.set_output(0, tensor_type(dtype, indices ? indices->shape : std::nullopt));
}

// GatherND: indices' dims but the last, then data's dims after batch_dims + the last
// indices dim.
void infer_gather_nd(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* data = input_dims(context, 0);
  const std::vector<Dim>* indices = input_dims(context, 1);
  if (!data || !indices || indices->empty() || !indices->back().is_known()) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const int64_t batch_attr = attribute_reader(context).attr_int("batch_dims", 0);
  if (batch_attr < 0 || static_cast<uint64_t>(batch_attr) >= indices->size()) {
    fail("batch_dims {} must be in [0, {}) (the indices' rank)", batch_attr, indices->size());
  }
  const auto batch_dims = static_cast<size_t>(batch_attr);
  const auto last = static_cast<size_t>(indices->back().value);
  if (last > data->size() || batch_dims + last > data->size()) {
    fail("indices' last dim {} with batch_dims {} exceeds the data rank {}", last, batch_dims,
         data->size());
  }
  std::vector<Dim> out(indices->begin(), indices->end() - 1);
  out.insert(out.end(), data->begin() + static_cast<std::ptrdiff_t>(batch_dims + last),
             data->end());
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// NonZero: int64 [rank, count], the count known only when running.
void infer_non_zero(TypeInferenceContext& context) {
  if (!context.input_type(0)) return;
  const std::vector<Dim>* dims = input_dims(context, 0);
  context.set_output(
      0, tensor_type(DType::kInt64,
                     std::vector<Dim>{dims ? Dim::known(static_cast<int64_t>(dims->size())) : Dim{},
                                      Dim{}}));
}

// OneHot: the indices' dims with depth inserted at `axis`, of the values' dtype.
void infer_one_hot(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 2);
  if (dtype == DType::kUndefined) return;
  const std::vector<Dim>* indices = input_dims(context, 0);
  if (!indices) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  const size_t rank = indices->size() + 1;
  const size_t axis = rule_axis(attribute_reader(context).attr_int("axis", -1), rank);
  Dim depth;
  if (const std::optional<double> value = input_scalar(context, 1)) {
    depth = Dim::known(checked_int64(*value, "depth"));
  }
  std::vector<Dim> out = *indices;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// EyeLike: the input's shape, of `dtype` (the input's when absent).
void infer_eye_like(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (!type) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const DType dtype = attributes.has_attribute("dtype")
                          ? static_cast<DType>(attributes.attr_int("dtype"))
                          : type->elem_type;
  context.set_output(0, tensor_type(dtype, type->shape));
}

// Compress: with `axis`, that dim becomes unknown; without, the output is 1-D.
void infer_compress(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const KernelCreateContext attributes = attribute_reader(context);
  if (!attributes.has_attribute("axis")) {
    context.set_output(0, tensor_type(dtype, unknown_dims(1)));
    return;
  }
  const std::vector<Dim>* dims = input_dims(context, 0);
  if (!dims) {
    context.set_output(0, tensor_type(dtype));
    return;
  }
  std::vector<Dim> out = *dims;
  out[rule_axis(attributes.attr_int("axis"), dims->size())] = Dim{};
  context.set_output(0, tensor_type(dtype, std::move(out)));
}

// Unique: Y flat (no axis) or X's shape with `axis` unknown; indices and counts 1-D of the
// unique count; inverse_indices one per element of X (per slice along `axis`).
void infer_unique(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  const KernelCreateContext attributes = attribute_reader(context);
  const std::vector<Dim>* dims = input_dims(context, 0);
  SymbolicShape y;
  Dim inverse;
  if (!attributes.has_attribute("axis")) {
    y = unknown_dims(1);
    if (dims) inverse = dims_product(*dims);
  } else if (dims) {
    const size_t axis = rule_axis(attributes.attr_int("axis"), dims->size());
    y = *dims;
    (*y)[axis] = Dim{};
    inverse = (*dims)[axis];
  }
  context.set_output(0, tensor_type(dtype, y));
  context.set_output(1, tensor_type(DType::kInt64, unknown_dims(1)));
  context.set_output(2, tensor_type(DType::kInt64, std::vector<Dim>{inverse}));
  context.set_output(3, tensor_type(DType::kInt64, unknown_dims(1)));
}

}  // namespace

void register_indexing_ops(OpRegistry& registry) {
  registry.add("Slice", {1, 10, 11, 13}, kernel_factory<SliceKernel>(), {}, slice_shape_vector);
  registry.add("Gather", {1, 11, 13}, kernel_factory<GatherKernel>(), {}, gather_shape_vector);
  registry.add("GatherElements", {11, 13}, kernel_factory<GatherElementsKernel>());
  registry.add("GatherND", {11, 12, 13}, kernel_factory<GatherNDKernel>());
  registry.add("Scatter", {9, 11}, kernel_factory<ScatterElementsKernel>());
  // 16 added reduction add and mul, 18 max and min.
  registry.add("ScatterElements", {11, 13, 16, 18}, kernel_factory<ScatterElementsKernel>());
  registry.add("ScatterND", {11, 13, 16, 18}, kernel_factory<ScatterNDKernel>());
  registry.add("NonZero", {9, 13}, kernel_factory<NonZeroKernel>());
  // OneHot, Compress and Unique 28 added bfloat16; EyeLike 22 too.
  registry.add("OneHot", {9, 11, 28}, kernel_factory<OneHotKernel>());
  registry.add("Trilu", {14}, kernel_factory<TriluKernel>());
  registry.add("EyeLike", {9, 22}, kernel_factory<EyeLikeKernel>());
  registry.add("Compress", {9, 11, 28}, kernel_factory<CompressKernel>());
  registry.add("Unique", {11, 28}, kernel_factory<UniqueKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "Slice", infer_slice);
  registry.set_type_rule("", "Gather", infer_gather);
  registry.set_type_rule("", "GatherElements", infer_gather_elements);
  registry.set_type_rule("", "GatherND", infer_gather_nd);
  registry.set_type_rule("", "Scatter", infer_same_as_input);
  registry.set_type_rule("", "ScatterElements", infer_same_as_input);
  registry.set_type_rule("", "ScatterND", infer_same_as_input);
  registry.set_type_rule("", "NonZero", infer_non_zero);
  registry.set_type_rule("", "OneHot", infer_one_hot);
  registry.set_type_rule("", "Trilu", infer_same_as_input);
  registry.set_type_rule("", "EyeLike", infer_eye_like);
  registry.set_type_rule("", "Compress", infer_compress);
  registry.set_type_rule("", "Unique", infer_unique);
}

}  // namespace onnxkit
