/* The C API (include/onnxkit/onnxkit_c.h) as a C11 program uses it: every function, its
 * errors, and the example custom op library through it. Built with AddressSanitizer (see
 * tests/CMakeLists.txt), so a leak, double free or bad access at the boundary fails it.
 * Prints one line per check that fails and exits 1 if any did. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxkit/onnxkit_c.h"

static int failures = 0;

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

/* Expects success; prints the message otherwise. */
static int ok(OnnxkitStatus* status, int line) {
  if (!status) return 1;
  fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, line, onnxkit_status_message(status));
  onnxkit_status_free(status);
  ++failures;
  return 0;
}
#define OK(call) ok((call), __LINE__)

/* Expects an error of `code` whose message contains `needle`. */
static void expect_error(OnnxkitStatus* status, OnnxkitErrorCode code, const char* needle,
                         int line) {
  if (!status) {
    fprintf(stderr, "%s:%d: expected an error containing '%s', got success\n", __FILE__, line,
            needle);
    ++failures;
    return;
  }
  const char* message = onnxkit_status_message(status);
  if (onnxkit_status_code(status) != code || !strstr(message, needle)) {
    fprintf(stderr, "%s:%d: expected error %d containing '%s', got %d: %s\n", __FILE__, line,
            (int)code, needle, (int)onnxkit_status_code(status), message);
    ++failures;
  }
  onnxkit_status_free(status);
}
#define EXPECT_ERROR(call, code, needle) expect_error((call), (code), (needle), __LINE__)

static char* read_file(const char* path, size_t* size) {
  FILE* file = fopen(path, "rb");
  if (!file) return NULL;
  fseek(file, 0, SEEK_END);
  long length = ftell(file);
  fseek(file, 0, SEEK_SET);
  char* bytes = malloc((size_t)length);
  *size = fread(bytes, 1, (size_t)length, file);
  fclose(file);
  return bytes;
}

static void test_version_and_status(void) {
  CHECK(strcmp(onnxkit_version(), ONNXKIT_EXPECTED_VERSION) == 0);
  onnxkit_status_free(NULL);
  OnnxkitModel* model = NULL;
  OnnxkitStatus* status = onnxkit_model_load(NULL, &model);
  CHECK(status != NULL);
  CHECK(onnxkit_status_code(status) == ONNXKIT_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(onnxkit_status_message(status), "path is NULL") != NULL);
  onnxkit_status_free(status);
  CHECK(model == NULL);
}

static void test_models(void) {
  OnnxkitModel* model = NULL;
  if (OK(onnxkit_model_load(TINY_CNN, &model))) onnxkit_model_free(model);
  model = NULL;
  EXPECT_ERROR(onnxkit_model_load(DATA_DIR "/no_such_model.onnx", &model), ONNXKIT_ERROR_FAIL,
               "no_such_model.onnx");
  CHECK(model == NULL);
  size_t size = 0;
  char* bytes = read_file(TINY_CNN, &size);
  CHECK(bytes != NULL);
  if (OK(onnxkit_model_load_from_memory(bytes, size, &model))) onnxkit_model_free(model);
  EXPECT_ERROR(onnxkit_model_load_from_memory(bytes, size / 3, &model), ONNXKIT_ERROR_FAIL, "");
  free(bytes);
  onnxkit_model_free(NULL);
}

static void test_session_options(void) {
  OnnxkitSessionOptions* options = NULL;
  if (!OK(onnxkit_session_options_create(&options))) return;
  OK(onnxkit_session_options_set_level(options, "basic"));
  EXPECT_ERROR(onnxkit_session_options_set_level(options, "fastest"),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "unknown level 'fastest'");
  OK(onnxkit_session_options_set_intra_op_threads(options, 1));
  EXPECT_ERROR(onnxkit_session_options_set_intra_op_threads(options, -1),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "-1");
  OK(onnxkit_session_options_set_inter_op_threads(options, 2));
  EXPECT_ERROR(onnxkit_session_options_set_inter_op_threads(options, -3),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "-3");
  OK(onnxkit_session_options_set_kernels(options, "reference"));
  EXPECT_ERROR(onnxkit_session_options_set_kernels(options, "gpu"), ONNXKIT_ERROR_INVALID_ARGUMENT,
               "unknown kernels 'gpu'");
  EXPECT_ERROR(onnxkit_session_options_add_custom_op_library(options, NULL),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "path is NULL");
  /* A session with these options runs (reference kernels, two inter-op workers). */
  OnnxkitSession* session = NULL;
  if (OK(onnxkit_session_create_from_file(TINY_CNN, options, &session))) {
    onnxkit_session_free(session);
  }
  onnxkit_session_options_free(options);
  onnxkit_session_options_free(NULL);
}

