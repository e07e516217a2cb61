// Op family: signal (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_signal_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
