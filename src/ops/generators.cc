// Op family: tensors made from attributes and scalars (Constant, ConstantOfShape, Range).
// Their versions from 13 on only added types (generators.cc and shape_ops.cc alike).
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

// A COO sparse tensor made dense (indices flat [NNZ] or coordinates [NNZ, rank]).
Tensor densify(const KernelCreateContext& context, const SparseTensor& sparse) {
  const Tensor& values = sparse.values;
  const int64_t nnz = values.numel();
  Tensor dense(values.dtype(), sparse.dims);
  const int64_t rank = static_cast<int64_t>(sparse.dims.size());
  std::vector<int64_t> indices = read_int64s(sparse.indices, "sparse_value indices");
  const bool flat = sparse.indices.rank() == 1;
  if (static_cast<int64_t>(indices.size()) != (flat ? nnz : nnz * rank)) {
    context.fail("sparse_value: indices of shape {} do not fit {} values of rank {}",
                 shape_to_string(sparse.indices.shape()), nnz, rank);
  }
  const std::vector<int64_t> strides = contiguous_strides(sparse.dims);
  dispatch_storage(values.dtype(), "sparse_value", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = tensor_elements<T>(values);
    T* dst = mutable_tensor_elements<T>(dense);
    for (int64_t k = 0; k < nnz; ++k) {
      int64_t offset = 0;
      if (flat) {
        offset = indices[static_cast<size_t>(k)];
      } else {
        for (int64_t d = 0; d < rank; ++d) {
          int64_t index = indices[static_cast<size_t>(k * rank + d)];
          if (index < 0 || index >= sparse.dims[static_cast<size_t>(d)]) {
            context.fail("sparse_value: index {} is out of bounds for dim {} of size {}", index, d,
                         sparse.dims[static_cast<size_t>(d)]);
          }
          offset += index * strides[static_cast<size_t>(d)];
        }
      }
      if (offset < 0 || offset >= dense.numel()) {
        context.fail("sparse_value: flat index {} is out of bounds for {} elements", offset,
                     dense.numel());
      }
      dst[offset] = src[k];
    }
  });
  return dense;
}

// Constant's value: the one value attribute as a tensor (the kernel's output, shared, never
// copied per run; and what type inference reads).
Tensor constant_value(const KernelCreateContext& context) {
  static constexpr std::string_view kNames[] = {"value",        "sparse_value", "value_float",
                                                "value_floats", "value_int",    "value_ints",
                                                "value_string", "value_strings"};
  std::string_view found;
  for (std::string_view name : kNames) {
    if (!context.has_attribute(name)) continue;
    if (!found.empty()) {
      context.fail("has both '{}' and '{}'; exactly one value attribute is allowed", found, name);
    }
    found = name;
  }
  if (found.empty()) context.fail("needs one of the attributes value, sparse_value, value_*");
  const int64_t needs = found == "value" ? 1 : found == "sparse_value" ? 11 : 12;
  if (context.opset() < needs) {
    context.fail("attribute '{}' needs opset {} or later (model uses opset {})", found, needs,
                 context.opset());
  }
  if (found == "value") {
    return *context.attr_tensor("value");
  } else if (found == "sparse_value") {
    const Attribute* attribute = context.node().find_attribute("sparse_value");
    if (attribute->type != AttrType::kSparseTensor) {
      context.fail("attribute 'sparse_value' must be a sparse tensor, is {}",
                   attr_type_name(attribute->type));
    }
    return densify(context, attribute->sparse_tensor);
  } else if (found == "value_float") {
    return Tensor::from_vector<float>(DType::kFloat, {}, {context.attr_float(found)});
  } else if (found == "value_floats") {
    std::vector<float> values = context.attr_floats(found);
    return Tensor::from_vector(DType::kFloat, {static_cast<int64_t>(values.size())}, values);
  } else if (found == "value_int") {
    return Tensor::from_vector<int64_t>(DType::kInt64, {}, {context.attr_int(found)});
  } else if (found == "value_ints") {
    std::vector<int64_t> values = context.attr_ints(found);
    return Tensor::from_vector(DType::kInt64, {static_cast<int64_t>(values.size())}, values);
  } else if (found == "value_string") {
    return Tensor::from_strings({}, {context.attr_string(found)});
  } else {
    std::vector<std::string> values = context.attr_strings(found);
    const int64_t n = static_cast<int64_t>(values.size());
    return Tensor::from_strings({n}, std::move(values));
  }
}

