// Op family: linalg (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_linalg_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
