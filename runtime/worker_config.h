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

#include "common/status.h"
#include "rendezvous/assignment.h"

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
  std::chrono::milliseconds start_timeout{30000};  // HOROVOD_START_TIMEOUT
  std::chrono::milliseconds gloo_timeout{
      30000};                                  // HOROVOD_GLOO_TIMEOUT_SECONDS
  size_t fusion_threshold_bytes = 128u << 20;  // HOROVOD_FUSION_THRESHOLD
  // HOROVOD_CYCLE_TIME (ms); 0, the default, starts cycles on demand.
  std::chrono::microseconds cycle_time{0};
  size_t cache_capacity = 1024;  // HOROVOD_CACHE_CAPACITY (0 disables)
  bool stall_check = true;       // !HOROVOD_STALL_CHECK_DISABLE
  // HOROVOD_STALL_CHECK_TIME_SECONDS, HOROVOD_STALL_SHUTDOWN_TIME_SECONDS
  std::chrono::milliseconds stall_warning{60000};
  std::chrono::milliseconds stall_shutdown{0};
  std::function<void(const std::string&)> on_stall_warning;  // tests only
  // Shared memory between the ranks of a host (!HOROVOD_SHM_DISABLE);
  // given: the variable was set (autotune then leaves it alone).
  bool shm = true, shm_given = false;
  // HOROVOD_HIERARCHICAL_ALLREDUCE / _ALLGATHER (several ranks per host on
  // several hosts). Unset: on wherever hosts hold the same number (> 1) of
  // ranks and shared memory is on; "0" pins it off.
  std::optional<bool> hierarchical_allreduce;
  std::optional<bool> hierarchical_allgather;
  size_t shm_slot_bytes = 1u << 20;  // chunk size of its collectives
  // HVD_BIND_TO (horovodrun --bind-to): "core" keeps each local rank to
  // its block of the host's CPUs (runtime/affinity.h), "none" leaves
  // placement to the kernel. Unset: "core" where the job's data goes
  // through shared memory (every rank on one host), else "none" (a rank
  // whose data goes through Gloo's TCP threads runs them better unbound).
  std::optional<bool> bind;
  // HOROVOD_THREAD_AFFINITY: the engine thread's CPU, one per local rank.
  std::vector<int> thread_affinity;
  // HOROVOD_AUTOTUNE and its settings (HOROVOD_AUTOTUNE_*); fusion
  // threshold and cycle time given explicitly stay fixed.
  bool autotune = false;
  std::string autotune_log;
  int autotune_warmup_samples = 3, autotune_steps_per_sample = 10,
      autotune_max_samples = 20;
  double autotune_noise = 0.8;
  bool fusion_given = false, cycle_given = false;
  std::string timeline;               // HOROVOD_TIMELINE (rank 0 writes it)
  bool timeline_mark_cycles = false;  // HOROVOD_TIMELINE_MARK_CYCLES
  // What the launcher planned (HOROVOD_*), if it said.
  std::optional<rendezvous::Assignment> expected;

  static StatusOr<WorkerConfig> FromEnv();
};

// FailedPrecondition when `got` differs from what the launcher planned.
Status CheckAssignment(const WorkerConfig& config,
                       const rendezvous::Assignment& got);

}  // namespace hvd::runtime
