// Op family: training (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_training_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
