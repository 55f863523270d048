// The driver of an elastic job: the supervisor's WorkerDriver. It polls
// host discovery on a thread of its own (once a second, so a slow script
// never holds up the workers' output), feeds the answers and the workers'
// exits to the HostManager and the ElasticPlanner, and carries out their
// decisions: a new membership goes to the rendezvous before the workers
// it adds are started, so a survivor that re-joins finds it there.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "launcher/elastic/discovery.h"
#include "launcher/elastic/host_manager.h"
#include "launcher/elastic/planner.h"
#include "launcher/supervisor.h"
#include "rendezvous/assignment.h"
#include "rendezvous/members.h"

namespace hvd::launcher::elastic {

// Where the hosts come from: the discovery script (polled) or a fixed list
// (-H, --hostfile).
class HostSource {
 public:
  virtual ~HostSource() = default;
  // The newest answer not yet taken; nullopt when there is none.
  virtual std::optional<std::vector<HostSpec>> Take() = 0;
};

// A fixed list, answered once.
std::unique_ptr<HostSource> FixedHosts(std::vector<HostSpec> hosts);

// Runs `discovery` every `period` on a thread until destroyed. A host that
// `usable` refuses (a remote host SSH cannot reach) is left out of that
// answer. Failures are logged once each, and the last good answer stands.
std::unique_ptr<HostSource> PolledHosts(
    HostDiscovery discovery, std::chrono::milliseconds period,
    std::function<Status(const HostSpec&)> usable);

struct ElasticDriverHooks {
  // The job's next membership, set in the rendezvous.
  std::function<Status(std::vector<rendezvous::HostSlots> hosts, int size)>
      set_membership;
  // A key of the job's store (the host updates workers listen for).
  std::function<Status(const std::string& key, const std::string& value)>
      set_key;
  // The job's members as the rendezvous last told them (empty: cannot
  // tell); must not block.
  std::function<std::vector<rendezvous::Member>()> members;
  // GPUs of a host, for its assignment (0 for remote hosts).
  std::function<int(const HostSpec& host)> gpus;
  // The process that runs the worker of `slot` on `host`.
  std::function<StatusOr<ProcessSpec>(const HostSpec& host, int slot,
                                      const rendezvous::Assignment& a)>
      make_spec;
};

// Besides carrying out the planner's decisions, the driver
//  - tells the workers of each change of hosts that discovery (or a
//    cooldown's end) brought, as Horovod's driver notifies them
//    (rendezvous/host_updates.h); a host removed because its worker failed
//    is not announced: the survivors reset on the failure itself;
//  - learns which workers have trained in a generation that formed, and
//    when a worker finishes, abandons those that never did: they were
//    started for a reset the finished ones will not make, so the job ends
//    with success rather than waiting on them.
class ElasticDriver final : public WorkerDriver {
 public:
  ElasticDriver(ElasticOptions options, HostManagerOptions host_options,
                std::unique_ptr<HostSource> source, ElasticDriverHooks hooks,
                bool verbose);

  Step Tick() override;
  void Exited(const std::string& host, int slot, int exit_code) override;

  int resets() const { return planner_.resets(); }

 private:
  // Announces the change from `before` to the new membership `after`.
  void AnnounceHostUpdate(const std::vector<HostSpec>& before,
                          const std::vector<HostSpec>& after,
                          Clock::time_point now);
  enum class Formation { kUnknown, kNotFormed, kFormed };
  // Asks the rendezvous whether the current generation formed (every
  // member joined it); if so its workers are proven. kUnknown while no
  // answer about the newest membership has come (the daemon is away).
  Formation CheckFormed();
  // A worker finished: abandons the running ones never proven, when the
  // finished one was. Decided once the rendezvous answers about the
  // newest membership: until then a new worker may have joined it unseen.
  void AbandonUnproven(const Slot& finished);

  HostManager hosts_;
  ElasticPlanner planner_;
  std::unique_ptr<HostSource> source_;
  ElasticDriverHooks hooks_;
  bool verbose_;
  int memberships_ = 0;
  std::vector<HostSpec> applied_;  // the membership set last
  int host_updates_ = 0;           // announced so far
  // Workers seen in a formed generation, and whether the newest membership
  // is still to be seen formed (polled until it is).
  std::set<Slot> proven_;
  bool awaiting_formation_ = false;
  std::optional<Slot> finish_to_judge_;  // AbandonUnproven's, deferred
  Clock::time_point last_formation_check_{};
};

}  // namespace hvd::launcher::elastic
