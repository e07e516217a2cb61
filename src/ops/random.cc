// Op family: random (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_random_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
