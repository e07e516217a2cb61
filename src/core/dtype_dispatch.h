// Dtype dispatch: calls a generic lambda with the C++ element type of a runtime DType.
// Shared by reference kernels, optimized kernels and passes alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/half.h"
#include "core/status.h"
#include "onnxkit/dtype.h"

namespace onnxkit {

template <typename T>
struct TypeTag {
  using type = T;
};

// C++ element type of each DType (bool is stored as one byte 0/1).
// Calls f(TypeTag<T>{}) for the dtypes of the set; other dtypes fail naming `what`.
template <typename F>
decltype(auto) dispatch_float(DType dtype, std::string_view what, F&& f) {
  switch (dtype) {
    case DType::kFloat:
      return f(TypeTag<float>{});
    case DType::kDouble:
      return f(TypeTag<double>{});
    case DType::kFloat16:
      return f(TypeTag<Float16>{});
    case DType::kBFloat16:
      return f(TypeTag<BFloat16>{});
    default:
      fail("{}: type {} is not supported (needs a floating-point type)", what, dtype_name(dtype));
  }
}

template <typename F>
decltype(auto) dispatch_integer(DType dtype, std::string_view what, F&& f) {
  switch (dtype) {
    case DType::kInt8:
      return f(TypeTag<int8_t>{});
    case DType::kInt16:
      return f(TypeTag<int16_t>{});
    case DType::kInt32:
      return f(TypeTag<int32_t>{});
    case DType::kInt64:
      return f(TypeTag<int64_t>{});
    case DType::kUInt8:
      return f(TypeTag<uint8_t>{});
    case DType::kUInt16:
      return f(TypeTag<uint16_t>{});
    case DType::kUInt32:
      return f(TypeTag<uint32_t>{});
    case DType::kUInt64:
      return f(TypeTag<uint64_t>{});
    default:
      fail("{}: type {} is not supported (needs an integer type)", what, dtype_name(dtype));
  }
}

// Floats and integers (not bool, not string).
template <typename F>
decltype(auto) dispatch_numeric(DType dtype, std::string_view what, F&& f) {
  if (dtype_is_float(dtype)) return dispatch_float(dtype, what, std::forward<F>(f));
  return dispatch_integer(dtype, what, std::forward<F>(f));
}

// Numeric plus bool.
template <typename F>
decltype(auto) dispatch_numeric_bool(DType dtype, std::string_view what, F&& f) {
  if (dtype == DType::kBool) return f(TypeTag<bool>{});
  return dispatch_numeric(dtype, what, std::forward<F>(f));
}

// Every tensor dtype including string (std::string) and bool.
template <typename F>
decltype(auto) dispatch_all(DType dtype, std::string_view what, F&& f) {
  if (dtype == DType::kString) return f(TypeTag<std::string>{});
  return dispatch_numeric_bool(dtype, what, std::forward<F>(f));
}

// Storage of a 16-byte element (complex128), for kernels that only move elements.
struct Bytes16 {
  uint64_t lo;
  uint64_t hi;
};

// Calls f(TypeTag<S>{}) with S a trivially copyable type of the dtype's element size
// (std::string for strings): one instantiation per size serves every dtype in kernels that
// copy elements without looking at their values (gathers, transposes, padding).
template <typename F>
decltype(auto) dispatch_storage(DType dtype, std::string_view what, F&& f) {
  if (dtype == DType::kString) return f(TypeTag<std::string>{});
  switch (dtype_size(dtype)) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<uint64_t>{});
    case 16:
      return f(TypeTag<Bytes16>{});
    default:
      fail("{}: type {} is not supported", what, dtype_name(dtype));
  }
}

}  // namespace onnxkit
