// Summary figures of a model, as `onnxkit inspect` shows them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/model.h"

namespace onnxkit {

struct ModelStats {
  size_t nodes = 0;        // main graph only
  size_t nodes_total = 0;  // including If/Loop/Scan bodies
  size_t subgraphs = 0;
  std::map<std::string, size_t> op_histogram;  // "Conv" or "com.microsoft.Attention"
  size_t initializers = 0;
  uint64_t initializer_bytes = 0;
  uint64_t parameters = 0;  // elements in initializers
};

// Counts nodes (recursively), ops and initializers; reads no tensor data.
ModelStats compute_model_stats(const Model& model);

}  // namespace onnxkit