class ConstantKernel : public OpKernel {
 public:
  explicit ConstantKernel(const KernelCreateContext& context) : value_(constant_value(context)) {}
  void compute(KernelContext& context) const override { context.set_output(0, value_); }

 private:
  Tensor value_;
};

std::optional<ShapeVector> constant_shape_vector(const ShapeVectorContext& context) {
  const Node& node = context.node();
  if (const Attribute* attr = node.find_attribute("value");
      attr && attr->type == AttrType::kTensor) {
    return ShapeVector::from_tensor(attr->t);
  }
  if (const Attribute* attr = node.find_attribute("value_int");
      attr && attr->type == AttrType::kInt) {
    return ShapeVector::from_tensor(Tensor::from_vector<int64_t>(DType::kInt64, {}, {attr->i}));
  }
  if (const auto* ints = context.attr_ints("value_ints")) {
    return ShapeVector::from_tensor(
        Tensor::from_vector<int64_t>(DType::kInt64, {static_cast<int64_t>(ints->size())}, *ints));
  }
  return std::nullopt;
}

// ConstantOfShape: a tensor of the input shape filled with `value` (default float 0).
class ConstantOfShapeKernel : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const KernelCreateContext& context) {
    if (const Tensor* value = context.attr_tensor("value")) {
      if (value->numel() != 1) {
        context.fail("attribute 'value' must hold one element, has shape {}",
                     shape_to_string(value->shape()));
      }
      value_ = *value;
    } else {
      value_ = Tensor(DType::kFloat, {1});
    }
  }
  void compute(KernelContext& context) const override {
    const Shape shape = read_index_input(context, 0, "shape");
    for (int64_t dim : shape) {
      if (dim < 0) context.fail("shape {} has a negative dim", shape_to_string(shape));
    }
    Tensor& out = context.allocate_output(0, value_.dtype(), shape);
    dispatch_storage(value_.dtype(), "ConstantOfShape", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill_n(mutable_tensor_elements<T>(out), out.numel(), tensor_elements<T>(value_)[0]);
    });
  }

 private:
  Tensor value_;
};

// Range: start, start + delta, ... up to (excluding) limit;
// count = max(ceil((limit - start) / delta), 0).
class RangeKernel : public OpKernel {
 public:
  // Opset 27 added float16 and bfloat16, computed in stash_type (float or double).
  explicit RangeKernel(const KernelCreateContext& context) {
    const int64_t stash = context.attr_int("stash_type", static_cast<int64_t>(DType::kFloat));
    if (stash != static_cast<int64_t>(DType::kFloat) &&
        stash != static_cast<int64_t>(DType::kDouble)) {
      context.fail("stash_type {} is not supported (1 float or 11 double)", stash);
    }
    stash_double_ = stash == static_cast<int64_t>(DType::kDouble);
  }
  void compute(KernelContext& context) const override {
    const Tensor& start = context.input(0);
    const DType dtype = start.dtype();
    for (size_t i = 0; i < 3; ++i) {
      const Tensor& in = context.input(i);
      if (in.dtype() != dtype) {
        context.fail("input {} has type {}, start has {}", i, dtype_name(in.dtype()),
                     dtype_name(dtype));
      }
      if (in.numel() != 1) {
        context.fail("input {} must be a scalar, got shape {}", i, shape_to_string(in.shape()));
      }
    }
    switch (dtype) {
      case DType::kFloat:
        return fill<float>(context);
      case DType::kDouble:
        return fill<double>(context);
      case DType::kInt16:
        return fill<int16_t>(context);
      case DType::kInt32:
        return fill<int32_t>(context);
      case DType::kInt64:
        return fill<int64_t>(context);
      case DType::kFloat16:
        return stash_double_ ? fill<double, Float16>(context) : fill<float, Float16>(context);
      case DType::kBFloat16:
        return stash_double_ ? fill<double, BFloat16>(context) : fill<float, BFloat16>(context);
      default:
        context.fail(
            "type {} is not supported (float, double, float16, bfloat16, int16, int32, int64)",
            dtype_name(dtype));
    }
  }

