// Random input data for models: shapes from the declared types (symbolic dims bound by
// the caller), values by dtype: floats normal(0,1), integers in [0, 10), bools 0/1.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "ir/graph.h"
#include "onnxkit/tensor.h"

namespace onnxkit {

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng);

// The concrete shape of `input`, with symbolic dims taken from `dims`. Fails naming the
// input and the dim when one is dynamic and not given; unnamed unknown dims become 1.
Shape concrete_shape(const Value& input, const std::map<std::string, int64_t>& dims);

}  // namespace onnxkit
