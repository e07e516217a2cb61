/* The ABI of custom op libraries: shared libraries that add ops to onnxkit at run time
 * (`--custom-op-lib PATH`, SessionOptions::custom_op_libraries, the C API's
 * onnxkit_session_options_add_custom_op_library).
 *
 * A library exports one C function, ONNXKIT_CUSTOM_OP_REGISTER_FUNCTION:
 *
 *   int onnxkit_register_custom_ops(OnnxkitOpRegistrar* registrar,
 *                                   const OnnxkitCustomOpApi* api);
 *
 * It calls api->register_op once per op version, (domain, op type, since-version) with a
 * kernel callback and optionally a type inference callback, and returns 0 (non-zero: it
 * failed; api->registrar_error says why). The library needs no onnxkit symbols at link time:
 * everything it calls back into comes through `api`, a table of plain C functions whose
 * first field is the ABI version. Every callback gets the same table.
 *
 * A kernel callback runs once per node execution; it may run on several threads at once
 * (for different runs), so it must not keep state outside its inputs, outputs and the
 * read-only user_data. It returns 0, or non-zero after calling api->kernel_error.
 * A type inference callback sets each output's dtype and dims from the inputs' (what it
 * cannot tell it leaves unknown); it returns 0, or non-zero after api->shape_error for inputs
 * the op cannot take. Errors reach the user prefixed with the node and the library.
 * Pure C (C11) and C++ alike; nothing is thrown across it. */
#ifndef ONNXKIT_CUSTOM_OP_H_
#define ONNXKIT_CUSTOM_OP_H_

#include "onnxkit/c_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXKIT_CUSTOM_OP_ABI_VERSION 1
#define ONNXKIT_CUSTOM_OP_REGISTER_FUNCTION "onnxkit_register_custom_ops"

typedef struct OnnxkitOpRegistrar OnnxkitOpRegistrar;     /* registration in progress */
typedef struct OnnxkitOpNode OnnxkitOpNode;               /* a node: its attributes */
typedef struct OnnxkitKernelContext OnnxkitKernelContext; /* one execution of a node */
typedef struct OnnxkitShapeContext OnnxkitShapeContext;   /* type inference of a node */
typedef struct OnnxkitCustomOpApi OnnxkitCustomOpApi;

typedef int (*OnnxkitKernelFn)(const OnnxkitCustomOpApi* api, OnnxkitKernelContext* context,
                               void* user_data);
typedef int (*OnnxkitShapeFn)(const OnnxkitCustomOpApi* api, OnnxkitShapeContext* context,
                              void* user_data);

/* One op version: what it is from `since_version` of `domain`'s opset on. */
typedef struct OnnxkitCustomOp {
  const char* domain;  /* e.g. "com.microsoft"; "" is the standard domain */
  const char* op_type; /* e.g. "Inverse" */
  int64_t since_version;
  OnnxkitKernelFn compute;    /* required */
  OnnxkitShapeFn infer_types; /* may be NULL: the outputs' types stay unknown until run */
  void* user_data;            /* passed to both callbacks; must outlive the process's use */
  /* Non-zero when the same inputs may give other outputs (random ops): such nodes are never
   * folded into constants or merged. Zero: simplify may evaluate nodes on constant inputs. */
  int non_deterministic;
} OnnxkitCustomOp;

/* Attribute lookups return 1 when found, 0 when absent, -1 when it has another type. */
struct OnnxkitCustomOpApi {
  uint32_t abi_version; /* ONNXKIT_CUSTOM_OP_ABI_VERSION of the loading onnxkit */

  /* Registration. Returns 0, or non-zero when the op cannot be added (already registered,
   * no compute callback, ...); the loader then reports the library and the reason. */
  int (*register_op)(OnnxkitOpRegistrar* registrar, const OnnxkitCustomOp* op);
  void (*registrar_error)(OnnxkitOpRegistrar* registrar, const char* message);

  /* Attributes of the node a context is about. */
  const OnnxkitOpNode* (*kernel_node)(const OnnxkitKernelContext* context);
  const OnnxkitOpNode* (*shape_node)(const OnnxkitShapeContext* context);
  const char* (*node_name)(const OnnxkitOpNode* node);
  int (*attr_int)(const OnnxkitOpNode* node, const char* name, int64_t* value);
  int (*attr_float)(const OnnxkitOpNode* node, const char* name, float* value);
  /* A string attribute: `*value` points at bytes valid during the callback (not
   * NUL-terminated when they hold a NUL), `*size` their length. */
  int (*attr_string)(const OnnxkitOpNode* node, const char* name, const char** value, size_t* size);
  /* An ints attribute: `*values` valid during the callback, `*count` elements. */
  int (*attr_ints)(const OnnxkitOpNode* node, const char* name, const int64_t** values,
                   size_t* count);

  /* Kernel side. */
  size_t (*input_count)(const OnnxkitKernelContext* context);
  size_t (*output_count)(const OnnxkitKernelContext* context);
  /* Input `index` as a read-only view (valid during the callback). Returns 1, or 0 when the
   * input is omitted or not a dense tensor (view zeroed). */
  int (*input)(const OnnxkitKernelContext* context, size_t index, OnnxkitTensorView* view);
  /* Allocates output `index` (zero-filled) and fills `view` with where to write (valid
   * during the callback). Returns 0, or non-zero (bad dtype, negative dim; the error is
   * already set). */
  int (*allocate_output)(OnnxkitKernelContext* context, size_t index, int32_t dtype, size_t rank,
                         const int64_t* shape, OnnxkitTensorView* view);
  void (*kernel_error)(OnnxkitKernelContext* context, const char* message);

  /* Type inference side. */
  size_t (*shape_input_count)(const OnnxkitShapeContext* context);
  size_t (*shape_output_count)(const OnnxkitShapeContext* context);
  /* Input `index`'s dtype (ONNXKIT_DTYPE_UNDEFINED when unknown), rank (-1 when unknown)
   * and dims (valid during the callback). Returns 1, or 0 when nothing is known about it. */
  int (*shape_input)(const OnnxkitShapeContext* context, size_t index, int32_t* dtype,
                     int64_t* rank, const OnnxkitDim** dims);
  /* Input `index`'s value when it is a constant known before running (an initializer):
   * returns 1 and a read-only view, or 0. */
  int (*shape_input_value)(const OnnxkitShapeContext* context, size_t index,
                           OnnxkitTensorView* view);
  /* Sets output `index`'s type: rank -1 for an unknown rank (dims ignored); a dim of value
   * -1 and symbol NULL is unknown. Returns 0, or non-zero for a bad dtype. */
  int (*shape_set_output)(OnnxkitShapeContext* context, size_t index, int32_t dtype, int64_t rank,
                          const OnnxkitDim* dims);
  void (*shape_error)(OnnxkitShapeContext* context, const char* message);
};

/* What the library exports (declared here so that its definition is checked). */
#if defined(__GNUC__)
#define ONNXKIT_CUSTOM_OP_EXPORT __attribute__((visibility("default")))
#else
#define ONNXKIT_CUSTOM_OP_EXPORT
#endif
ONNXKIT_CUSTOM_OP_EXPORT int onnxkit_register_custom_ops(OnnxkitOpRegistrar* registrar,
                                                         const OnnxkitCustomOpApi* api);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONNXKIT_CUSTOM_OP_H_ */
