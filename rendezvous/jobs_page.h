// hvd-rendezvousd's page of its jobs, on its --metrics-port beside
// /metrics: / is one HTML page (no build step, no CDN) that asks for the
// admin token (or takes it from a link's #token=..., which no server
// sees) and then polls /api/jobs every two seconds with it (an
// Authorization: Bearer header); /api/jobs answers only to the token. It
// shows each job (fixed or elastic, ranks, epoch, members with the
// generation they joined and how they exited, keys and bytes, time left
// without a keep-alive) and the store's health: where the jobs are kept
// and whether its last write succeeded.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

const char* JobsPageHtml();

// {"store": {"kind", "healthy", "last_error"}, "jobs": [{"id", "elastic",
//  "size", "epoch", "members": [[rank, host, slot, generation, exit or
//  null]], "keys", "bytes", "expires_in_s" (null: never)}]}. Pure.
std::string JobsJson(const std::vector<JobSummary>& jobs,
                     const std::string& store, const Status& last_write);

// Whether an Authorization header presents `admin_token` as a bearer
// token (compared in constant time).
bool IsAdmin(const std::string& authorization, const std::string& admin_token);

}  // namespace hvd::rendezvous
