// The server side of the Session stream (see rendezvous.proto).
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "proto/rendezvous.grpc.pb.h"
#include "rendezvous/expirer.h"
#include "rendezvous/job_table.h"
#include "rendezvous/server_stats.h"

namespace hvd::rendezvous {

// A reactor for one session of job `job_id`; it ends the stream at once
// with `auth` when that is not OK. Deletes itself when done.
grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>*
NewSessionReactor(JobTable* table, Expirer* expirer, ServerStats* stats,
                  std::string job_id, const Status& auth);

}  // namespace hvd::rendezvous
