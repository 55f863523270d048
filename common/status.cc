#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace hvd {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kUnknown:
      return "unknown";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kDeadlineExceeded:
      return "deadline exceeded";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kAlreadyExists:
      return "already exists";
    case StatusCode::kPermissionDenied:
      return "permission denied";
    case StatusCode::kResourceExhausted:
      return "resource exhausted";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kAborted:
      return "aborted";
    case StatusCode::kOutOfRange:
      return "out of range";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDataLoss:
      return "data loss";
    case StatusCode::kUnauthenticated:
      return "unauthenticated";
  }
  return "unknown";
}

const std::string& Status::NoMessage() {
  static const std::string* const kNone = new std::string();
  return *kNone;
}

std::string Status::Join(std::string_view context, std::string_view detail) {
  std::string out(context);
  if (!context.empty() && !detail.empty()) out += ": ";
  out += detail;
  return out;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(error_->code));
  out += ": ";
  out += error_->message;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(error_->code, Join(context, error_->message));
}

void DieOnBadStatusOrAccess(const Status& status) {
  std::fprintf(stderr, "hvd: value() of a StatusOr holding an error: %s\n",
               status.ToString().c_str());
  std::abort();
}

}  // namespace hvd
