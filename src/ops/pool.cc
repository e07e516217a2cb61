// Op family: pool (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_pool_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
