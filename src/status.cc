#include "schedext/status.h"

namespace schedext {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline exceeded";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) {
    return *this;
  }
  std::string message;
  message.reserve(context.size() + 2 + message_.size());
  message.append(context).append(": ").append(message_);
  return Status(code_, std::move(message));
}

std::string Status::ToString() const {
  if (ok()) {
    return "ok";
  }
  std::string out(StatusCodeName(code_));
  out.append(": ").append(message_);
  return out;
}

}  // namespace schedext