static void test_describe(const OnnxkitSession* session) {
  size_t inputs = 0, outputs = 0;
  OK(onnxkit_session_input_count(session, &inputs));
  OK(onnxkit_session_output_count(session, &outputs));
  CHECK(inputs == 1 && outputs == 1);
  OnnxkitValueInfo info;
  if (OK(onnxkit_session_input_info(session, 0, &info))) {
    CHECK(strcmp(info.name, "input") == 0);
    CHECK(info.dtype == ONNXKIT_DTYPE_FLOAT && info.is_tensor == 1 && info.rank == 4);
    CHECK(info.dims[0].value == -1 && info.dims[0].symbol &&
          strcmp(info.dims[0].symbol, "batch") == 0);
    CHECK(info.dims[1].value == 3 && info.dims[1].symbol == NULL);
    CHECK(info.dims[3].value == 32);
    CHECK(strcmp(info.type, "float[batch,3,32,32]") == 0);
  }
  if (OK(onnxkit_session_output_info(session, 0, &info))) {
    CHECK(strcmp(info.name, "logits") == 0);
    CHECK(info.rank == 2 && info.dims[1].value == 10);
  }
  EXPECT_ERROR(onnxkit_session_input_info(session, 1, &info), ONNXKIT_ERROR_INVALID_ARGUMENT,
               "input index 1 of 1");
  EXPECT_ERROR(onnxkit_session_output_info(session, 5, &info), ONNXKIT_ERROR_INVALID_ARGUMENT,
               "output index 5 of 1");
  EXPECT_ERROR(onnxkit_session_input_count(NULL, &inputs), ONNXKIT_ERROR_INVALID_ARGUMENT,
               "session is NULL");
}

static float image[2 * 3 * 32 * 32];
static const int64_t image_shape[4] = {2, 3, 32, 32};
static const char* const input_name = "input";
static const char* const output_name = "logits";

/* Runs tiny_cnn on `image` into a caller's buffer; returns 0 on success. */
static int run_bound(const OnnxkitSession* session, float* logits) {
  const int64_t shape[2] = {2, 10};
  OnnxkitTensorView input = {ONNXKIT_DTYPE_FLOAT, 4, image_shape, image};
  OnnxkitTensorView bound = {ONNXKIT_DTYPE_FLOAT, 2, shape, logits};
  OnnxkitStatus* status =
      onnxkit_session_run(session, &input_name, &input, 1, &output_name, 1, &bound, NULL);
  if (status) {
    fprintf(stderr, "run_bound: %s\n", onnxkit_status_message(status));
    onnxkit_status_free(status);
    return 1;
  }
  return 0;
}

struct ThreadRun {
  const OnnxkitSession* session;
  float logits[20];
  int failed;
};

static void* run_in_thread(void* argument) {
  struct ThreadRun* run = argument;
  for (int i = 0; i < 5 && !run->failed; ++i) run->failed = run_bound(run->session, run->logits);
  return NULL;
}

