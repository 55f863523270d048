// hvd::Status <-> grpc::Status, and the metadata keys that carry secrets.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace hvd::rendezvous {

inline constexpr char kJobTokenMetadata[] = "hvd-job-token";
inline constexpr char kAdminTokenMetadata[] = "hvd-admin-token";
// The job a Session stream belongs to.
inline constexpr char kJobIdMetadata[] = "hvd-job-id";

grpc::Status ToGrpcStatus(const Status& status);

// Process-wide settings for gRPC's runtime, applied once by every server
// and client: Debian's Abseil checks every mutex acquisition for lock-order
// cycles (a debugging aid), which costs a tenth of an RPC's CPU time.
void TuneGrpcRuntimeOnce();
// A client channel as this project's clients want one (the rendezvous
// client, the daemon's etcd client): no HTTP proxy (a worker's environment
// often has one set for downloads), messages up to 64 MiB, and gRPC's
// reconnect backoff capped at 1 s, since the callers pace their own
// retries (backoff.h) and a restarted server must be found soon. TLS when
// ca_pem is set, with a client certificate when cert_pem is.
std::shared_ptr<grpc::Channel> NewClientChannel(const std::string& address,
                                                const std::string& ca_pem,
                                                const std::string& cert_pem,
                                                const std::string& key_pem);
// `where` names the server for the message ("rendezvous 127.0.0.1:4000").
Status FromGrpcStatus(const grpc::Status& status, const std::string& where);

}  // namespace hvd::rendezvous
