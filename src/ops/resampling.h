// What Resize (spatial.cc) and GridSample (grid_sample.cc) share about resampling.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/op_utils.h"

namespace onnxkit {

// Keys' cubic convolution weights of the 4 neighbours i0-1 .. i0+2 at x = i0 + ratio.
inline void cubic_coefficients(double ratio, double a, double* c) {
  const double r1 = ratio + 1;
  const double q = 1 - ratio;
  const double q1 = q + 1;
  c[0] = ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a;
  c[1] = ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1;
  c[2] = ((a + 2) * q - (a + 3)) * q * q + 1;
  c[3] = ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a;
}

// Converts an interpolated value back to the element type (integers round and saturate).
template <typename T>
T from_double(double value) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(value)) return T{0};
    const double rounded = std::round(value);
    if (rounded <= static_cast<double>(std::numeric_limits<T>::min())) {
      return std::numeric_limits<T>::min();
    }
    if (rounded >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(rounded);
  } else {
    return convert_element<T>(value);
  }
}

}  // namespace onnxkit
