// Target (c): model + generated inputs -> Session::create -> run, at level none and all,
// with the per-run bounds of fuzz_util (64 MiB tensors, 256 MiB per run, 256 Loop
// iterations); libFuzzer's -timeout bounds the time. When both levels run, their outputs
// must agree in kind, dtype and shape (values may differ by rounding).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "fuzz_util.h"
#include "ir/graph.h"
#include "onnxkit/model_io.h"
#include "onnxkit/session.h"

using namespace onnxkit;

namespace {

// Models whose inputs or size would make a run slow for reasons that are no bug.
bool small_enough(const Model& model) {
  return model.graph().nodes().size() <= 64;
}

std::optional<NamedValues> run_at(const std::string& bytes, OptimizationLevel level) {
  auto model = parse_model(bytes);
  if (!model || !small_enough(model.value())) return std::nullopt;
  fuzz::seed_random_ops(model.value());
  auto session = Session::create(std::move(model).value(), fuzz::bounded_session_options(level));
  if (!session) return std::nullopt;
  NamedValues inputs;
  if (!fuzz::make_fuzz_inputs(*session.value(), inputs)) return std::nullopt;
  auto outputs = session.value()->run(inputs);
  if (!outputs) return std::nullopt;
  return std::move(outputs).value();
}

std::string describe(const RuntimeValue& value) {
  return value.is_tensor() ? fmt::format("{} {}", dtype_name(value.tensor().dtype()),
                                         shape_to_string(value.tensor().shape()))
                           : value.describe();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto plain = run_at(bytes, OptimizationLevel::kNone);
  auto optimized = run_at(bytes, OptimizationLevel::kAll);
  if (!plain || !optimized) return 0;
  if (plain->size() != optimized->size()) std::abort();
  for (size_t i = 0; i < plain->size(); ++i) {
    const std::string a = describe((*plain)[i].second), b = describe((*optimized)[i].second);
    if (a != b) {
      std::fprintf(stderr, "output '%s': level none gives %s, level all %s\n",
                   (*plain)[i].first.c_str(), a.c_str(), b.c_str());
      std::abort();
    }
  }
  return 0;
}
