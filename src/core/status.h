// Errors and results at module boundaries.
//
// Inside a module, code throws onnxkit::Error (cheap to write, carries the full
// message). Public entry points return Status / Result<T> so that callers decide
// how to report; `capture` converts one into the other.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace onnxkit {

// The one exception type onnxkit throws. The message names what is at fault:
// the file, node or tensor, as in "[Conv] node 'conv_17': kernel_shape has 3 dims".
class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(std::move(message)) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Success, or an error message.
class Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !message_.has_value(); }
  const std::string& message() const { return *message_; }
  explicit operator bool() const { return ok(); }
  // Rethrows the error inside a module that uses exceptions.
  void throw_if_error() const {
    if (!ok()) throw Error(*message_);
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// A value, or an error message.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {}  // NOLINT: must carry an error
  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  T& value() & {
    if (!ok()) throw Error(error());
    return std::get<T>(state_);
  }
  T&& value() && {
    if (!ok()) throw Error(error());
    return std::get<T>(std::move(state_));
  }
  const std::string& error() const { return std::get<Status>(state_).message(); }

 private:
  std::variant<T, Status> state_;
};

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
    return Status::error(e.what());
  } catch (const std::bad_alloc&) {
    return Status::error("out of memory");
  } catch (const std::exception& e) {
    return Status::error(std::string("internal error: ") + e.what());
  }
}

}  // namespace onnxkit
