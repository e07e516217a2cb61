// The one list of op families and optimized kernels. Adding a family: write
// src/ops/<family>.cc with its register_<family>_ops, declare it here and call it below;
// adding an optimized kernel file: its register_<name>_kernels, likewise (tract's way:
// explicit, no self-registering statics that a static link could drop).
#include "registry/builtin_registry.h"

namespace onnxkit {

void register_activation_ops(OpRegistry& registry);
void register_cast_ops(OpRegistry& registry);
void register_control_flow_ops(OpRegistry& registry);
void register_conv_ops(OpRegistry& registry);
void register_elementwise_binary_ops(OpRegistry& registry);
void register_elementwise_unary_ops(OpRegistry& registry);
void register_image_ops(OpRegistry& registry);
void register_indexing_ops(OpRegistry& registry);
void register_linalg_ops(OpRegistry& registry);
void register_loss_ops(OpRegistry& registry);
void register_ml_ops(OpRegistry& registry);
void register_ml_classic_ops(OpRegistry& registry);
void register_normalization_ops(OpRegistry& registry);
void register_object_detection_ops(OpRegistry& registry);
void register_pool_ops(OpRegistry& registry);
void register_quantization_ops(OpRegistry& registry);
void register_quantization_microsoft_ops(OpRegistry& registry);
void register_random_ops(OpRegistry& registry);
void register_recurrent_ops(OpRegistry& registry);
void register_reduce_ops(OpRegistry& registry);
void register_sequence_ops(OpRegistry& registry);
void register_shape_ops(OpRegistry& registry);
void register_generator_ops(OpRegistry& registry);
void register_signal_ops(OpRegistry& registry);
void register_softmax_ops(OpRegistry& registry);
void register_spatial_ops(OpRegistry& registry);
void register_grid_sample_ops(OpRegistry& registry);
void register_text_ops(OpRegistry& registry);
void register_training_ops(OpRegistry& registry);
void register_transformer_ops(OpRegistry& registry);
void register_transformer_microsoft_ops(OpRegistry& registry);
// onnxkit's fused ops (ops/fused_ops.h), reference kernels.
void register_fused_linear_ops(OpRegistry& registry);
void register_fused_transformer_ops(OpRegistry& registry);
// Optimized kernels (src/kernels/), registered beside the reference ones.
void register_dnnl_matmul_kernels(OpRegistry& registry);
void register_attention_kernels(OpRegistry& registry);
void register_fast_cpu_kernels(OpRegistry& registry);
void register_dnnl_conv_kernels(OpRegistry& registry);
void register_dnnl_int8_kernels(OpRegistry& registry);
void register_fast_recurrent_kernels(OpRegistry& registry);
void register_blocked_ops(OpRegistry& registry);
void register_transformer_microsoft_kernels(OpRegistry& registry);

void register_builtin_ops(OpRegistry& registry) {
  register_activation_ops(registry);
  register_cast_ops(registry);
  register_control_flow_ops(registry);
  register_conv_ops(registry);
  register_elementwise_binary_ops(registry);
  register_elementwise_unary_ops(registry);
  register_image_ops(registry);
  register_indexing_ops(registry);
  register_linalg_ops(registry);
  register_loss_ops(registry);
  register_ml_ops(registry);
  register_ml_classic_ops(registry);
  register_normalization_ops(registry);
  register_object_detection_ops(registry);
  register_pool_ops(registry);
  register_quantization_ops(registry);
  register_quantization_microsoft_ops(registry);
  register_random_ops(registry);
  register_recurrent_ops(registry);
  register_reduce_ops(registry);
  register_sequence_ops(registry);
  register_shape_ops(registry);
  register_generator_ops(registry);
  register_signal_ops(registry);
  register_softmax_ops(registry);
  register_spatial_ops(registry);
  register_grid_sample_ops(registry);
  register_text_ops(registry);
  register_training_ops(registry);
  register_transformer_ops(registry);
  register_transformer_microsoft_ops(registry);
  register_fused_linear_ops(registry);
  register_fused_transformer_ops(registry);
  register_dnnl_matmul_kernels(registry);
  register_attention_kernels(registry);
  register_fast_cpu_kernels(registry);
  register_dnnl_conv_kernels(registry);
  register_dnnl_int8_kernels(registry);
  register_fast_recurrent_kernels(registry);
  register_blocked_ops(registry);
  register_transformer_microsoft_kernels(registry);
}

const OpRegistry& builtin_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_builtin_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace onnxkit
