// Target (b): bytes -> model -> simplify without the check, then with a bounded check on a
// fresh copy -> serialize. Errors are fine; crashes, sanitizer reports, hangs and
// simplified models that do not serialize are findings. The structure-aware mutator
// (model_mutator.cc) mutates attributes, shapes, dtypes and wiring of valid models.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "onnxkit/model_io.h"
#include "onnxkit/simplify.h"

using namespace onnxkit;

namespace {

void simplify_and_save(const std::string& bytes, int check_n) {
  auto model = parse_model(bytes);
  if (!model) return;
  fuzz::seed_random_ops(model.value());
  SimplifyOptions options;
  options.check_n = check_n;
  options.tensor_size_threshold = uint64_t{4} << 20;
  const SessionOptions bounds = fuzz::bounded_session_options(OptimizationLevel::kNone);
  options.max_tensor_bytes = bounds.max_tensor_bytes;
  options.max_run_bytes = bounds.max_run_bytes;
  options.max_loop_iterations = bounds.max_loop_iterations;
  options.check_dims = {};
  auto report = simplify(model.value(), options);
  if (!report) return;
  auto serialized = serialize_model(model.value());
  if (!serialized) {
    std::fprintf(stderr, "a simplified model does not serialize: %s\n", serialized.error().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  simplify_and_save(bytes, 0);
  simplify_and_save(bytes, 1);
  return 0;
}
