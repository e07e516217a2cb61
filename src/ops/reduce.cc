// Op family: reduce (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_reduce_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
