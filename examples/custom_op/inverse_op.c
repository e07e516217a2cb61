/* A custom op library for onnxkit (include/onnxkit/custom_op.h), in plain C11:
 * com.microsoft::Inverse, version 1.
 *
 * Why this op: PyTorch models that call torch.inverse / torch.linalg.inv export it as
 * com.microsoft::Inverse (the symbolic in ONNX Runtime's contrib-op registration for
 * torch.onnx; ONNX has no matrix inverse), so real exported models carry it, and ONNX
 * Runtime implements it, which lets the tests compare this library with the peer.
 *
 * Semantics (ONNX Runtime's contrib op): input X of shape [..., n, n], float or double; output
 * the inverse of each n x n matrix, same dtype and shape. A singular matrix is an error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxkit/custom_op.h"

/* Gauss-Jordan elimination with partial pivoting on one n x n matrix, in double precision;
 * `work` holds 2 * n * n doubles. Returns 0, or -1 when the matrix is singular. */
static int invert(size_t n, double* work) {
  double* a = work;
  double* inv = work + n * n;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) inv[i * n + j] = i == j ? 1.0 : 0.0;
  }
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t row = col + 1; row < n; ++row) {
      if (fabs(a[row * n + col]) > fabs(a[pivot * n + col])) pivot = row;
    }
    if (a[pivot * n + col] == 0.0 || !isfinite(a[pivot * n + col])) return -1;
    if (pivot != col) {
      for (size_t j = 0; j < n; ++j) {
        double t = a[col * n + j];
        a[col * n + j] = a[pivot * n + j];
        a[pivot * n + j] = t;
        t = inv[col * n + j];
        inv[col * n + j] = inv[pivot * n + j];
        inv[pivot * n + j] = t;
      }
    }
    const double scale = 1.0 / a[col * n + col];
    for (size_t j = 0; j < n; ++j) {
      a[col * n + j] *= scale;
      inv[col * n + j] *= scale;
    }
    for (size_t row = 0; row < n; ++row) {
      const double factor = a[row * n + col];
      if (row == col || factor == 0.0) continue;
      for (size_t j = 0; j < n; ++j) {
        a[row * n + j] -= factor * a[col * n + j];
        inv[row * n + j] -= factor * inv[col * n + j];
      }
    }
  }
  return 0;
}

static int fail_kernel(const OnnxkitCustomOpApi* api, OnnxkitKernelContext* context,
                       const char* message) {
  api->kernel_error(context, message);
  return 1;
}

static int inverse_compute(const OnnxkitCustomOpApi* api, OnnxkitKernelContext* context,
                           void* user_data) {
  (void)user_data;
  OnnxkitTensorView x;
  if (!api->input(context, 0, &x)) return fail_kernel(api, context, "input X is missing");
  if (x.dtype != ONNXKIT_DTYPE_FLOAT && x.dtype != ONNXKIT_DTYPE_DOUBLE) {
    return fail_kernel(api, context, "X must be float or double");
  }
  if (x.rank < 2 || x.shape[x.rank - 1] != x.shape[x.rank - 2]) {
    return fail_kernel(api, context, "X must have shape [..., n, n]");
  }
  const size_t n = (size_t)x.shape[x.rank - 1];
  size_t batch = 1;
  for (size_t i = 0; i + 2 < x.rank; ++i) batch *= (size_t)x.shape[i];
  OnnxkitTensorView y;
  if (api->allocate_output(context, 0, x.dtype, x.rank, x.shape, &y) != 0) return 1;
  if (n == 0 || batch == 0) return 0;
  double* work = malloc(2 * n * n * sizeof(double));
  if (!work) return fail_kernel(api, context, "out of memory");
  for (size_t b = 0; b < batch; ++b) {
    const size_t offset = b * n * n;
    for (size_t i = 0; i < n * n; ++i) {
      work[i] = x.dtype == ONNXKIT_DTYPE_FLOAT ? ((const float*)x.data)[offset + i]
                                               : ((const double*)x.data)[offset + i];
    }
    if (invert(n, work) != 0) {
      free(work);
      char message[96];
      snprintf(message, sizeof message, "matrix %zu of %zu is singular", b, batch);
      return fail_kernel(api, context, message);
    }
    for (size_t i = 0; i < n * n; ++i) {
      if (y.dtype == ONNXKIT_DTYPE_FLOAT) {
        ((float*)y.data)[offset + i] = (float)work[n * n + i];
      } else {
        ((double*)y.data)[offset + i] = work[n * n + i];
      }
    }
  }
  free(work);
  return 0;
}

/* Y has X's type; the last two dims must be equal where both are known. */
static int inverse_infer_types(const OnnxkitCustomOpApi* api, OnnxkitShapeContext* context,
                               void* user_data) {
  (void)user_data;
  int32_t dtype;
  int64_t rank;
  const OnnxkitDim* dims;
  if (!api->shape_input(context, 0, &dtype, &rank, &dims)) return 0;
  if (dtype != ONNXKIT_DTYPE_UNDEFINED && dtype != ONNXKIT_DTYPE_FLOAT &&
      dtype != ONNXKIT_DTYPE_DOUBLE) {
    api->shape_error(context, "X must be float or double");
    return 1;
  }
  if (rank >= 0) {
    if (rank < 2) {
      api->shape_error(context, "X must have rank >= 2");
      return 1;
    }
    const OnnxkitDim* rows = &dims[rank - 2];
    const OnnxkitDim* cols = &dims[rank - 1];
    if (rows->value >= 0 && cols->value >= 0 && rows->value != cols->value) {
      api->shape_error(context, "X's last two dims differ: the matrices must be square");
      return 1;
    }
  }
  return api->shape_set_output(context, 0, dtype, rank, dims);
}

int onnxkit_register_custom_ops(OnnxkitOpRegistrar* registrar, const OnnxkitCustomOpApi* api) {
  if (api->abi_version != ONNXKIT_CUSTOM_OP_ABI_VERSION) {
    api->registrar_error(registrar, "built for another custom op ABI version");
    return 1;
  }
  OnnxkitCustomOp op;
  memset(&op, 0, sizeof op);
  op.domain = "com.microsoft";
  op.op_type = "Inverse";
  op.since_version = 1;
  op.compute = inverse_compute;
  op.infer_types = inverse_infer_types;
  return api->register_op(registrar, &op);
}
