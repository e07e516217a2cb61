/* onnxkit's C API (C11): load a model, run it, simplify it, from any language with a C FFI.
 *
 *   OnnxkitSession* session = NULL;
 *   OnnxkitStatus* status = onnxkit_session_create_from_file("model.onnx", NULL, &session);
 *   if (status) { fprintf(stderr, "%s\n", onnxkit_status_message(status));
 *                 onnxkit_status_free(status); return 1; }
 *   int64_t shape[2] = {1, 3};
 *   float x[3] = {1, 2, 3};
 *   OnnxkitTensorView input = {ONNXKIT_DTYPE_FLOAT, 2, shape, x};
 *   const char* input_name = "x";
 *   OnnxkitValue* y = NULL;  // output allocated by onnxkit (its shape need not be known)
 *   status = onnxkit_session_run(session, &input_name, &input, 1, NULL, 1, NULL, &y);
 *   OnnxkitTensorView out;
 *   onnxkit_value_view(y, &out);  // out.dtype, out.rank, out.shape, out.data
 *   onnxkit_value_free(y);
 *   onnxkit_session_free(session);
 *
 * Rules: every call that can fail returns an OnnxkitStatus*: NULL on success, else an error
 * whose message names what is at fault (the file, input, node or library); the caller frees
 * it with onnxkit_status_free. Handles are opaque and freed by their *_free function (NULL is
 * accepted and ignored). Out parameters are written only on success. Nothing is thrown across
 * this API, and no C++ type crosses it. A session may run from several threads at once;
 * other handles are not synchronized. Link: the `onnxkit::onnxkit_c` CMake target. */
#ifndef ONNXKIT_C_H_
#define ONNXKIT_C_H_

#include <stddef.h>
#include <stdint.h>

#include "onnxkit/c_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OnnxkitStatus OnnxkitStatus;
typedef struct OnnxkitModel OnnxkitModel;
typedef struct OnnxkitSessionOptions OnnxkitSessionOptions;
typedef struct OnnxkitSession OnnxkitSession;
typedef struct OnnxkitValue OnnxkitValue;
typedef struct OnnxkitSimplifyOptions OnnxkitSimplifyOptions;

/* What kind of failure a status is. */
typedef enum OnnxkitErrorCode {
  ONNXKIT_ERROR_FAIL = 1,             /* the model, the file or the run failed */
  ONNXKIT_ERROR_INVALID_ARGUMENT = 2, /* a NULL handle, a bad dtype or shape, an unknown name */
  ONNXKIT_ERROR_CHECK_FAILED = 3,     /* simplify: the result does not compute the same */
  ONNXKIT_ERROR_RESOURCE_LIMIT = 4    /* a run's bound was reached (max tensor / run bytes,
                                         loop iterations) or memory ran out */
} OnnxkitErrorCode;

/* onnxkit's version, "MAJOR.MINOR.PATCH" (static storage). */
const char* onnxkit_version(void);

/* A status's message (valid until it is freed) and code. */
const char* onnxkit_status_message(const OnnxkitStatus* status);
OnnxkitErrorCode onnxkit_status_code(const OnnxkitStatus* status);
void onnxkit_status_free(OnnxkitStatus* status);

/* ---- Models ---- */

/* Loads an .onnx file (external data beside it is found relative to it). */
OnnxkitStatus* onnxkit_model_load(const char* path, OnnxkitModel** model);
/* Loads a model from a serialized ModelProto in memory (copied; no external data). */
OnnxkitStatus* onnxkit_model_load_from_memory(const void* data, size_t size, OnnxkitModel** model);
void onnxkit_model_free(OnnxkitModel* model);

/* ---- Session options (defaults: level "all", optimized kernels, every core) ---- */

OnnxkitStatus* onnxkit_session_options_create(OnnxkitSessionOptions** options);
void onnxkit_session_options_free(OnnxkitSessionOptions* options);
/* "none", "basic", "extended", "layout" or "all". */
OnnxkitStatus* onnxkit_session_options_set_level(OnnxkitSessionOptions* options, const char* level);
/* Threads one run may use; 0: every core available to the process. */
OnnxkitStatus* onnxkit_session_options_set_intra_op_threads(OnnxkitSessionOptions* options,
                                                            int threads);
/* Independent branches run in parallel on up to `threads` workers; 0 or 1: sequential. */
OnnxkitStatus* onnxkit_session_options_set_inter_op_threads(OnnxkitSessionOptions* options,
                                                            int threads);
/* "optimized" (fast kernels where there are some) or "reference". */
OnnxkitStatus* onnxkit_session_options_set_kernels(OnnxkitSessionOptions* options,
                                                   const char* kernels);
/* A custom op library (include/onnxkit/custom_op.h) to load when a session is created. */
OnnxkitStatus* onnxkit_session_options_add_custom_op_library(OnnxkitSessionOptions* options,
                                                             const char* path);

