// What a worker learns from its environment, parsed once and strictly.
//
// horovodrun sets, for every worker:
//   HVD_RENDEZVOUS_ADDR  HOST:PORT of the rendezvous server
//   HVD_JOB_ID           the job
//   HVD_JOB_TOKEN        the job's secret (environment only, never argv)
//   HVD_HOST             the host as written in -H (also HOROVOD_HOSTNAME)
//   HVD_SLOT             the slot index on that host
//   HVD_GLOO_ADDR        address Gloo binds when HOROVOD_GLOO_IFACE is unset
// and Horovod's HOROVOD_RANK/SIZE/LOCAL_*/CROSS_*, which init() checks
// against the rendezvous's answer.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/setting_keys.h"
#include "common/status.h"
#include "rendezvous/assignment.h"
#include "runtime/engine/engine_options.h"

namespace hvd::runtime {

struct WorkerConfig {
  // False when started without a launcher: a single process of size 1.
  bool launched = false;
  std::string rendezvous_addr;
  std::string job_id;
  std::string job_token;
  std::string host;
  int slot = 0;
  // TLS to the rendezvous (HVD_RENDEZVOUS_TLS_CA/_CERT/_KEY, PEM text).
  std::string tls_ca_pem, tls_cert_pem, tls_key_pem;
  std::string gloo_iface;
  std::string gloo_addr = "127.0.0.1";
  // The engine's settings (fusion, cycle time, cache, stall inspector,
  // autotune), read here; the context adds rank, size, timeline and
  // transport choices.
  EngineOptions engine;
  // The other tuning settings, with the settings table's defaults.
  std::chrono::milliseconds start_timeout{
      settings::Default(settings::key::kStartTimeout)};
  // HVD_JOIN_TIMEOUT: how long init() waits for its peers; 0: as long as
  // gloo_timeout.
  std::chrono::milliseconds join_timeout{0};
  // HOROVOD_ELASTIC_TIMEOUT: how long a re-join waits for an elastic job's
  // next membership.
  std::chrono::milliseconds elastic_timeout{
      settings::Default(settings::key::kElasticTimeout)};
  std::chrono::milliseconds gloo_timeout{
      settings::Default(settings::key::kGlooTimeout)};
  bool dynamic_process_sets = false;  // HOROVOD_DYNAMIC_PROCESS_SETS
  // HOROVOD_ELASTIC: its membership may move on while a rank meets its
  // peers (Store::Current).
  bool elastic = false;
  // HOROVOD_NUM_NCCL_STREAMS: the NCCL backend's streams per GPU.
  int num_nccl_streams = int(settings::Default(settings::key::kNumNcclStreams));
  // Shared memory between the ranks of a host (!HOROVOD_SHM_DISABLE);
  // given: the variable was set (autotune then leaves it alone).
  bool shm = true, shm_given = false;
  // Allreduce over TCP on hvd's ring (!HOROVOD_TCP_RING_DISABLE).
  bool tcp_ring = true;
  // Its connections per neighbour (HOROVOD_TCP_STREAMS), and the bytes of
  // a step per connection below which it uses fewer.
  int tcp_streams = 2;
  size_t tcp_stream_bytes = size_t{1} << 20;
  // HOROVOD_TCP_DOUBLING_BYTES: its allreduces of at most this many bytes
  // take recursive doubling.
  size_t tcp_doubling_bytes = size_t{64} << 10;
  size_t tcp_halving_bytes = size_t{4} << 20;
  // The control plane's full mesh up to this many ranks, its recursive
  // doubling past them (ChooseControlExchange).
  int64_t control_mesh_ranks = 2;
  // HOROVOD_CONTROL_HOST_LEADERS: across hosts, one leader per host
  // negotiates for the host's ranks (host_control.h). Off: every rank in
  // the TCP plane. Off by default: with 16 namespace hosts of 2 ranks on 2
  // cores its cycle took about 4 times the flat plane's (at 4 and 8 hosts
  // of 2 it was faster).
  bool control_host_leaders = false;
  // HOROVOD_HIERARCHICAL_ALLREDUCE / _ALLGATHER (several ranks per host on
  // several hosts). Unset: on wherever hosts hold the same number (> 1) of
  // ranks and shared memory is on; "0" pins it off.
  std::optional<bool> hierarchical_allreduce;
  std::optional<bool> hierarchical_allgather;
  size_t shm_slot_bytes = 1u << 20;  // chunk size of its collectives
  // HOROVOD_SHM_SINGLE_COPY_THRESHOLD: allreduces from this many bytes on
  // read the peers' buffers directly; 0 never.
  size_t shm_single_copy_bytes =
      size_t(settings::Default(settings::key::kShmSingleCopyThreshold));
  // HOROVOD_SHM_SINGLE_COPY_LIMIT: and up to this many; 0 no limit.
  size_t shm_single_copy_limit =
      size_t(settings::Default(settings::key::kShmSingleCopyLimit));
  // HVD_BIND_TO (horovodrun --bind-to): "core" keeps each local rank to
  // its block of the host's CPUs (runtime/affinity.h), "none" leaves
  // placement to the kernel. Unset: "core" where the job's data goes
  // through shared memory (every rank on one host), else "none" (a rank
  // whose data goes through Gloo's TCP threads runs them better unbound).
  std::optional<bool> bind;
  // HOROVOD_THREAD_AFFINITY: the engine thread's CPU, one per local rank.
  std::vector<int> thread_affinity;
  std::string timeline;               // HOROVOD_TIMELINE (rank 0 writes it)
  bool timeline_mark_cycles = false;  // HOROVOD_TIMELINE_MARK_CYCLES
  bool metrics = true;                // HOROVOD_METRICS_DISABLE off
  // HVD_METRICS_INTERVAL_MS (horovodrun --metrics-port, --monitor): how
  // often this rank reports its metrics; 0: never.
  std::chrono::milliseconds metrics_interval{0};
  // What the launcher planned (HOROVOD_*), if it said.
  std::optional<rendezvous::Assignment> expected;

  // Parses a worker's environment (settings::ProcessEnv() in a worker;
  // tests pass maps). Tuning settings come from the settings table, with
  // its defaults and ranges.
  static StatusOr<WorkerConfig> FromEnv(const settings::EnvMap& env);
};

// FailedPrecondition when `got` differs from what the launcher planned.
Status CheckAssignment(const WorkerConfig& config,
                       const rendezvous::Assignment& got);

}  // namespace hvd::runtime
