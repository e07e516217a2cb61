/* Plain C types shared by the C API (onnxkit_c.h) and the custom op ABI (custom_op.h):
 * element types, a view of a dense tensor, and a declared dimension. C11 and C++ alike. */
#ifndef ONNXKIT_C_TYPES_H_
#define ONNXKIT_C_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, numbered as ONNX's TensorProto.DataType (onnxkit::DType). Fields that hold
 * one are int32_t so that the layout does not depend on the compiler's enum size. */
enum {
  ONNXKIT_DTYPE_UNDEFINED = 0,
  ONNXKIT_DTYPE_FLOAT = 1,
  ONNXKIT_DTYPE_UINT8 = 2,
  ONNXKIT_DTYPE_INT8 = 3,
  ONNXKIT_DTYPE_UINT16 = 4,
  ONNXKIT_DTYPE_INT16 = 5,
  ONNXKIT_DTYPE_INT32 = 6,
  ONNXKIT_DTYPE_INT64 = 7,
  ONNXKIT_DTYPE_STRING = 8, /* not representable in a tensor view */
  ONNXKIT_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  ONNXKIT_DTYPE_FLOAT16 = 10,
  ONNXKIT_DTYPE_DOUBLE = 11,
  ONNXKIT_DTYPE_UINT32 = 12,
  ONNXKIT_DTYPE_UINT64 = 13,
  ONNXKIT_DTYPE_COMPLEX64 = 14,
  ONNXKIT_DTYPE_COMPLEX128 = 15,
  ONNXKIT_DTYPE_BFLOAT16 = 16
  /* 17..28: the low-precision types, one byte per element in memory (onnxkit/dtype.h). */
};

/* A dense row-major tensor in someone else's memory: nobody owns anything through a view.
 * Who may write `data` depends on where the view comes from (the function says). */
typedef struct OnnxkitTensorView {
  int32_t dtype;        /* ONNXKIT_DTYPE_* */
  size_t rank;          /* number of dims; 0 for a scalar */
  const int64_t* shape; /* `rank` dims, outermost first */
  void* data;           /* the elements, densely packed, C order */
} OnnxkitTensorView;

/* One declared dimension: a number, a named symbol ("batch"), or unknown. */
typedef struct OnnxkitDim {
  int64_t value;      /* >= 0 when known, -1 otherwise */
  const char* symbol; /* the symbol's name when the dim is named, else NULL */
} OnnxkitDim;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONNXKIT_C_TYPES_H_ */
