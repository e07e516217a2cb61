// Replaces function calls with the function's nodes: calls of model-local functions
// (ModelProto.functions), and calls of ops that have no kernel but whose ONNX schema
// defines a function body. Works inside subgraphs too.
#pragma once

#include <functional>

#include "core/status.h"
#include "ir/model.h"

namespace onnxkit {

struct InlineOptions {
  // True when the executor has a kernel for `node` (then a schema body is not used).
  std::function<bool(const Node& node)> has_kernel;
  // Expand schema-defined function ops that lack a kernel.
  bool expand_schema_functions = true;
};

// Returns the number of calls inlined, or an error naming the call that could not be.
Result<size_t> inline_functions(Model& model, const InlineOptions& options);

// The model-local function `node` calls, or nullptr.
const Function* find_local_function(const Model& model, const Node& node);

}  // namespace onnxkit
