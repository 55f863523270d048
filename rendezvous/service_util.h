// Pieces the unary handlers and the session share: metadata, deadlines,
// proto <-> domain conversion.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "common/status.h"
#include "proto/rendezvous.pb.h"
#include "rendezvous/assignment.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

// The value of a request metadata key, or "" when absent.
std::string Metadata(const grpc::CallbackServerContext* ctx, const char* key);

// A server-side wait deadline from a request's timeout_ms, which must be in
// (0, one day].
StatusOr<Clock::time_point> DeadlineFrom(int64_t timeout_ms);

void AssignmentToProto(const Assignment& a, v1::Assignment* out);
Assignment AssignmentFromProto(const v1::Assignment& a);

}  // namespace hvd::rendezvous
