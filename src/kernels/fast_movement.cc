#include "kernels/fast_kernel_util.h"
namespace onnxkit {
void register_fast_movement_kernels(OpRegistry&) {}
}  // namespace onnxkit