static void test_run(const OnnxkitSession* session) {
  for (size_t i = 0; i < sizeof image / sizeof image[0]; ++i)
    image[i] = (float)((i * 7919) % 255) / 255.0f;
  OnnxkitTensorView input = {ONNXKIT_DTYPE_FLOAT, 4, image_shape, image};

  /* Allocated by onnxkit: every output (output_names NULL). */
  OnnxkitValue* allocated = NULL;
  if (!OK(onnxkit_session_run(session, &input_name, &input, 1, NULL, 1, NULL, &allocated))) return;
  OnnxkitTensorView view;
  OK(onnxkit_value_view(allocated, &view));
  CHECK(view.dtype == ONNXKIT_DTYPE_FLOAT && view.rank == 2);
  CHECK(view.shape[0] == 2 && view.shape[1] == 10);
  const float* values = view.data;
  int finite = 1;
  for (int i = 0; i < 20; ++i) finite = finite && isfinite(values[i]);
  CHECK(finite);
  CHECK(values[0] != values[10] || values[1] != values[11]); /* two different images */

  /* Into the caller's memory: the same values. */
  float logits[20] = {0};
  CHECK(run_bound(session, logits) == 0);
  CHECK(memcmp(logits, values, sizeof logits) == 0);

  /* Several threads on one session. */
  struct ThreadRun runs[3];
  pthread_t threads[3];
  for (int t = 0; t < 3; ++t) {
    runs[t].session = session;
    runs[t].failed = 0;
    pthread_create(&threads[t], NULL, run_in_thread, &runs[t]);
  }
  for (int t = 0; t < 3; ++t) {
    pthread_join(threads[t], NULL);
    CHECK(!runs[t].failed);
    CHECK(memcmp(runs[t].logits, values, sizeof logits) == 0);
  }
  onnxkit_value_free(allocated);
  onnxkit_value_free(NULL);

  /* Bad input: each error names what is wrong. */
  OnnxkitValue* out = NULL;
  int32_t ints[6] = {0};
  const int64_t wrong_shape[4] = {1, 3, 16, 32};
  OnnxkitTensorView wrong_dtype = {ONNXKIT_DTYPE_INT32, 4, image_shape, ints};
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &wrong_dtype, 1, NULL, 1, NULL, &out),
               ONNXKIT_ERROR_FAIL, "input");
  OnnxkitTensorView wrong_dims = {ONNXKIT_DTYPE_FLOAT, 4, wrong_shape, image};
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &wrong_dims, 1, NULL, 1, NULL, &out),
               ONNXKIT_ERROR_FAIL, "input");
  EXPECT_ERROR(onnxkit_session_run(session, NULL, NULL, 0, NULL, 1, NULL, &out), ONNXKIT_ERROR_FAIL,
               "input");
  const char* unknown = "pixels";
  EXPECT_ERROR(onnxkit_session_run(session, &unknown, &input, 1, NULL, 1, NULL, &out),
               ONNXKIT_ERROR_FAIL, "pixels");
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &input, 1, &unknown, 1, NULL, &out),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "'pixels' is not an output");
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &input, 1, NULL, 2, NULL, &out),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "output_count is 2");
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &input, 1, NULL, 1, NULL, NULL),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "allocated_outputs is NULL");
  const int64_t negative[4] = {2, 3, -32, 32};
  OnnxkitTensorView negative_dims = {ONNXKIT_DTYPE_FLOAT, 4, negative, image};
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &negative_dims, 1, NULL, 1, NULL, &out),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "input 'input': negative dim");
  const int64_t small_shape[2] = {2, 9};
  OnnxkitTensorView small = {ONNXKIT_DTYPE_FLOAT, 2, small_shape, logits};
  EXPECT_ERROR(onnxkit_session_run(session, &input_name, &input, 1, &output_name, 1, &small, &out),
               ONNXKIT_ERROR_FAIL, "logits");
  CHECK(out == NULL);
}

static void test_sessions(void) {
  OnnxkitModel* model = NULL;
  if (!OK(onnxkit_model_load(TINY_CNN, &model))) return;
  OnnxkitSession* session = NULL;
  if (OK(onnxkit_session_create(model, NULL, &session))) {
    test_describe(session);
    test_run(session);
    onnxkit_session_free(session);
  }
  /* The model stays the caller's: a second session from it. */
  session = NULL;
  if (OK(onnxkit_session_create(model, NULL, &session))) onnxkit_session_free(session);
  onnxkit_model_free(model);
  session = NULL;
  EXPECT_ERROR(onnxkit_session_create_from_file(DATA_DIR "/missing.onnx", NULL, &session),
               ONNXKIT_ERROR_FAIL, "missing.onnx");
  CHECK(session == NULL);
  onnxkit_session_free(NULL);
}

/* Runs the Inverse example on x = k * I (three matrices); y = inverse(x) @ inverse(w) * s. */
static int run_inverse(const OnnxkitSession* session, float k, float* y) {
  float x[27] = {0};
  for (int b = 0; b < 3; ++b) {
    for (int i = 0; i < 3; ++i) x[b * 9 + i * 4] = k;
  }
  const int64_t shape[3] = {3, 3, 3};
  OnnxkitTensorView input = {ONNXKIT_DTYPE_FLOAT, 3, shape, x};
  OnnxkitTensorView bound = {ONNXKIT_DTYPE_FLOAT, 3, shape, y};
  const char* name = "x";
  return ok(onnxkit_session_run(session, &name, &input, 1, NULL, 1, &bound, NULL), __LINE__);
}

