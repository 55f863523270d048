#include "rendezvous/grpc_status.h"

#include <absl/synchronization/mutex.h>

#include <mutex>

namespace hvd::rendezvous {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      status.message());
}

void TuneGrpcRuntimeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  });
}

Status FromGrpcStatus(const grpc::Status& status, const std::string& where) {
  if (status.ok()) return Status::Ok();
  std::string message = status.error_message();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    message = "cannot reach the rendezvous server (" + message +
              "); check that it runs and that the address is reachable";
  }
  return Status(static_cast<StatusCode>(status.error_code()),
                where + ": " + message);
}

}  // namespace hvd::rendezvous
