// The fusion planner: which ready tensors share one backend call. Pure.
//
// Rules: consecutive host allreduces with the same dtype, reduce op and
// scale factors share the fusion buffer while their bytes together fit the
// threshold (a tensor larger than it runs alone); every other operation,
// and every CUDA tensor (the buffer is host memory), runs alone. Fusion
// never reorders: every rank plans the same list the same way, so every
// rank makes the same calls in the same order.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::runtime {

// Whether `b` may share a fusion buffer with `a`; with `by_group`
// (HOROVOD_DISABLE_GROUP_FUSION) only within one group, or among tensors of
// no group.
bool Fusable(const Request& a, const Request& b, bool by_group = false);

// A group: items [begin, end) of the list, run as one call.
struct FusionGroup {
  size_t begin = 0, end = 0;
  bool operator==(const FusionGroup&) const = default;
};

// Groups `ready` (in order) under `threshold_bytes`.
std::vector<FusionGroup> PlanFusion(const std::vector<const Request*>& ready,
                                    size_t threshold_bytes,
                                    bool by_group = false);

}  // namespace hvd::runtime
