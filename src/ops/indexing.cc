// Op family: indexing (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_indexing_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
