// Op family: cast (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_cast_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
