// Target (a): bytes -> load_model (the mapped-file loader, verifier on) -> save -> load.
// A model that loads must save, and its saved copy must load and serialize to the same
// bytes; anything else is a finding. The in-memory parser sees the same bytes.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "onnxkit/model_io.h"

using namespace onnxkit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)parse_model(std::string(reinterpret_cast<const char*>(data), size));
  const auto path = fuzz::write_scratch_file("model.onnx", data, size);
  auto model = load_model(path);
  if (!model) return 0;
  const auto saved = path.parent_path() / "saved.onnx";
  SaveOptions never_external;
  never_external.external_data = ExternalDataMode::kNever;
  if (Status status = save_model(model.value(), saved, never_external); !status) {
    std::fprintf(stderr, "a loaded model does not save: %s\n", status.message().c_str());
    std::abort();
  }
  auto again = load_model(saved);
  if (!again) {
    std::fprintf(stderr, "a saved model does not load: %s\n", again.error().c_str());
    std::abort();
  }
  auto first = serialize_model(model.value());
  auto second = serialize_model(again.value());
  if (!first || !second || first.value() != second.value()) {
    std::fprintf(stderr, "save -> load changed the model\n");
    std::abort();
  }
  return 0;
}
