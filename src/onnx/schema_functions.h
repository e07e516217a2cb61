// Function bodies that ONNX's schemas define for some ops (Celu, Range, SoftmaxCrossEntropyLoss,
// ...), so the executor can run an op it has no kernel for by expanding it.
#pragma once

#include <optional>

#include "ir/model.h"

namespace onnxkit {

// The body ONNX's schema of `node` defines at `opset`, built for this node's attributes and
// input types (context-dependent functions), or nullopt when the schema has none.
std::optional<Function> schema_function_body(const Node& node, int64_t opset);

}  // namespace onnxkit
