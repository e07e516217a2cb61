// Op family: text (not implemented yet).
#include "ops/registry.h"

namespace onnxkit {

void register_text_ops(OpRegistry& registry) { (void)registry; }

}  // namespace onnxkit