 private:
  // Computes in T and stores Out (T itself, or a 16-bit float computed in its stash type).
  template <typename T, typename Out = T>
  static void fill(KernelContext& context) {
    const T start = convert_element<T>(context.input(0).data<Out>()[0]);
    const T limit = convert_element<T>(context.input(1).data<Out>()[0]);
    const T delta = convert_element<T>(context.input(2).data<Out>()[0]);
    if (delta == 0) context.fail("delta must not be zero");
    int64_t count = 0;
    if constexpr (std::is_floating_point_v<T>) {
      const double steps = std::ceil((static_cast<double>(limit) - start) / delta);
      if (std::isnan(steps)) context.fail("range {}..{} by {} is undefined", start, limit, delta);
      if (steps >= 9.2e18) context.fail("range {}..{} by {} is too long", start, limit, delta);
      count = steps > 0 ? static_cast<int64_t>(steps) : 0;
    } else {
      // 128-bit: limit - start of int64 may overflow 64 bits.
      const __int128 span = static_cast<__int128>(limit) - start;
      const __int128 step = delta;
      if ((span > 0 && step > 0) || (span < 0 && step < 0)) {
        const __int128 magnitude = span > 0 ? span : -span;
        const __int128 step_magnitude = step > 0 ? step : -step;
        count = static_cast<int64_t>((magnitude + step_magnitude - 1) / step_magnitude);
      }
    }
    Tensor& out = context.allocate_output(0, context.input(0).dtype(), {count});
    Out* dst = out.mutable_data<Out>();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (!std::is_same_v<T, Out>) {
        dst[i] = convert_element<Out>(start + static_cast<T>(i) * delta);
      } else if constexpr (std::is_floating_point_v<T>) {
        dst[i] = static_cast<T>(static_cast<double>(start) + static_cast<double>(i) * delta);
      } else {
        dst[i] = static_cast<T>(start + static_cast<__int128>(i) * delta);
      }
    }
  }

  bool stash_double_ = false;
};

// Type inference (ops/type_inference.h).

void infer_constant(TypeInferenceContext& context) {
  const Tensor value = constant_value(attribute_reader(context));
  context.set_output(0, tensor_type(value.dtype(), known_dims(value.shape())));
}

// ConstantOfShape: the shape input's dims, of `value`'s dtype (float when absent).
void infer_constant_of_shape(TypeInferenceContext& context) {
  const Tensor* value = attribute_reader(context).attr_tensor("value");
  context.set_output(
      0, tensor_type(value ? value->dtype() : DType::kFloat, shape_input_dims(context, 0)));
}

// Range: 1-D, max(ceil((limit - start) / delta), 0) elements when all three are constant.
void infer_range(TypeInferenceContext& context) {
  const DType dtype = input_dtype(context, 0);
  if (dtype == DType::kUndefined) return;
  Dim length;
  const std::optional<double> start = input_scalar(context, 0);
  const std::optional<double> limit = input_scalar(context, 1);
  const std::optional<double> delta = input_scalar(context, 2);
  if (start && limit && delta && *delta != 0) {
    length = Dim::known(std::max<int64_t>(
        checked_int64(std::ceil((*limit - *start) / *delta), "Range's element count"), 0));
  }
  context.set_output(0, tensor_type(dtype, std::vector<Dim>{length}));
}

}  // namespace

void register_generator_ops(OpRegistry& registry) {
  registry.add("Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}, kernel_factory<ConstantKernel>(),
               {}, constant_shape_vector);
  registry.add("ConstantOfShape", {9, 20, 21, 23, 24, 25}, kernel_factory<ConstantOfShapeKernel>());
  registry.add("Range", {11, 27}, kernel_factory<RangeKernel>());

  // Type inference, every version.
  registry.set_type_rule("", "Constant", infer_constant);
  registry.set_type_rule("", "ConstantOfShape", infer_constant_of_shape);
  registry.set_type_rule("", "Range", infer_range);
}

}  // namespace onnxkit
