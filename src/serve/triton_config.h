// Triton's model configuration (config.pbtxt, protobuf text format), read for the fields that
// mean the same here, so a Triton model repository of ONNX models serves as it is.
#pragma once

#include <filesystem>

#include "serve/model_repository.h"

namespace onnxkit::serve {

// Reads `file` over `defaults`: max_batch_size; dynamic_batching's preferred_batch_size,
// max_queue_delay_microseconds and default_queue_policy.max_queue_size; instance_group counts
// (summed: the batches that may run at once). Other fields (name, platform, input, output,
// ...) are skipped. Throws Error naming the file, and the line and column of a syntax error;
// sequence batching and ensembles are refused.
ModelConfig read_triton_config(const std::filesystem::path& file, ModelConfig defaults);

}  // namespace onnxkit::serve
