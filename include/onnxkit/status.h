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

// The one exception type onnxkit throws; what() is the error message.
class Error : public std::runtime_error {
 public:
  explicit Error(std::string message) : std::runtime_error(std::move(message)) {}
};

// Success, or an error message.
class Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !message_.has_value(); }
  // The error message; only valid when !ok().
  const std::string& message() const { return *message_; }
  explicit operator bool() const { return ok(); }
  // Throws Error with the message when !ok().
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
  // The value; throws Error with the message when !ok().
  T& value() & {
    if (!ok()) throw Error(error());
    return std::get<T>(state_);
  }
  T&& value() && {
    if (!ok()) throw Error(error());
    return std::get<T>(std::move(state_));
  }
  // The error message; only valid when !ok().
  const std::string& error() const { return std::get<Status>(state_).message(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace onnxkit
