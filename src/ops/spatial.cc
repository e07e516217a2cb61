// Op family: spatial (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_spatial_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
