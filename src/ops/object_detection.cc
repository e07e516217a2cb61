// Op family: object_detection (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_object_detection_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
