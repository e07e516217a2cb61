// How modules raise and return errors (the types are public: onnxkit/status.h).
//
// Inside a module, code throws onnxkit::Error (cheap to write, carries the full
// message). Public entry points return Status / Result<T> so that callers decide
// how to report; `capture` converts one into the other.
#pragma once

#include <fmt/format.h>

#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "onnxkit/status.h"

namespace onnxkit {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// fail() for a bound of the run reached (ErrorKind::kResourceLimit).
template <typename... Args>
[[noreturn]] void fail_resource_limit(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...), ErrorKind::kResourceLimit);
}

// Runs `body`, turning an onnxkit::Error (or a standard exception) into a Status.
template <typename Body>
auto capture(Body&& body)
    -> std::conditional_t<std::is_void_v<decltype(body())>, Status, Result<decltype(body())>> {
  using R = decltype(body());
  try {
    if constexpr (std::is_void_v<R>) {
      body();
      return Status();
    } else {
      return body();
    }
  } catch (const Error& e) {
    return Status::error(e.what(), e.kind());
  } catch (const std::bad_alloc&) {
    return Status::error("out of memory", ErrorKind::kResourceLimit);
  } catch (const std::exception& e) {
    return Status::error(std::string("internal error: ") + e.what());
  }
}

}  // namespace onnxkit
