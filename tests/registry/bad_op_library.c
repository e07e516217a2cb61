/* Custom op libraries that are wrong in one way each, built once per BAD_LIBRARY_KIND, for the
 * tests of the loader's errors (custom_op_library_test.cc, the CLI and C API tests). */
#include <string.h>

#include "onnxkit/custom_op.h"

#if BAD_LIBRARY_KIND != 1
static int copy_input(const OnnxkitCustomOpApi* api, OnnxkitKernelContext* context,
                      void* user_data) {
  (void)user_data;
  OnnxkitTensorView x, y;
  if (!api->input(context, 0, &x)) return 1;
  if (api->allocate_output(context, 0, x.dtype, x.rank, x.shape, &y) != 0) return 1;
  (void)y;
  return 0;
}
#endif

#if BAD_LIBRARY_KIND == 5
static int other_types(const OnnxkitCustomOpApi* api, OnnxkitShapeContext* context,
                       void* user_data) {
  (void)user_data;
  return api->shape_set_output(context, 0, ONNXKIT_DTYPE_FLOAT, -1, NULL);
}
#endif

#if BAD_LIBRARY_KIND == 1
/* Exports no registration function. */
ONNXKIT_CUSTOM_OP_EXPORT int onnxkit_register_ops_misspelled(void) {
  return 0;
}
#else
int onnxkit_register_custom_ops(OnnxkitOpRegistrar* registrar, const OnnxkitCustomOpApi* api) {
  OnnxkitCustomOp op;
  memset(&op, 0, sizeof op);
  op.compute = copy_input;
#if BAD_LIBRARY_KIND == 2
  /* Registers one op version twice. */
  op.domain = "test.bad";
  op.op_type = "Twice";
  op.since_version = 1;
  if (api->register_op(registrar, &op) != 0) return 1;
  return api->register_op(registrar, &op);
#elif BAD_LIBRARY_KIND == 3
  /* Redefines a standard op. */
  op.domain = "";
  op.op_type = "Relu";
  op.since_version = 14;
  return api->register_op(registrar, &op);
#elif BAD_LIBRARY_KIND == 4
  /* Its registration fails, saying why. */
  (void)op;
  api->registrar_error(registrar, "this library needs a GPU");
  return 1;
#elif BAD_LIBRARY_KIND == 5
  /* The example's op with another type callback: type callbacks are process-wide. */
  op.domain = "com.microsoft";
  op.op_type = "Inverse";
  op.since_version = 1;
  op.infer_types = other_types;
  return api->register_op(registrar, &op);
#endif
}
#endif
