// Op family: softmax (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_softmax_ops(OpRegistry& registry) {
  (void)registry;
}

}  // namespace onnxkit
