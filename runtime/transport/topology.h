// Which transports carry a job's data and its negotiation, decided from
// where its ranks are and what the settings ask. Pure: Context::Create
// gathers the facts and builds what this picks.
//
//   one rank                      local (copies) for data and control
//   every rank on one host        shared memory for both (the default);
//                                 TCP (Gloo, and the TCP control mesh)
//                                 with HOROVOD_SHM_DISABLE=1, where
//                                 autotune may also try TCP for data
//   ranks on several hosts        TCP, hierarchical (shared memory within
//                                 hosts, Gloo across) where every host
//                                 holds the same number (> 1) of ranks;
//                                 the negotiation through one leader per
//                                 host where asked
//                                 (hierarchical/host_control.h)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hvd::runtime {

enum class Transport { kLocal, kShm, kTcp };

const char* TransportName(Transport t);

struct TopologyFacts {
  int size = 1;
  int local_size = 1;      // ranks on this rank's host
  bool shm = true;         // !HOROVOD_SHM_DISABLE
  bool shm_given = false;  // that variable was set explicitly
  bool autotune = false;
  std::optional<bool> hierarchical_allreduce, hierarchical_allgather;
};

struct TransportPlan {
  Transport data = Transport::kLocal;
  Transport control = Transport::kLocal;
  // Data through shared memory, and autotune may try TCP instead (not when
  // shared memory was asked for explicitly).
  bool tcp_alternative = false;
  // Across hosts: whether to try hierarchical collectives (every rank then
  // compares the hosts' sizes: DecideHierarchy), and whether they were
  // asked for explicitly (a fallback is then a warning, not a note).
  bool want_hierarchical_allreduce = false;
  bool want_hierarchical_allgather = false;
  bool hierarchical_asked = false;
  bool operator==(const TransportPlan&) const = default;
};

TransportPlan PlanTransports(const TopologyFacts& facts);

struct HierarchyDecision {
  bool allreduce = false, allgather = false;
  std::string why_not;  // when both are off although wanted
  bool operator==(const HierarchyDecision&) const = default;
};

// From every rank's local size (the same list on every rank, so the same
// answer): hierarchical only where every host holds the same number (> 1)
// of ranks.
HierarchyDecision DecideHierarchy(const TransportPlan& plan,
                                  const std::vector<int32_t>& local_sizes);

}  // namespace hvd::runtime
