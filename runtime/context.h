// One process's membership in a job: its assignment, its rendezvous client
// and its backend. hvd::init() owns one; tests create several in threads.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "rendezvous/assignment.h"
#include "runtime/backend.h"
#include "runtime/backend_set.h"
#include "runtime/control_plane.h"
#include "runtime/engine/engine.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_options.h"
#include "runtime/transport/topology.h"
#include "runtime/worker_config.h"

namespace hvd::rendezvous {
class RendezvousClient;
}

namespace hvd::runtime {

class FlightResponder;
class MetricsPublisher;
class Timeline;

class Context {
 public:
  // Joins (when launched) and connects the backend. Blocks up to the start
  // timeout for the other ranks. A process that was in the job before (an
  // init() after a shutdown()) passes the generation it left: the new one's
  // keys, segments and connections are its own (assignment().generation).
  // In an elastic job whose membership moves on while this rank meets its
  // peers, it joins the newer generation instead (Store::Current).
  static StatusOr<std::unique_ptr<Context>> Create(const WorkerConfig& config,
                                                   int previous_generation = 0);
  ~Context();

  // A process set: the ranks `ranks` (sorted, unique, of this job, this
  // rank among them) as a job of their own, with its own engine and
  // transports, numbered 0.. in the order of `ranks`. Every member calls it
  // with the same `id` (never reused in a generation); it blocks until all
  // members have. Its keys live under ps<id>/ in this generation.
  StatusOr<std::unique_ptr<Context>> CreateProcessSet(
      int id, const std::vector<int>& ranks) const;

  const rendezvous::Assignment& assignment() const { return assignment_; }
  // The host data backend in use (tests drive it directly).
  Backend& backend() { return backends_->host(); }
  const ControlPlane& control() const { return *control_; }

  // Sum, then scale by 1/size for averages (directly on the backend).
  Status Allreduce(void* data, size_t count, DataType type, bool average);

  // Whether the job's membership moved past the generation this context
  // joined (an elastic job's launcher publishes its epoch); false for a
  // fixed job or on any error reaching the rendezvous.
  bool MembershipChanged() const;
  // The job's rendezvous client (null when not launched); shared, so a
  // caller on another thread may finish a call after shutdown().
  std::shared_ptr<rendezvous::RendezvousClient> rendezvous_client() const {
    return process_set_ ? nullptr : client_;
  }

  // The engine, started on first use. Once a program uses it, every
  // collective must go through it (the backend is not shared between
  // threads).
  Engine& engine();
  // Rank 0's timeline (recording or not) once the engine runs; null on
  // the other ranks.
  Timeline* timeline() { return timeline_.get(); }

 private:
  Context() = default;
  // A context with `config`'s settings, not yet in any job.
  static std::unique_ptr<Context> Blank(const WorkerConfig& config);
  // Joins the job (the generation after `previous_generation`, when given)
  // through a client of its own; connects nothing yet.
  static StatusOr<std::unique_ptr<Context>> Join(const WorkerConfig& config,
                                                 int previous_generation);
  // What a joined, connected rank tells its launcher beside the job
  // (launcher_reports.h): flight dumps, metrics, asks for dumps.
  void StartReports(const WorkerConfig& config);
  // The flat backend wrapped in the hierarchical one when the plan wants it
  // and every host holds the same number of ranks (else logs why not).
  StatusOr<std::unique_ptr<Backend>> MaybeHierarchical(
      const WorkerConfig& config, const TransportPlan& plan,
      std::unique_ptr<Backend> flat);
  // The negotiation over TCP: across hosts, with
  // HOROVOD_CONTROL_HOST_LEADERS and shared memory on, one leader per host
  // speaks for the host's ranks (host_control.h); else every rank in the
  // TCP plane. `job`: where
  // this rank listens, and its timeouts.
  StatusOr<std::unique_ptr<ControlPlane>> TcpControl(const WorkerConfig& config,
                                                     const TcpOptions& job);
  // Every host holds the same number (> 1) of ranks (MaybeHierarchical
  // found it so).
  bool hosts_even_ = false;
  // Picks the transports (transport/topology.h) and connects them.
  Status Connect(const WorkerConfig& config);
  // `s`, a failed wait for peers in init(), with whom it waited for: the
  // job's members that exited, never joined, or are in another generation
  // (rendezvous/members.h). Other errors, or no answer, leave it as it is.
  Status Explained(Status s) const;
  // The settings it was made with (process sets connect with them too).
  WorkerConfig config_;
  // A process set's context: no CPU binding of its own (the job's stands)
  // and no timeline (the job's records).
  bool process_set_ = false;
  // Under the generation: "" for the job, "ps<id>/" for a process set.
  std::string store_prefix_;
  // CPU binding of this process and its engine thread (affinity.h).
  Status Place(const WorkerConfig& config, Transport data);
  // The rendezvous store of this generation under `prefix`: a key set in
  // one generation is never seen by the next.
  std::unique_ptr<Store> GenerationStore(const std::string& prefix) const;

  rendezvous::Assignment assignment_;
  // Shared with the job's process sets.
  std::shared_ptr<rendezvous::RendezvousClient> client_;
  std::unique_ptr<BackendSet> backends_;
  std::unique_ptr<ControlPlane> control_;
  EngineOptions engine_options_;
  std::string timeline_path_;
  bool timeline_mark_cycles_ = false;
  std::unique_ptr<Timeline> timeline_;  // rank 0, once the engine runs
  std::once_flag engine_once_;
  std::unique_ptr<Engine> engine_;  // destroyed before the backend
  // engine_ once made, for threads that must not make it (a dump).
  std::atomic<Engine*> engine_made_{nullptr};
  // Sends this rank's metrics to the launcher through the rendezvous
  // (HVD_METRICS_INTERVAL_MS); destroyed first, after a last report.
  std::unique_ptr<MetricsPublisher> publisher_;
  std::unique_ptr<FlightResponder> flight_;
};

}  // namespace hvd::runtime
