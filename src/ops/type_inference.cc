#include "ops/type_inference.h"

#include <string>

#include "core/status.h"
#include "ops/op_utils.h"
#include "ops/registry.h"

namespace onnxkit {

const std::vector<Dim>* input_dims(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  if (!type || !type->is_tensor() || !type->shape) return nullptr;
  return &*type->shape;
}

const std::vector<Dim>* ranked_input_dims(TypeInferenceContext& context, size_t i) {
  const DType dtype = input_dtype(context, i);
  if (dtype == DType::kUndefined) return nullptr;
  const std::vector<Dim>* dims = input_dims(context, i);
  if (!dims) context.set_output(0, tensor_type(dtype));
  return dims;
}

SymbolicShape shape_input_dims(const TypeInferenceContext& context, size_t i) {
  if (SymbolicShape shape = context.input_as_dims(i)) {
    for (const Dim& dim : *shape) {
      if (dim.is_known() && dim.value < 0) fail("shape input has a negative value {}", dim.value);
    }
    return shape;
  }
  if (const std::optional<int64_t> rank = input_length(context, i)) return unknown_dims(*rank);
  return std::nullopt;
}

DType input_dtype(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  return type ? type->elem_type : DType::kUndefined;
}

std::optional<std::vector<int64_t>> input_ints(const TypeInferenceContext& context, size_t i) {
  const Tensor* value = context.input_value(i);
  if (!value) return std::nullopt;
  std::vector<int64_t> result;
  result.reserve(static_cast<size_t>(value->numel()));
  if (value->dtype() == DType::kInt64) {
    const int64_t* data = value->data<int64_t>();
    result.assign(data, data + value->numel());
  } else if (value->dtype() == DType::kInt32) {
    const int32_t* data = value->data<int32_t>();
    result.assign(data, data + value->numel());
  } else {
    return std::nullopt;
  }
  return result;
}

std::optional<double> input_scalar(const TypeInferenceContext& context, size_t i) {
  const Tensor* value = context.input_value(i);
  if (!value || value->numel() != 1 || value->dtype() == DType::kString) return std::nullopt;
  return read_scalar(*value, "scalar input");
}

std::optional<std::vector<double>> input_doubles(const TypeInferenceContext& context, size_t i) {
  const Tensor* value = context.input_value(i);
  if (!value || value->dtype() == DType::kString || value->dtype() == DType::kBool) {
    return std::nullopt;
  }
  std::vector<double> values(static_cast<size_t>(value->numel()));
  dispatch_numeric(value->dtype(), "constant input", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = value->data<T>();
    for (size_t k = 0; k < values.size(); ++k) values[k] = convert_element<double>(data[k]);
  });
  return values;
}

KernelCreateContext attribute_reader(const TypeInferenceContext& context) {
  // Attribute reading needs no registry; the reader's registry is never asked.
  static const OpRegistry kNoRegistry;
  return KernelCreateContext(context.node(), context.opset(), kNoRegistry);
}

Dim dims_product(std::span<const Dim> dims) {
  int64_t product = 1;
  const Dim* named = nullptr;
  size_t not_one = 0;
  bool all_known = true;
  bool overflow = false;
  for (const Dim& dim : dims) {
    if (dim.is_known()) {
      // A product past int64 is no size any tensor has: the dim is left unknown.
      overflow = overflow || __builtin_mul_overflow(product, dim.value, &product);
      if (dim.value != 1) ++not_one;
    } else {
      all_known = false;
      ++not_one;
      named = &dim;
    }
  }
  if (overflow) return Dim{};
  if (all_known) return Dim::known(product);
  if (not_one == 1 && named->is_symbolic()) return Dim::symbol(named->param);
  return Dim{};
}

Dim dims_sum(std::span<const Dim> dims) {
  int64_t sum = 0;
  const Dim* named = nullptr;
  size_t not_zero = 0;
  bool all_known = true;
  bool overflow = false;
  for (const Dim& dim : dims) {
    if (dim.is_known()) {
      overflow = overflow || __builtin_add_overflow(sum, dim.value, &sum);
      if (dim.value != 0) ++not_zero;
    } else {
      all_known = false;
      ++not_zero;
      named = &dim;
    }
  }
  if (overflow) return Dim{};
  if (all_known) return Dim::known(sum);
  if (not_zero == 1 && named->is_symbolic()) return Dim::symbol(named->param);
  return Dim{};
}

std::vector<Dim> known_dims(std::span<const int64_t> values) {
  std::vector<Dim> dims;
  dims.reserve(values.size());
  for (int64_t value : values) dims.push_back(Dim::known(value));
  return dims;
}

