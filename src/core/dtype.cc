#include "onnxkit/dtype.h"

namespace onnxkit {

size_t dtype_size(DType type) {
  switch (type) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kUInt4:
    case DType::kInt4:
    case DType::kFloat4E2M1:
    case DType::kUInt2:
    case DType::kInt2:
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2:
      return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat:
      return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kDouble:
    case DType::kComplex64:
      return 8;
    case DType::kComplex128:
      return 16;
    case DType::kString:
    case DType::kUndefined:
      return 0;
  }
  return 0;
}

std::string_view dtype_name(DType type) {
  switch (type) {
    case DType::kUndefined:
      return "undefined";
    case DType::kFloat:
      return "float";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kString:
      return "string";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kDouble:
      return "double";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat8E4M3FN:
      return "float8e4m3fn";
    case DType::kFloat8E4M3FNUZ:
      return "float8e4m3fnuz";
    case DType::kFloat8E5M2:
      return "float8e5m2";
    case DType::kFloat8E5M2FNUZ:
      return "float8e5m2fnuz";
    case DType::kUInt4:
      return "uint4";
    case DType::kInt4:
      return "int4";
    case DType::kFloat4E2M1:
      return "float4e2m1";
    case DType::kFloat8E8M0:
      return "float8e8m0";
    case DType::kUInt2:
      return "uint2";
    case DType::kInt2:
      return "int2";
    case DType::kFloat6E2M3:
      return "float6e2m3";
    case DType::kFloat6E3M2:
      return "float6e3m2";
  }
  return "unknown";
}

size_t dtype_bits(DType type) {
  switch (type) {
    case DType::kUInt4:
    case DType::kInt4:
    case DType::kFloat4E2M1:
      return 4;
    case DType::kUInt2:
    case DType::kInt2:
      return 2;
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2:
      return 6;
    default:
      return 8 * dtype_size(type);
  }
}

bool dtype_is_packed(DType type) {
  return dtype_bits(type) != 0 && dtype_bits(type) < 8;
}

bool dtype_is_known(int32_t code) {
  return code >= 1 && code <= 28;
}

bool dtype_is_float(DType type) {
  return type == DType::kFloat || type == DType::kDouble || type == DType::kFloat16 ||
         type == DType::kBFloat16;
}

bool dtype_is_small_float(DType type) {
  switch (type) {
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
    case DType::kFloat4E2M1:
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2:
      return true;
    default:
      return false;
  }
}

bool dtype_is_small_integer(DType type) {
  return type == DType::kUInt4 || type == DType::kInt4 || type == DType::kUInt2 ||
         type == DType::kInt2;
}

bool dtype_is_integer(DType type) {
  switch (type) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DType type) {
  switch (type) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return true;
    default:
      return dtype_is_float(type);
  }
}

}  // namespace onnxkit
