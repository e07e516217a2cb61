// Comparing computed values with expected ones, as the ONNX backend tests do:
// |actual - expected| <= atol + rtol * |expected| for floats (NaN equals NaN, infinities
// must match), exact for integers, bools and strings, element by element for sequences.
#pragma once

#include <string>

#include "ir/runtime_value.h"

namespace onnxkit {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

struct Comparison {
  bool ok = true;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::string message;  // why it failed: shape, dtype, or the worst element
};

Comparison compare_values(const RuntimeValue& actual, const RuntimeValue& expected,
                          const Tolerance& tolerance = {});
Comparison compare_tensors(const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance = {});

}  // namespace onnxkit
