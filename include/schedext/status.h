// Status and StatusOr<T>: recoverable errors as values, at every module boundary.
//
// A Status is either OK (no message, no allocation) or a code plus a lowercase,
// context-first message ("decode ExtenderArgs: /Pod/spec: expected an object").
// Nothing in schedext throws on purpose; library exceptions stop at the adapter
// that calls the library. Thread-safety: plain values, no shared state.
#ifndef SCHEDEXT_STATUS_H_
#define SCHEDEXT_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace schedext {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kFailedPrecondition,
  kUnavailable,
  kDeadlineExceeded,
  kInternal,
};

// "ok", "invalid argument", ... for logs and messages.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

  // "invalid argument: <message>", or "ok".
  std::string ToString() const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// Either a value or a non-OK Status. Accessing value() of an error is a bug (asserted).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : rep_(status) { assert(!status.ok()); }  // NOLINT
  StatusOr(Status&& status) : rep_(std::move(status)) {                   // NOLINT
    assert(!std::get<Status>(rep_).ok());
  }
  StatusOr(const T& value) : rep_(value) {}       // NOLINT
  StatusOr(T&& value) : rep_(std::move(value)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(rep_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(rep_); }

  const T& value() const& {
    assert(ok());
    return std::get<T>(rep_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(rep_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(rep_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<Status, T> rep_;
};

}  // namespace schedext

#define SCHEDEXT_STATUS_CONCAT_INNER_(a, b) a##b
#define SCHEDEXT_STATUS_CONCAT_(a, b) SCHEDEXT_STATUS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define SCHEDEXT_RETURN_IF_ERROR(expr)                  \
  do {                                                  \
    ::schedext::Status schedext_status_ = (expr);       \
    if (!schedext_status_.ok()) return schedext_status_; \
  } while (false)

// `lhs = value of expr`, or returns its Status. `lhs` may declare a variable.
#define SCHEDEXT_ASSIGN_OR_RETURN(lhs, expr)                                       \
  auto SCHEDEXT_STATUS_CONCAT_(schedext_statusor_, __LINE__) = (expr);             \
  if (!SCHEDEXT_STATUS_CONCAT_(schedext_statusor_, __LINE__).ok())                 \
    return SCHEDEXT_STATUS_CONCAT_(schedext_statusor_, __LINE__).status();         \
  lhs = std::move(SCHEDEXT_STATUS_CONCAT_(schedext_statusor_, __LINE__)).value()

#endif  // SCHEDEXT_STATUS_H_
