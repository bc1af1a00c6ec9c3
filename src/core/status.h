// Status and Result<T>: expected failures are values, never exceptions or asserts.
// ARB_CHECK aborts with a message on a broken invariant, in every build type.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace arbiter {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string m) : message_(std::move(m)) {}
  std::optional<std::string> message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status error) : v_(std::move(error)) {  // NOLINT
    if (std::get<Status>(v_).ok()) {
      std::fprintf(stderr, "Result constructed from an OK Status\n");
      std::abort();
    }
  }
  static Result Error(std::string message) { return Result(Status::Error(std::move(message))); }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
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

#define ARB_CHECK(cond)                                                   \
  do {                                                                    \
    if (!(cond)) ::arbiter::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)
#define ARB_CHECK_MSG(cond, msg)                                           \
  do {                                                                     \
    if (!(cond)) ::arbiter::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)
