// The registry of every op onnxkit ships: the op families' definitions and reference
// kernels (src/ops) and the optimized kernels beside them (src/kernels). Sessions use it
// unless SessionOptions::registry names another.
#pragma once

#include "ops/registry.h"

namespace onnxkit {

// Built once, on first use; immutable afterwards (safe to share between threads).
const OpRegistry& builtin_registry();

// Adds every built-in definition and optimized kernel to `registry` (for a registry that
// extends the built-in one with ops of its own).
void register_builtin_ops(OpRegistry& registry);

}  // namespace onnxkit
