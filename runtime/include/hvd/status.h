// Status and StatusOr: the one error idiom of hvd, in libhvd's public API
// and throughout the project (common/status.h includes this header).
//
// Every fallible function at a module boundary returns Status or StatusOr<T>;
// no exception crosses a module or thread boundary. Messages are written in
// two parts, context then detail, and say what to change:
//   Status::InvalidArgument("-np", "must be at least 1 (got 0)")
//   -> "invalid argument: -np: must be at least 1 (got 0)"
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace hvd {

enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// The codes mirror gRPC's on purpose, so the service maps them one to one.
std::string_view StatusCodeName(StatusCode code);

// An OK status is a null pointer (as LevelDB's): made, copied, moved and
// dropped with no string, since every call returns one and most are OK
// (a 4-byte allreduce handles about ten). An error holds its code and
// message.
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // kOk with a message is OK: the message is dropped.
  Status(StatusCode code, std::string message)
      : error_(code == StatusCode::kOk
                   ? nullptr
                   : std::make_unique<Error>(Error{code, std::move(message)})) {
  }
  Status(const Status& other)
      : error_(other.error_ ? std::make_unique<Error>(*other.error_)
                            : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) {
      error_ = other.error_ ? std::make_unique<Error>(*other.error_) : nullptr;
    }
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
#define HVD_STATUS_FACTORY(Name)                                          \
  static Status Name(std::string_view context, std::string_view detail) { \
    return Status(StatusCode::k##Name, Join(context, detail));            \
  }                                                                       \
  static Status Name(std::string_view message) {                          \
    return Status(StatusCode::k##Name, std::string(message));             \
  }
  HVD_STATUS_FACTORY(Cancelled)
  HVD_STATUS_FACTORY(Unknown)
  HVD_STATUS_FACTORY(InvalidArgument)
  HVD_STATUS_FACTORY(DeadlineExceeded)
  HVD_STATUS_FACTORY(NotFound)
  HVD_STATUS_FACTORY(AlreadyExists)
  HVD_STATUS_FACTORY(PermissionDenied)
  HVD_STATUS_FACTORY(ResourceExhausted)
  HVD_STATUS_FACTORY(FailedPrecondition)
  HVD_STATUS_FACTORY(Aborted)
  HVD_STATUS_FACTORY(OutOfRange)
  HVD_STATUS_FACTORY(Unimplemented)
  HVD_STATUS_FACTORY(Internal)
  HVD_STATUS_FACTORY(Unavailable)
  HVD_STATUS_FACTORY(DataLoss)
  HVD_STATUS_FACTORY(Unauthenticated)
#undef HVD_STATUS_FACTORY

  bool ok() const { return error_ == nullptr; }
  StatusCode code() const { return error_ ? error_->code : StatusCode::kOk; }
  // "" when OK.
  const std::string& message() const {
    return error_ ? error_->message : NoMessage();
  }

  // "invalid argument: -np: must be at least 1", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "context: <message>"; keeps the code.
  Status WithContext(std::string_view context) const;

  // Keeps the first error; for code that tries several things.
  void Update(const Status& other) {
    if (ok() && !other.ok()) *this = other;
  }

  // Spelled out rather than defaulted: the public headers are C++17.
  bool operator==(const Status& other) const {
    return code() == other.code() && message() == other.message();
  }
  bool operator!=(const Status& other) const { return !(*this == other); }

 private:
  static std::string Join(std::string_view context, std::string_view detail);
  static const std::string& NoMessage();

  struct Error {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Error> error_;  // null: OK
};

// Holds a T or an error. Accessing value() of an error aborts: callers check
// ok() first, as with absl::StatusOr. Copyable when T is.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Internal("StatusOr built from OK");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    CheckOk();
    return *value_;
  }
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckOk() const;

  Status status_;
  std::optional<T> value_;
};

[[noreturn]] void DieOnBadStatusOrAccess(const Status& status);

template <typename T>
void StatusOr<T>::CheckOk() const {
  if (!status_.ok()) DieOnBadStatusOrAccess(status_);
}

}  // namespace hvd

// Conveniences for code that returns Status too.
// Returns early from the enclosing function when `expr` is not OK.
#define HVD_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::hvd::Status hvd_status_ = (expr);        \
    if (!hvd_status_.ok()) return hvd_status_; \
  } while (0)

#define HVD_CONCAT_INNER_(a, b) a##b
#define HVD_CONCAT_(a, b) HVD_CONCAT_INNER_(a, b)
#define HVD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
// `HVD_ASSIGN_OR_RETURN(auto x, MaybeX());`
#define HVD_ASSIGN_OR_RETURN(lhs, expr) \
  HVD_ASSIGN_OR_RETURN_IMPL_(HVD_CONCAT_(hvd_statusor_, __LINE__), lhs, expr)
