/* Prints onnxkit's version and the first input of the model in argv[1], through the C API of
 * an installed onnxkit. Exit 1 with the error on stderr when the model cannot be loaded. */
#include <stdio.h>

#include <onnxkit/onnxkit_c.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  printf("onnxkit %s\n", onnxkit_version());
  OnnxkitSession* session = NULL;
  OnnxkitStatus* status = onnxkit_session_create_from_file(argv[1], NULL, &session);
  if (status) {
    fprintf(stderr, "error: %s\n", onnxkit_status_message(status));
    onnxkit_status_free(status);
    return 1;
  }
  OnnxkitValueInfo info;
  status = onnxkit_session_input_info(session, 0, &info);
  if (!status) printf("input %s: %s\n", info.name, info.type);
  onnxkit_status_free(status);
  onnxkit_session_free(session);
  return 0;
}
