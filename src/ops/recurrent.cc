// Op family: recurrent (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_recurrent_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
