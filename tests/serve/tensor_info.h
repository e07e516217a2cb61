// A tensor's ValueInfo for the serve tests' models.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "onnxkit/value_info.h"

namespace onnxkit::serve {

inline ValueInfo tensor_info(std::string name, DType dtype, std::vector<Dim> dims) {
  ValueInfo info;
  info.name = std::move(name);
  info.is_tensor = true;
  info.dtype = dtype;
  info.shape = std::move(dims);
  return info;
}

}  // namespace onnxkit::serve
