// Status and Result<T>: expected failures are values, never exceptions or asserts.
// ARB_CHECK aborts with a message on a broken invariant, in every build type.
//
// A failed Status carries a code and a message. The codes are the ones an API layer needs to
// answer a client (suggested HTTP mapping in parentheses, as kube-apiserver answers):
//   kInvalidArgument     the input is malformed or breaks a rule (422 / 400)
//   kNotFound            the object referred to does not exist (404)
//   kAlreadyExists       an object with that name exists already (409)
//   kConflict            the request conflicts with the current state (409)
//   kFailedPrecondition  the state does not allow it now, e.g. a pod that is not terminating (400)
//   kResourceExhausted   a limit was reached (429; quota refusals are 403 in Kubernetes)
//   kUnavailable         try again later (503)
//   kInternal            a bug or an unexpected failure of a dependency (500)
// Status::Error(message) is kInvalidArgument: most failures in a batch tool are bad input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace arbiter {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kConflict,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kInternal,
};

// "OK", "InvalidArgument", "NotFound", ... (the names above without the k).
inline const char* StatusCodeName(StatusCode c) {
  switch (c) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message));
  }
  static Status Error(StatusCode code, std::string message) {
    return Status(code, std::move(message));
  }
  static Status InvalidArgument(std::string m) {
    return Status(StatusCode::kInvalidArgument, std::move(m));
  }
  static Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
  static Status AlreadyExists(std::string m) {
    return Status(StatusCode::kAlreadyExists, std::move(m));
  }
  static Status Conflict(std::string m) { return Status(StatusCode::kConflict, std::move(m)); }
  static Status FailedPrecondition(std::string m) {
    return Status(StatusCode::kFailedPrecondition, std::move(m));
  }
  static Status ResourceExhausted(std::string m) {
    return Status(StatusCode::kResourceExhausted, std::move(m));
  }
  static Status Unavailable(std::string m) {
    return Status(StatusCode::kUnavailable, std::move(m));
  }
  static Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

  bool ok() const { return !message_.has_value(); }
  StatusCode code() const { return ok() ? StatusCode::kOk : code_; }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  Status(StatusCode c, std::string m)
      : code_(c == StatusCode::kOk ? StatusCode::kInternal : c), message_(std::move(m)) {}
  StatusCode code_ = StatusCode::kOk;
  std::optional<std::string> message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Status error) : v_(std::move(error)) {  // NOLINT
    if (std::get<Status>(v_).ok()) {
      std::fprintf(stderr, "Result constructed from an OK Status\n");
      std::abort();
    }
  }
  static Result Error(std::string message) { return Result(Status::Error(std::move(message))); }
  static Result Error(StatusCode code, std::string message) {
    return Result(Status::Error(code, std::move(message)));
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  StatusCode code() const { return ok() ? StatusCode::kOk : std::get<Status>(v_).code(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return ok() ? kEmpty : std::get<Status>(v_).message();
  }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* expr,
                                     const std::string& msg) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s %s\n", file, line, expr, msg.c_str());
  std::abort();
}

}  // namespace arbiter

#define ARB_CHECK(cond)                                                 \
  do {                                                                  \
    if (!(cond)) ::arbiter::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)
#define ARB_CHECK_MSG(cond, msg)                                           \
  do {                                                                     \
    if (!(cond)) ::arbiter::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
