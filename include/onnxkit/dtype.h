// Element types, numbered as ONNX's TensorProto.DataType so the boundary needs no table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnxkit {

// A tensor's element type.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Bytes per element; 0 for kString (stored as std::string) and kUndefined.
size_t dtype_size(DType type);
// ONNX spelling in lower case: "float", "int64", "float16", ...
std::string_view dtype_name(DType type);
// True for the values ONNX defines (0 excluded).
bool dtype_is_known(int32_t code);
// float, double, float16, bfloat16.
bool dtype_is_float(DType type);
// Signed and unsigned integers (not bool).
bool dtype_is_integer(DType type);
// Signed integers and the floating-point types.
bool dtype_is_signed(DType type);

}  // namespace onnxkit
