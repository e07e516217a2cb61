// Op family: quantization (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_quantization_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
