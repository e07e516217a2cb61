// An enum's names, written once as a table and read both ways: value -> name for messages
// and reports, name -> value for flags and environment variables.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace onnxkit {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value`, or `unknown` when the table does not list it.
template <typename E>
constexpr std::string_view enum_name(std::span<const EnumName<E>> names, E value,
                                     std::string_view unknown = "?") {
  for (const EnumName<E>& entry : names) {
    if (entry.value == value) return entry.name;
  }
  return unknown;
}

// The value named `name`, or nullopt.
template <typename E>
constexpr std::optional<E> enum_from_name(std::span<const EnumName<E>> names,
                                          std::string_view name) {
  for (const EnumName<E>& entry : names) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

}  // namespace onnxkit
