#include "runtime/random_inputs.h"

#include <optional>

#include "core/low_precision.h"
#include "core/resource_limits.h"
#include "ops/op_utils.h"

namespace onnxkit {

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  // Unless the caller set tighter bounds, data is never generated past the memory there is.
  std::shared_ptr<RunLimits> defaults;
  std::optional<RunLimitsScope> limits_scope;
  if (!current_run_limits()) {
    defaults = std::make_shared<RunLimits>(0, 0);
    limits_scope.emplace(defaults.get());
  }
  Tensor tensor(dtype, shape);
  const int64_t n = tensor.numel();
  if (dtype == DType::kString) {
    auto& strings = tensor.mutable_strings();
    for (int64_t i = 0; i < n; ++i) strings[i] = fmt::format("s{}", rng() % 100);
    return tensor;
  }
  if (dtype == DType::kBool) {
    bool* data = tensor.mutable_data<bool>();
    for (int64_t i = 0; i < n; ++i) data[i] = rng() & 1;
    return tensor;
  }
  if (dtype == DType::kComplex64 || dtype == DType::kComplex128) {
    fail("random data for {} is not supported", dtype_name(dtype));
  }
  if (dtype_is_small_integer(dtype) || dtype_is_small_float(dtype)) {
    // Small integers 0 or 1 (in every such type's range); small floats as standard normals.
    uint8_t* data = tensor.mutable_data<uint8_t>();
    std::normal_distribution<double> dist(0.0, 1.0);
    for (int64_t i = 0; i < n; ++i) {
      data[i] = dtype_is_small_integer(dtype) ? static_cast<uint8_t>(rng() % 2)
                                              : to_small_float(dtype, dist(rng), true);
    }
    return tensor;
  }
  dispatch_numeric(dtype, "random input", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = tensor.mutable_data<T>();
    if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<int> dist(0, 9);
      for (int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(dist(rng));
    } else {
      std::normal_distribution<double> dist(0.0, 1.0);
      for (int64_t i = 0; i < n; ++i) data[i] = convert_element<T>(dist(rng));
    }
  });
  return tensor;
}

Shape concrete_shape(const Value& input, const std::map<std::string, int64_t>& dims) {
  const ValueType& type = input.type();
  if (!type.shape) fail("input '{}' has no declared shape; give it as a file", input.name());
  Shape shape;
  for (size_t d = 0; d < type.shape->size(); ++d) {
    const Dim& dim = (*type.shape)[d];
    if (dim.is_known()) {
      shape.push_back(dim.value);
    } else if (dim.is_symbolic()) {
      auto it = dims.find(dim.param);
      if (it == dims.end()) {
        fail("input '{}' dim {} is dynamic ('{}'): set it with --dim {}=N", input.name(), d,
             dim.param, dim.param);
      }
      shape.push_back(it->second);
    } else {
      shape.push_back(1);
    }
  }
  return shape;
}

}  // namespace onnxkit