std::vector<Dim> unknown_dims(size_t rank) {
  return std::vector<Dim>(rank);
}

ValueType merge_types(const ValueType& a, const ValueType& b) {
  if (a.kind == ValueType::Kind::kNone || b.kind == ValueType::Kind::kNone) return {};
  if (a == b) return a;
  ValueType merged;
  merged.kind = a.kind;
  if (a.kind != b.kind) return {};
  merged.elem_type = a.elem_type == b.elem_type ? a.elem_type : DType::kUndefined;
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    std::vector<Dim> dims(a.shape->size());
    for (size_t d = 0; d < dims.size(); ++d) {
      if ((*a.shape)[d] == (*b.shape)[d]) dims[d] = (*a.shape)[d];
    }
    merged.shape = std::move(dims);
  }
  if (a.has_element() && b.has_element()) {
    merged.element.push_back(merge_types(a.element_type(), b.element_type()));
  }
  return merged;
}

std::optional<int64_t> input_length(const TypeInferenceContext& context, size_t i) {
  if (const std::optional<std::vector<int64_t>> values = input_ints(context, i)) {
    return static_cast<int64_t>(values->size());
  }
  const std::vector<Dim>* dims = input_dims(context, i);
  if (!dims || dims->size() != 1 || !(*dims)[0].is_known()) return std::nullopt;
  if ((*dims)[0].value > kMaxRankFromLength) {
    fail("input {} holds {} values, one per axis: no tensor has a rank over {}", i,
         (*dims)[0].value, kMaxRankFromLength);
  }
  return (*dims)[0].value;
}

size_t rule_axis(int64_t axis, size_t rank, std::string_view what) {
  // Rules index dims with it, so unlike the kernels' normalize_axis, a scalar has no axis.
  if (rank == 0) fail("{}: axis {} of a scalar (rank 0)", what, axis);
  return static_cast<size_t>(normalize_axis(axis, static_cast<int64_t>(rank), what));
}

SymbolicShape TypeInferenceContext::input_as_dims(size_t i) const {
  const std::optional<std::vector<int64_t>> values = input_ints(*this, i);
  if (!values) return std::nullopt;
  std::vector<Dim> dims;
  dims.reserve(values->size());
  for (int64_t value : *values) dims.push_back(Dim::known(value));
  return dims;
}

SymbolicShape broadcast_shapes(std::span<const SymbolicShape> shapes) {
  size_t rank = 0;
  for (const SymbolicShape& shape : shapes) {
    if (!shape) return std::nullopt;
    rank = std::max(rank, shape->size());
  }
  std::vector<Dim> result(rank, Dim::known(1));
  for (size_t axis = 0; axis < rank; ++axis) {
    bool unknown = false;
    for (const SymbolicShape& shape : shapes) {
      const size_t offset = rank - shape->size();
      if (axis < offset) continue;
      const Dim& dim = (*shape)[axis - offset];
      Dim& out = result[axis];
      if (dim.is_known() && dim.value == 1) continue;
      if (out.is_known() && out.value == 1) {
        if (!unknown) out = dim;
        continue;
      }
      if (dim.is_known() && out.is_known()) {
        if (dim.value != out.value) {
          fail("shapes do not broadcast: dim {} is {} in one input and {} in another", axis,
               dim.value, out.value);
        }
      } else if (dim.is_known()) {
        out = Dim::known(dim.value);  // a symbol broadcast against n > 1 must be n
      } else if (!out.is_known() && dim != out) {
        if (!(dim.is_symbolic() && out.is_symbolic() && dim.param == out.param)) {
          out = Dim{};
          unknown = true;
        }
      }
    }
  }
  return result;
}

namespace {

void infer_broadcast_of(TypeInferenceContext& context, DType dtype) {
  std::vector<SymbolicShape> shapes;
  for (size_t i = 0; i < context.num_inputs(); ++i) {
    if (!context.has_input(i)) continue;
    const ValueType* type = context.input_type(i);
    shapes.push_back(type && type->is_tensor() ? type->shape : std::nullopt);
  }
  if (dtype == DType::kUndefined) return;
  context.set_output(0, tensor_type(dtype, broadcast_shapes(shapes)));
}

}  // namespace

void infer_same_as_input(TypeInferenceContext& context) {
  const ValueType* type = context.input_type(0);
  if (type) context.set_output(0, *type);
}

void infer_broadcast(TypeInferenceContext& context) {
  infer_broadcast_of(context, input_dtype(context, 0));
}

void infer_broadcast_bool(TypeInferenceContext& context) {
  infer_broadcast_of(context, DType::kBool);
}

}  // namespace onnxkit
