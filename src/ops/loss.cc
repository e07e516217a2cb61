// Op family: loss (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_loss_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
