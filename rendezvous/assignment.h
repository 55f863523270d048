// Horovod's rank assignment: pure functions, no I/O.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::rendezvous {

struct HostSlots {
  std::string host;  // as written by the user, never resolved
  int slots = 0;     // slots of this host the job uses
  int gpus = 0;      // GPUs on the host; 0 when none or unknown
  bool operator==(const HostSlots&) const = default;
};

struct Assignment {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  int gpu = -1;  // local_rank modulo the host's GPUs, -1 without GPUs
  // The slot's join count: 1 for its first init(), then one more for each
  // init() after a shutdown(). Set by the rendezvous, not by assignment.
  int generation = 1;
  bool operator==(const Assignment&) const = default;
};

// The key under which an elastic job's table publishes its membership
// epoch, for workers to notice a change at their next commit.
inline constexpr const char* kMembershipEpochKey = "hvd/membership-epoch";

// Checks names (non-empty, unique) and slot counts (>= 1), and that the
// slots add up to `size`.
Status ValidateHosts(const std::vector<HostSlots>& hosts, int size);

// The assignment of every rank, indexed by rank. Hosts are walked in order
// and each host's slots in order; each slot takes the next rank. For local
// rank L, cross_size counts the hosts that have a slot L and cross_rank is
// this host's position among them (so -H x:1,y:3 gives y's local rank 1 the
// cross rank 0 of 1). `hosts` must pass ValidateHosts.
std::vector<Assignment> ComputeAssignments(const std::vector<HostSlots>& hosts);

// Each worker's latest metrics report (runtime/metrics.h) lives under
// this prefix + HOST/SLOT, for the launcher to serve.
inline constexpr const char* kMetricsKeyPrefix = "hvd/metrics/";

// Workers a workload manager or mpirun started know only their task index
// (SLURM_PROCID, OMPI_COMM_WORLD_RANK). The launcher hands them its plan's
// hosts in rank order, in worker_env::kTaskHosts, as "host:slots,..."
// ("[v6]:n" for IPv6); task i is rank i of that plan.

struct TaskPlace {
  std::string host;
  int slot = 0;
  Assignment assignment;
};

// The place of task `task` in the hosts of `task_hosts` (that variable's
// text). Errors name the variable or say the task is past the plan.
StatusOr<TaskPlace> PlaceTask(const std::string& task_hosts, int64_t task);

}  // namespace hvd::rendezvous
