// Float to integer as Cast converts, for every kernel that computes an integer output in
// double (Cast, Shrink): defined for any double.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace onnxkit {

// Truncation; NaN and values outside int64 become int64's minimum (as x86's cvttsd2si
// does), then wrap into narrower types like any int64; uint64 keeps [2^63, 2^64).
template <typename To>
To float_to_integer(double value) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (value >= kTwo63 && value < 2 * kTwo63) {
      return static_cast<uint64_t>(value - kTwo63) + (uint64_t{1} << 63);
    }
  }
  if (std::isnan(value) || value < -kTwo63 || value >= kTwo63) {
    return static_cast<To>(std::numeric_limits<int64_t>::min());
  }
  return static_cast<To>(static_cast<int64_t>(value));
}

}  // namespace onnxkit
