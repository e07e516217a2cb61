// Errors: what every onnxkit entry point returns when it cannot do its job.
//
// Functions that can fail return Status (nothing else to return) or Result<T> (a value or
// an error). The message names what is at fault: the file, node, input or tensor, as in
// "[Conv] node 'conv_17': kernel_shape has 3 dims". Result<T>::value() on an error throws
// onnxkit::Error with that message, for callers that prefer exceptions.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace onnxkit {

// What kind of failure an error is, for callers that act on it; the message says the rest.
enum class ErrorKind {
  kFailed,  // the input, the model or a kernel is at fault: other data may fare differently
  // A bound of the run was reached (--max-tensor-bytes, --max-run-bytes,
  // --max-loop-iterations) or memory ran out: larger inputs only fare worse.
  kResourceLimit,
};

// The one exception type onnxkit throws; what() is the error message.
class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kFailed)
      : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Success, or an error message.
class Status {
 public:
  Status() = default;
  static Status error(std::string message, ErrorKind kind = ErrorKind::kFailed) {
    return Status(std::move(message), kind);
  }
  bool ok() const { return !message_.has_value(); }
  // The error message; only valid when !ok().
  const std::string& message() const { return *message_; }
  // The error's kind; only meaningful when !ok().
  ErrorKind kind() const { return kind_; }
  explicit operator bool() const { return ok(); }
  // Throws Error with the message and kind when !ok().
  void throw_if_error() const {
    if (!ok()) throw Error(*message_, kind_);
  }

 private:
  Status(std::string message, ErrorKind kind) : message_(std::move(message)), kind_(kind) {}
  std::optional<std::string> message_;
  ErrorKind kind_ = ErrorKind::kFailed;
};

// A value, or an error message.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {}  // NOLINT: must carry an error
  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }
  // The value; throws Error with the message when !ok().
  T& value() & {
    if (!ok()) std::get<Status>(state_).throw_if_error();
    return std::get<T>(state_);
  }
  T&& value() && {
    if (!ok()) std::get<Status>(state_).throw_if_error();
    return std::get<T>(std::move(state_));
  }
  // The error message; only valid when !ok().
  const std::string& error() const { return std::get<Status>(state_).message(); }
  // The error's kind; only valid when !ok().
  ErrorKind error_kind() const { return std::get<Status>(state_).kind(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace onnxkit
