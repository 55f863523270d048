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

std::shared_ptr<grpc::Channel> NewClientChannel(const std::string& address,
                                                const std::string& ca_pem,
                                                const std::string& cert_pem,
                                                const std::string& key_pem) {
  TuneGrpcRuntimeOnce();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::ChannelCredentials> creds =
      grpc::InsecureChannelCredentials();
  if (!ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ca_pem;
    ssl.pem_cert_chain = cert_pem;
    ssl.pem_private_key = key_pem;
    creds = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

}  // namespace hvd::rendezvous
