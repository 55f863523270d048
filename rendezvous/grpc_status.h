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
// `where` names the server for the message ("rendezvous 127.0.0.1:4000").
Status FromGrpcStatus(const grpc::Status& status, const std::string& where);

}  // namespace hvd::rendezvous
