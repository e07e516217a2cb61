// The page of `onnxkit simplify --report`: the graph before and after side by side (removed
// and fused nodes marked on the left, new and fused ones on the right), the op-count table,
// sizes, timings, the check and the passes' work: what the text report says, and the picture.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "ir/model.h"
#include "onnxkit/simplify.h"

namespace onnxkit::report {

struct SimplifyPageInput {
  std::string input_path;
  std::string output_path;  // empty: nothing was written (the check failed)
  Model* before = nullptr;  // the input model as loaded (its types are inferred here)
  const Model* after = nullptr;
  const SimplifyReport* report = nullptr;
  uint64_t size_before = 0;  // bytes on disk, external data included
  uint64_t size_after = 0;
  double load_seconds = 0;
  double save_seconds = 0;
  double total_seconds = 0;
};

// The whole HTML page. Infers the types of `before` (dtype and shape on its edges).
Result<std::string> render_simplify_page(const SimplifyPageInput& input);

}  // namespace onnxkit::report
