// Op family: elementwise_unary (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_elementwise_unary_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
