// Comparing computed values with expected ones, as the ONNX backend tests do:
// |actual - expected| <= atol + rtol * |expected| for floats (NaN equals NaN, infinities
// must match), exact for integers, bools and strings, element by element for sequences.
#pragma once

#include <string>

#include "onnxkit/runtime_value.h"

namespace onnxkit {

struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
  // Also scale rtol by the output's mean magnitude: |a - e| <= atol + rtol * (|e| + mean|e|).
  // Float32 rounding grows with the size of the values an output is computed from, so an
  // element near zero in an output of large values carries an error in proportion to those
  // (e.g. after Conv+BN folding); the plain rule would call that a mismatch.
  bool scale_by_mean = false;
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
