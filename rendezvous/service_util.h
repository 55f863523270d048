// Pieces the unary handlers and the session share: metadata, deadlines,
// proto <-> domain conversion.
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>
#include <vector>

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

// CreateJob's hosts as the table takes them.
std::vector<HostSlots> HostsFromProto(
    const google::protobuf::RepeatedPtrField<v1::HostSlots>& hosts);

void SetResultStatus(v1::OpResult* result, const Status& s);

// A session's op that the table answers at once (a join without a timeout,
// set, get, an op of no kind), run against `job_id`; nullopt for the ops
// that wait (a join with a timeout, wait, barrier), which the session
// registers with the table itself.
std::optional<v1::OpResult> RunImmediateOp(JobTable& table,
                                           const std::string& job_id,
                                           const v1::Op& op);

}  // namespace hvd::rendezvous
