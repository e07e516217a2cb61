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
  // Low-precision types. In memory each element takes one byte (sub-byte types hold their
  // value in the low bits: int4/int2 sign-extended, uint4/uint2 zero-extended, float4/float6
  // their code); ONNX files pack the sub-byte ones, low bits first, and load/save convert.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
  kFloat6E2M3 = 27,
  kFloat6E3M2 = 28,
};

// Bytes per element in memory; 0 for kString (stored as std::string) and kUndefined.
size_t dtype_size(DType type);
// Bits per element in ONNX's serialized form (4 for int4, 2 for uint2, 6 for float6, 8 times
// dtype_size for the rest); 0 for kString and kUndefined.
size_t dtype_bits(DType type);
// Types ONNX packs below one byte per element (int4, uint4, float4, int2, uint2, float6).
bool dtype_is_packed(DType type);
// ONNX spelling in lower case: "float", "int64", "float16", ...
std::string_view dtype_name(DType type);
// True for the values ONNX defines (0 excluded).
bool dtype_is_known(int32_t code);
// float, double, float16, bfloat16 (the types with C++ arithmetic, see dtype_dispatch.h).
bool dtype_is_float(DType type);
// The 4..8-bit float formats, stored as one code byte: float8 (e4m3fn, e4m3fnuz, e5m2,
// e5m2fnuz, e8m0), float4e2m1, float6 (e2m3, e3m2). See core/low_precision.h.
bool dtype_is_small_float(DType type);
// Signed and unsigned integers of 8 bits or more (not bool).
bool dtype_is_integer(DType type);
// int4, uint4, int2, uint2.
bool dtype_is_small_integer(DType type);
// Signed integers and the floating-point types.
bool dtype_is_signed(DType type);

}  // namespace onnxkit
