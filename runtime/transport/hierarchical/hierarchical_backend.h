// Hierarchical collectives for jobs of several hosts with several ranks
// each (--hierarchical-allreduce, --hierarchical-allgather): the host's
// ranks work through shared memory, and only one exchange per local rank
// crosses the network, among the ranks with the same local rank (the cross
// communicator, over Gloo).
//
//   allreduce: local reduce-scatter (shared memory) -> cross allreduce of
//              this rank's share (Gloo) -> local allgather (shared memory),
//              the share staying where it lies in the buffer throughout;
//              a large buffer goes in pieces, the cross allreduce of one
//              on a thread of its own while the local phases of the
//              neighbouring pieces run (otherwise the link waits for the
//              local phases and they for the link)
//   allgather: local allgather of the host's block -> cross allgather of
//              the host blocks (in cross-rank order, which is rank order)
//
// Every host must hold the same number of ranks (checked by the caller);
// the other operations go to the flat backend.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/backend.h"

namespace hvd::runtime {

struct HierarchicalOptions {
  bool allreduce = false;
  bool allgather = false;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;  // the host's index: hosts hold consecutive ranks
  // Allreduces of at least 2 pieces of this many bytes are pipelined, in at
  // most kMaxPieces pieces; 0: never.
  size_t piece_bytes = size_t{2} << 20;
};

// The pieces of a pipelined allreduce of `count` elements of `esize`
// bytes: element offsets, first to last, ending with `count`; {0, count}
// when it is not worth cutting.
inline constexpr size_t kMaxPieces = 8;
std::vector<size_t> PipelinePieces(size_t count, size_t esize,
                                   size_t piece_bytes);

// Takes ownership of the three backends.
std::unique_ptr<Backend> MakeHierarchicalBackend(
    const HierarchicalOptions& options, std::unique_ptr<Backend> flat,
    std::unique_ptr<Backend> local, std::unique_ptr<Backend> cross);

}  // namespace hvd::runtime