/* ---- Sessions ---- */

/* Compiles `model` (which stays the caller's, unchanged); `options` may be NULL. */
OnnxkitStatus* onnxkit_session_create(const OnnxkitModel* model,
                                      const OnnxkitSessionOptions* options,
                                      OnnxkitSession** session);
OnnxkitStatus* onnxkit_session_create_from_file(const char* path,
                                                const OnnxkitSessionOptions* options,
                                                OnnxkitSession** session);
void onnxkit_session_free(OnnxkitSession* session);

/* A graph input or output as declared. Pointers stay valid while the session lives. */
typedef struct OnnxkitValueInfo {
  const char* name;
  int32_t dtype;          /* ONNXKIT_DTYPE_*; UNDEFINED when not declared or not a tensor */
  int is_tensor;          /* 0 for sequences, maps, optionals */
  int64_t rank;           /* -1 when unknown */
  const OnnxkitDim* dims; /* `rank` entries */
  const char* type;       /* the whole type as text: "float[batch,3,224,224]" */
} OnnxkitValueInfo;

/* The inputs a run must feed (graph inputs without an initializer) and its outputs. */
OnnxkitStatus* onnxkit_session_input_count(const OnnxkitSession* session, size_t* count);
OnnxkitStatus* onnxkit_session_output_count(const OnnxkitSession* session, size_t* count);
OnnxkitStatus* onnxkit_session_input_info(const OnnxkitSession* session, size_t index,
                                          OnnxkitValueInfo* info);
OnnxkitStatus* onnxkit_session_output_info(const OnnxkitSession* session, size_t index,
                                           OnnxkitValueInfo* info);

/* Runs the model. Inputs: `input_count` views, by name (any order); their memory is read,
 * never written, and not kept after the call.
 * Outputs: `output_names` (NULL: every output, in graph order; `output_count` must then be
 * the session's output count). For each output i:
 *   - bound_outputs != NULL and bound_outputs[i].data != NULL: written into that caller-owned
 *     memory, whose dtype and shape must be exactly what the model produces (else an error
 *     naming the output); allocated_outputs[i] (when given) is set to NULL;
 *   - otherwise allocated by onnxkit: allocated_outputs[i] receives a value to read with
 *     onnxkit_value_view and free with onnxkit_value_free (allocated_outputs must then be
 *     non-NULL).
 * Errors name the input (unknown, missing, wrong dtype or shape), the output or the node. */
OnnxkitStatus* onnxkit_session_run(const OnnxkitSession* session, const char* const* input_names,
                                   const OnnxkitTensorView* inputs, size_t input_count,
                                   const char* const* output_names, size_t output_count,
                                   const OnnxkitTensorView* bound_outputs,
                                   OnnxkitValue** allocated_outputs);

/* An output onnxkit allocated: `view` points into it and is valid until it is freed. */
OnnxkitStatus* onnxkit_value_view(const OnnxkitValue* value, OnnxkitTensorView* view);
void onnxkit_value_free(OnnxkitValue* value);

/* ---- Simplify (onnxsim's job) ---- */

OnnxkitStatus* onnxkit_simplify_options_create(OnnxkitSimplifyOptions** options);
void onnxkit_simplify_options_free(OnnxkitSimplifyOptions* options);
/* Equivalence check runs with generated inputs: ONNXKIT_CHECK_N_AUTO (the default: one run
   when both models' runs are estimated cheap, none otherwise), n > 0 runs, or 0: no check. */
#define ONNXKIT_CHECK_N_AUTO (-1)
OnnxkitStatus* onnxkit_simplify_options_set_check_n(OnnxkitSimplifyOptions* options, int n);
/* Skip every optimization (shape overrides and output removal still apply). */
OnnxkitStatus* onnxkit_simplify_options_set_skip_optimization(OnnxkitSimplifyOptions* options,
                                                              int skip);
/* Fixes input `name`'s shape (dims >= 0; the model becomes static there). */
OnnxkitStatus* onnxkit_simplify_options_set_input_shape(OnnxkitSimplifyOptions* options,
                                                        const char* name, const int64_t* dims,
                                                        size_t rank);
OnnxkitStatus* onnxkit_simplify_options_add_custom_op_library(OnnxkitSimplifyOptions* options,
                                                              const char* path);

/* Simplifies the model at `input_path` and writes it to `output_path`, which must not be the
 * input. A failed equivalence check writes nothing and returns ONNXKIT_ERROR_CHECK_FAILED with
 * the check's message. `nodes_before` / `nodes_after` may be NULL. */
OnnxkitStatus* onnxkit_simplify_file(const char* input_path, const char* output_path,
                                     const OnnxkitSimplifyOptions* options, size_t* nodes_before,
                                     size_t* nodes_after);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONNXKIT_C_H_ */
