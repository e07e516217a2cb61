#include "onnxkit/dtype.h"

namespace onnxkit {

size_t dtype_size(DType type) {
  switch (type) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
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
  }
  return "unknown";
}

bool dtype_is_known(int32_t code) {
  return code >= 1 && code <= 16;
}

bool dtype_is_float(DType type) {
  return type == DType::kFloat || type == DType::kDouble || type == DType::kFloat16 ||
         type == DType::kBFloat16;
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
