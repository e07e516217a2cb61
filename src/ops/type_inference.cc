#include "ops/type_inference.h"

#include "core/status.h"

namespace onnxkit {

const std::vector<Dim>* input_dims(const TypeInferenceContext& context, size_t i) {
  const ValueType* type = context.input_type(i);
  if (!type || !type->is_tensor() || !type->shape) return nullptr;
  return &*type->shape;
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
