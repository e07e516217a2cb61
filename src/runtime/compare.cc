#include "runtime/compare.h"

#include <cmath>

#include "core/low_precision.h"
#include "ops/op_utils.h"

namespace onnxkit {
namespace {

std::string index_text(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return shape_to_string(index);
}

}  // namespace

Comparison compare_tensors(const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance) {
  Comparison result;
  if (actual.dtype() != expected.dtype()) {
    result.ok = false;
    result.message = fmt::format("dtype {} but expected {}", dtype_name(actual.dtype()),
                                 dtype_name(expected.dtype()));
    return result;
  }
  if (actual.shape() != expected.shape()) {
    result.ok = false;
    result.message = fmt::format("shape {} but expected {}", shape_to_string(actual.shape()),
                                 shape_to_string(expected.shape()));
    return result;
  }
  const int64_t n = actual.numel();
  if (actual.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i) {
      if (actual.strings()[i] != expected.strings()[i]) {
        result.ok = false;
        result.message =
            fmt::format("element {} is \"{}\", expected \"{}\"", index_text(i, actual.shape()),
                        actual.strings()[i], expected.strings()[i]);
        return result;
      }
    }
    return result;
  }
  if (actual.dtype() == DType::kComplex64 || actual.dtype() == DType::kComplex128) {
    Tensor a =
        Tensor::from_buffer(actual.dtype() == DType::kComplex64 ? DType::kFloat : DType::kDouble,
                            {n * 2}, actual.buffer());
    Tensor e = Tensor::from_buffer(a.dtype(), {n * 2}, expected.buffer());
    return compare_tensors(a, e, tolerance);
  }
  if (dtype_is_small_float(actual.dtype()) || dtype_is_small_integer(actual.dtype())) {
    // The low-precision types compare by value, exactly (any NaN equals any NaN).
    auto decoded = [n](const Tensor& t) {
      Tensor out(DType::kFloat, t.shape());
      const uint8_t* in = t.data<uint8_t>();
      float* values = out.mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) {
        values[i] = dtype_is_small_integer(t.dtype())
                        ? static_cast<float>(small_int_value(t.dtype(), in[i]))
                        : small_float_to_float(t.dtype(), in[i]);
      }
      return out;
    };
    return compare_tensors(decoded(actual), decoded(expected), Tolerance{0, 0, false});
  }
  bool exact = !dtype_is_float(actual.dtype());
  int64_t worst = -1;
  double worst_excess = 0;
  dispatch_numeric_bool(actual.dtype(), "compare", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = actual.data<T>();
    const T* e = expected.data<T>();
    double mean_magnitude = 0;
    if (tolerance.scale_by_mean && !exact && n > 0) {
      int64_t finite = 0;
      for (int64_t i = 0; i < n; ++i) {
        double y = convert_element<double>(e[i]);
        if (std::isfinite(y)) {
          mean_magnitude += std::fabs(y);
          ++finite;
        }
      }
      if (finite) mean_magnitude /= static_cast<double>(finite);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (exact) {
        if (!(a[i] == e[i])) {
          double diff = std::fabs(convert_element<double>(a[i]) - convert_element<double>(e[i]));
          result.max_abs_error = std::max(result.max_abs_error, diff);
          if (worst < 0) worst = i;
        }
        continue;
      }
      double x = convert_element<double>(a[i]);
      double y = convert_element<double>(e[i]);
      if (std::isnan(x) || std::isnan(y)) {
        if (std::isnan(x) != std::isnan(y) && worst < 0) worst = i;
        continue;
      }
      if (std::isinf(x) || std::isinf(y)) {
        if (x != y && worst < 0) worst = i;
        continue;
      }
      double diff = std::fabs(x - y);
      result.max_abs_error = std::max(result.max_abs_error, diff);
      if (y != 0) result.max_rel_error = std::max(result.max_rel_error, diff / std::fabs(y));
      double excess = diff - (tolerance.atol + tolerance.rtol * (std::fabs(y) + mean_magnitude));
      if (excess > 0 && excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
    if (worst >= 0) {
      result.ok = false;
      result.message =
          fmt::format("element {} is {}, expected {} (max abs error {:.3g})",
                      index_text(worst, actual.shape()), convert_element<double>(a[worst]),
                      convert_element<double>(e[worst]), result.max_abs_error);
    }
  });
  return result;
}

Comparison compare_values(const RuntimeValue& actual, const RuntimeValue& expected,
                          const Tolerance& tolerance) {
  if (actual.kind() != expected.kind()) {
    Comparison result;
    result.ok = false;
    result.message = "got " + actual.describe() + ", expected " + expected.describe();
    return result;
  }
  if (actual.is_none()) return {};
  if (actual.is_tensor()) return compare_tensors(actual.tensor(), expected.tensor(), tolerance);
  const auto& a = actual.sequence_items();
  const auto& e = expected.sequence_items();
  Comparison total;
  if (a.size() != e.size()) {
    total.ok = false;
    total.message = fmt::format("sequence of {} items, expected {}", a.size(), e.size());
    return total;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    Comparison item = compare_tensors(a[i], e[i], tolerance);
    total.max_abs_error = std::max(total.max_abs_error, item.max_abs_error);
    total.max_rel_error = std::max(total.max_rel_error, item.max_rel_error);
    if (!item.ok && total.ok) {
      total.ok = false;
      total.message = fmt::format("sequence item {}: {}", i, item.message);
    }
  }
  return total;
}

}  // namespace onnxkit
