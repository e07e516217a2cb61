// Custom op libraries (include/onnxkit/custom_op.h): shared libraries loaded at run time whose
// ops join a registry. Each op's kernel callback becomes an OpKernel and its type callback a
// TypeInferenceRule, so the runtime, the passes and simplify treat it as any other op.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/registry.h"

namespace onnxkit {

// Loads the library at `path` (it stays loaded for the rest of the process: its kernels may
// be in use) and adds the ops it registers to `registry`. Throws Error naming the library
// when it cannot be loaded, exports no registration function, reports a failure, or
// registers an op twice (within itself, or one `registry` already defines).
void load_custom_op_library(const std::string& path, OpRegistry& registry);

// True for the definition of an op a custom op library registered (simplify folds such ops on
// constants; type inference runs their type callback even where libonnx infers the rest).
bool defined_by_custom_op_library(const OpDefinition& definition);

// A copy of `base` with the ops of every library in `paths` added; errors as above.
std::shared_ptr<const OpRegistry> registry_with_custom_ops(const OpRegistry& base,
                                                           const std::vector<std::string>& paths);

}  // namespace onnxkit
