// The rendezvous of one job, as the launcher sees it: embedded in this
// process (the default) or a job registered with a running hvd-rendezvousd.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cli.h"
#include "launcher/plan.h"
#include "rendezvous/members.h"

namespace hvd::launcher {

class JobRendezvous {
 public:
  virtual ~JobRendezvous() = default;
  // What every worker needs to join (address, job id, token, TLS).
  virtual const JobAccess& access() const = 0;
  // Ranks joined so far; empty when it cannot be told.
  virtual std::vector<int> JoinedRanks() = 0;
  // Records a worker's exit status for the members list
  // (rendezvous/members.h); best effort.
  virtual void RecordExit(const std::string& host, int slot,
                          int exit_status) = 0;
  // The job's members now; empty when they cannot be told.
  virtual std::vector<rendezvous::Member> Members() = 0;
  // The same without blocking the caller: `done` gets them, at once from
  // this process's table, on a client thread from a daemon's. It must not
  // block, and may run after this object is gone (a daemon call in
  // flight), so it should hold only what it owns.
  virtual void MembersAsync(
      std::function<void(std::vector<rendezvous::Member>)> done) {
    done(Members());
  }
  // The job's key/value store, as its workers see it.
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  virtual StatusOr<std::string> Get(const std::string& key) = 0;
  // Until every key is set (their values, in order) or `timeout`.
  virtual StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) = 0;
  // Ends the job (frees it on a daemon; stops the embedded server).
  virtual void End(const std::string& reason) = 0;
  // The workers' latest metrics reports (rendezvous::kMetricsKeyPrefix);
  // empty when none reported or the rendezvous is a daemon's.
  virtual std::vector<std::string> MetricsReports() = 0;
  // The workers' latest arrivals reports (rendezvous::kArrivalsKeyPrefix,
  // launcher/stragglers.h); empty as MetricsReports.
  virtual std::vector<std::string> ArrivalReports() = 0;
  // An elastic job's next membership (rendezvous::JobTable::SetMembership).
  virtual Status SetMembership(std::vector<rendezvous::HostSlots> hosts,
                               int size) = 0;
};

// Serves the job from this process: on loopback when every host is local,
// on every address otherwise (only the job's token opens it).
StatusOr<std::unique_ptr<JobRendezvous>> StartEmbeddedRendezvous(
    const LaunchPlan& plan);

// An elastic job served from this process, with no members yet (they come
// with SetMembership). `loopback`: listen on 127.0.0.1 only.
StatusOr<std::unique_ptr<JobRendezvous>> StartElasticRendezvous(bool loopback);

// The port a worker must use; for the embedded server, its own.
int RendezvousPort(const JobAccess& access);

// Registers the job with the daemon in `options` and keeps it alive until
// End. Errors say whether the daemon was unreachable or refused the token.
StatusOr<std::unique_ptr<JobRendezvous>> ConnectRendezvousDaemon(
    const LaunchPlan& plan, const LaunchOptions& options);

// The same for an elastic job: registered with no members, which come with
// SetMembership as the launcher's driver decides them.
StatusOr<std::unique_ptr<JobRendezvous>> ConnectElasticRendezvousDaemon(
    const LaunchOptions& options);

}  // namespace hvd::launcher