static void test_custom_ops(void) {
  OnnxkitSessionOptions* options = NULL;
  if (!OK(onnxkit_session_options_create(&options))) return;
  OnnxkitSession* session = NULL;
  EXPECT_ERROR(onnxkit_session_create_from_file(INVERSE_MODEL, options, &session),
               ONNXKIT_ERROR_FAIL, "Inverse");
  OK(onnxkit_session_options_add_custom_op_library(options, INVERSE_OP_LIB));
  if (OK(onnxkit_session_create_from_file(INVERSE_MODEL, options, &session))) {
    OnnxkitValueInfo info;
    OK(onnxkit_session_output_info(session, 0, &info));
    CHECK(strcmp(info.name, "y") == 0);
    /* inverse(2 I) = inverse(I) / 2: y halves. */
    float y1[27], y2[27];
    if (run_inverse(session, 1.0f, y1) && run_inverse(session, 2.0f, y2)) {
      int halves = 1;
      for (int i = 0; i < 27; ++i)
        halves = halves && fabsf(y2[i] - 0.5f * y1[i]) <= 1e-5f * (1 + fabsf(y1[i]));
      CHECK(halves);
      CHECK(memcmp(y1, y1 + 9, 9 * sizeof(float)) == 0);
      CHECK(fabsf(y1[0]) > 0);
    }
    /* A singular matrix: the kernel's error, naming the library. */
    float zeros[9] = {0}, y[9];
    const int64_t shape[3] = {1, 3, 3};
    OnnxkitTensorView input = {ONNXKIT_DTYPE_FLOAT, 3, shape, zeros};
    OnnxkitTensorView bound = {ONNXKIT_DTYPE_FLOAT, 3, shape, y};
    const char* name = "x";
    EXPECT_ERROR(onnxkit_session_run(session, &name, &input, 1, NULL, 1, &bound, NULL),
                 ONNXKIT_ERROR_FAIL, "is singular");
    onnxkit_session_free(session);
  }
  onnxkit_session_options_free(options);

  /* A library that exports nothing: the error names it. */
  options = NULL;
  if (!OK(onnxkit_session_options_create(&options))) return;
  OK(onnxkit_session_options_add_custom_op_library(options, NO_EXPORT_LIB));
  session = NULL;
  EXPECT_ERROR(onnxkit_session_create_from_file(INVERSE_MODEL, options, &session),
               ONNXKIT_ERROR_FAIL, NO_EXPORT_LIB);
  CHECK(session == NULL);
  onnxkit_session_options_free(options);
}

static void test_simplify(void) {
  OnnxkitSimplifyOptions* options = NULL;
  if (!OK(onnxkit_simplify_options_create(&options))) return;
  OK(onnxkit_simplify_options_set_check_n(options, ONNXKIT_CHECK_N_AUTO));
  OK(onnxkit_simplify_options_set_check_n(options, 2));
  EXPECT_ERROR(onnxkit_simplify_options_set_check_n(options, -2), ONNXKIT_ERROR_INVALID_ARGUMENT,
               "-2");
  const int64_t dims[4] = {1, 3, 32, 32};
  OK(onnxkit_simplify_options_set_input_shape(options, "input", dims, 4));
  const int64_t bad_dims[1] = {-2};
  EXPECT_ERROR(onnxkit_simplify_options_set_input_shape(options, "input", bad_dims, 1),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "input shape of 'input'");
  size_t before = 0, after = 0;
  if (OK(onnxkit_simplify_file(TINY_CNN, OUT_DIR "/tiny_cnn_simplified.onnx", options, &before,
                               &after))) {
    CHECK(before == 16 && after > 0 && after < before);
    OnnxkitSession* session = NULL;
    if (OK(onnxkit_session_create_from_file(OUT_DIR "/tiny_cnn_simplified.onnx", NULL, &session))) {
      OnnxkitValueInfo info;
      OK(onnxkit_session_input_info(session, 0, &info));
      CHECK(info.rank == 4 && info.dims[0].value == 1); /* the shape was fixed */
      onnxkit_session_free(session);
    }
  }
  EXPECT_ERROR(onnxkit_simplify_file(TINY_CNN, TINY_CNN, options, NULL, NULL),
               ONNXKIT_ERROR_INVALID_ARGUMENT, "refusing to write over the input model");
  onnxkit_simplify_options_free(options);

  /* Without optimization: the graph is kept as it is. */
  options = NULL;
  if (!OK(onnxkit_simplify_options_create(&options))) return;
  OK(onnxkit_simplify_options_set_skip_optimization(options, 1));
  OK(onnxkit_simplify_options_set_check_n(options, 0));
  if (OK(onnxkit_simplify_file(TINY_CNN, OUT_DIR "/tiny_cnn_kept.onnx", options, &before,
                               &after))) {
    CHECK(before == after);
  }
  onnxkit_simplify_options_free(options);

  /* The custom op example: its library lets simplify fold inverse(w). */
  options = NULL;
  if (!OK(onnxkit_simplify_options_create(&options))) return;
  OK(onnxkit_simplify_options_add_custom_op_library(options, INVERSE_OP_LIB));
  if (OK(onnxkit_simplify_file(INVERSE_MODEL, OUT_DIR "/inverse_simplified.onnx", options, &before,
                               &after))) {
    CHECK(before == 6 && after == 3); /* Inverse(x), MatMul, Mul */
  }
  onnxkit_simplify_options_free(options);
  onnxkit_simplify_options_free(NULL);
  EXPECT_ERROR(onnxkit_simplify_file(DATA_DIR "/none.onnx", OUT_DIR "/none.onnx", NULL, NULL, NULL),
               ONNXKIT_ERROR_FAIL, "none.onnx");
}

int main(void) {
  test_version_and_status();
  test_models();
  test_session_options();
  test_sessions();
  test_custom_ops();
  test_simplify();
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("capi_test: every check passed\n");
  return 0;
}
