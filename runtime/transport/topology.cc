#include "runtime/transport/topology.h"

#include <algorithm>

namespace hvd::runtime {

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kLocal:
      return "local";
    case Transport::kShm:
      return "shared memory";
    case Transport::kTcp:
      return "TCP";
  }
  return "?";
}

TransportPlan PlanTransports(const TopologyFacts& f) {
  TransportPlan p;
  if (f.size == 1) return p;
  if (f.local_size == f.size && f.shm) {
    p.data = p.control = Transport::kShm;
    p.tcp_alternative = f.autotune && !f.shm_given;
    return p;
  }
  p.data = p.control = Transport::kTcp;
  // Asked for, or by default where shared memory is on (the fast path is
  // the default).
  p.want_hierarchical_allreduce = f.hierarchical_allreduce.value_or(f.shm);
  p.want_hierarchical_allgather = f.hierarchical_allgather.value_or(f.shm);
  p.hierarchical_asked = f.hierarchical_allreduce.value_or(false) ||
                         f.hierarchical_allgather.value_or(false);
  return p;
}

HierarchyDecision DecideHierarchy(const TransportPlan& plan,
                                  const std::vector<int32_t>& local_sizes) {
  HierarchyDecision d;
  if (!plan.want_hierarchical_allreduce && !plan.want_hierarchical_allgather) {
    return d;
  }
  if (local_sizes.empty() ||
      std::any_of(local_sizes.begin(), local_sizes.end(),
                  [&](int32_t s) { return s != local_sizes[0]; })) {
    d.why_not = "hosts hold different numbers of ranks";
  } else if (local_sizes[0] == 1) {
    d.why_not = "every host holds one rank";
  } else {
    d.allreduce = plan.want_hierarchical_allreduce;
    d.allgather = plan.want_hierarchical_allgather;
  }
  return d;
}

}  // namespace hvd::runtime
