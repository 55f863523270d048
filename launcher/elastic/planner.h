// The decisions of an elastic job's driver, as pure logic: which hosts the
// job runs on, which workers to start and stop, when to give up. The
// driver feeds it discovery (through the HostManager) and worker exits,
// and carries out what Tick() returns; time is passed in.
//
// Rules (Horovod's):
//  - The job runs on the host manager's current hosts, in their order, up
//    to max_np slots (the last host may run fewer than its slots).
//  - With fewer than min_np slots it waits, up to elastic_timeout, then
//    ends with a line that says so.
//  - A worker that fails gets its host blacklisted; the job goes on
//    without the host (its other workers are stopped) from the next Tick.
//  - When no running worker is left on a host in good standing (every
//    worker failed, or every host it ran on is blacklisted), the job ends
//    at once: nobody holds its state to go on from, whatever hosts
//    discovery or a cooldown may offer later.
//  - Every change of membership after the first is a reset; more than
//    reset_limit of them (when set) end the job.
//  - Once a worker has finished successfully the job is finishing: no more
//    changes, a later failure ends it, and it is done when no worker runs.
//    Workers the driver abandons (started for a reset that will not come
//    now) are stopped, and their ends do not count.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/elastic/host_manager.h"

namespace hvd::launcher::elastic {

struct ElasticOptions {
  int min_np = 1;
  int max_np = 0;  // 0: no maximum
  // The first membership waits for this many slots (-np; Horovod starts
  // with -np and may shrink to --min-np later). 0: min_np.
  int start_np = 0;
  std::chrono::seconds elastic_timeout{600};
  int reset_limit = 0;  // 0: no limit
};

// A worker's place: a slot of a host.
struct Slot {
  std::string host;
  int slot = 0;
  auto operator<=>(const Slot&) const = default;
};

struct Actions {
  // Non-empty: the job's new membership (hosts in order, and its size), to
  // set before the workers in `start` are started.
  std::vector<HostSpec> membership;
  int size = 0;
  std::vector<Slot> stop;   // stop these workers first
  std::vector<Slot> start;  // then start these
  // The job ends: with this line and status 1, or (done) with status 0.
  std::optional<std::string> failure;
  bool done = false;
};

class ElasticPlanner {
 public:
  ElasticPlanner(ElasticOptions options, HostManager* hosts);

  // A worker ended: status 0 is success; anything else blacklists its host.
  // The end of a worker the plan already stopped is ignored.
  void WorkerExited(const Slot& slot, int status, Clock::time_point now);

  // Stops these running workers at the next Tick, their ends ignored (the
  // driver's call, for workers waiting on a generation that cannot form).
  void Abandon(const std::vector<Slot>& slots);

  // What to do now (call after each discovery answer and worker exit).
  Actions Tick(Clock::time_point now);

  int resets() const { return resets_; }
  bool finishing() const { return finishing_; }
  const std::vector<HostSpec>& membership() const { return membership_; }
  const std::set<Slot>& running() const { return running_; }

 private:
  // The host manager's hosts at `now`, cut at max_np slots.
  std::vector<HostSpec> Desired(Clock::time_point now) const;

  ElasticOptions options_;
  HostManager* hosts_;
  std::vector<HostSpec> membership_;  // applied
  std::set<Slot> running_;
  std::vector<Slot> abandoned_;  // to stop at the next Tick
  bool started_ = false;
  bool finishing_ = false;  // a worker finished successfully
  std::optional<std::string> failed_;
  int resets_ = 0;
  std::optional<Clock::time_point> short_since_;  // below min_np since
};

}  // namespace hvd::launcher::elastic
