// Status and Result: errors as values (see docs/architecture.md, "errors are values").
//
// Every module boundary returns a Status or a Result<T> instead of throwing. A Status
// carries a code from a small fixed set and a message written for the user: what went
// wrong, where (file:line:col or key path), and what to do. The CLI maps codes to exit
// codes (cli/exit_codes.h). Status is a value type and thread-compatible. Both types are
// [[nodiscard]]: an ignored error is a compile error (-Werror) unless ignore_error() says so.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace scion {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad command-line usage
  kSpecError,        // a spec or data file is invalid
  kNotFound,         // a named model, dataset, run or file does not exist
  kAlreadyExists,
  kIoError,          // the file system failed (disk full, permission, ...)
  kCorruption,       // stored bytes do not match their digest or format
  kBusy,             // the store is locked by another process for too long
  kVersionMismatch,  // the store was written by a newer scion
  kCancelled,        // the user interrupted the work (Ctrl-C)
  kOutOfMemory,      // an allocation failed, or planned work needs more memory than there is
  kDiverged,         // training produced a non-finite loss or parameter
  kUnavailable,      // a device, plugin or peer process the work needs is not there
  kInternal,         // a bug in scion
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Says that a failure here is deliberately not acted on (best-effort cleanup after an
  // earlier error); the call site's comment says why. Status is [[nodiscard]] otherwise.
  void ignore_error() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status spec_error(std::string m) { return {StatusCode::kSpecError, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Result<T>: either a value or a non-ok Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(data_).is_ok() && "Result needs a value or an error");
  }

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return is_ok(); }

  // REQUIRES: is_ok()
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // REQUIRES: !is_ok()
  const Status& status() const { return std::get<Status>(data_); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace scion

// Propagate a non-ok Status from an expression returning Status.
#define SCION_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::scion::Status scion_status_ = (expr);    \
    if (!scion_status_.is_ok()) return scion_status_; \
  } while (0)
