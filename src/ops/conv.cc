// Op family: conv (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_conv_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
