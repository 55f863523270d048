// Hierarchical collectives for jobs of several hosts with several ranks
// each (--hierarchical-allreduce, --hierarchical-allgather): the host's
// ranks work through shared memory, and only one exchange per local rank
// crosses the network, among the ranks with the same local rank (the cross
// communicator, over Gloo).
//
//   allreduce: local reduce-scatter (shared memory) -> cross allreduce of
//              this rank's share (Gloo) -> local allgather (shared memory)
//   allgather: local allgather of the host's block -> cross allgather of
//              the host blocks (in cross-rank order, which is rank order)
//
// Every host must hold the same number of ranks (checked by the caller);
// the other operations go to the flat backend.
#pragma once

#include <memory>

#include "runtime/backend.h"

namespace hvd::runtime {

struct HierarchicalOptions {
  bool allreduce = false;
  bool allgather = false;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;  // the host's index: hosts hold consecutive ranks
};

// Takes ownership of the three backends.
std::unique_ptr<Backend> MakeHierarchicalBackend(
    const HierarchicalOptions& options, std::unique_ptr<Backend> flat,
    std::unique_ptr<Backend> local, std::unique_ptr<Backend> cross);

}  // namespace hvd::runtime
