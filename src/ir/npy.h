// NumPy .npy files (format 1.0-3.0, C order, little-endian) <-> Tensor.
#pragma once

#include <filesystem>

#include "core/status.h"
#include "onnxkit/tensor.h"

namespace onnxkit {

Result<Tensor> read_npy(const std::filesystem::path& path);
// Writes numeric and bool tensors; string tensors are refused (NumPy has no UTF-8 dtype).
Status write_npy(const Tensor& tensor, const std::filesystem::path& path);

}  // namespace onnxkit
