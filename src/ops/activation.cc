// Op family: activation (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_activation_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
