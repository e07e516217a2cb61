// Op family: normalization (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_normalization_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
