// hvd::Status <-> grpc::Status, and the metadata keys that carry secrets.
#pragma once

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace hvd::rendezvous {

inline constexpr char kJobTokenMetadata[] = "hvd-job-token";
inline constexpr char kAdminTokenMetadata[] = "hvd-admin-token";

grpc::Status ToGrpcStatus(const Status& status);
// `where` names the server for the message ("rendezvous 127.0.0.1:4000").
Status FromGrpcStatus(const grpc::Status& status, const std::string& where);

}  // namespace hvd::rendezvous
