// Merging small tensors' data on the way (ControlPlane::Merger): where the
// control plane combines the ranks' messages in steps (recursive
// doubling), two blocks of ranks whose messages are a cycle of one cached
// allreduce and its data, alike but for the data, travel on as one
// message holding the two blocks' data reduced. Every rank then receives
// log2(n) trips of one tensor's bytes, not an allgather of n copies, and
// reduces nothing more than the groups that did not merge.
//
// The decision is every rank's alike: it reads the two messages and the
// response cache (the same entries on every rank in every cycle) and
// nothing of this rank's own state; the lower block's data is the left
// operand, so each pair reduces the same operands in the same order and
// the bits agree everywhere. Only what reduces without a last step merges:
// no prescaling (every rank's own data would need it before the sum).
// The engine applies the postscale (and the average's 1/n) after, to the
// reduction of the groups, in rank order of their first ranks.
//
// Not thread-safe: called within the exchange, by the cycle's runner (the
// cache's only writer).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/control_plane.h"
#include "runtime/engine/response_cache.h"

namespace hvd::runtime {

class EagerMerger final : public ControlPlane::Merger {
 public:
  explicit EagerMerger(const ResponseCache& cache) : cache_(cache) {}

  bool Merge(std::string_view low, std::string_view high,
             std::string* out) override;

 private:
  const ResponseCache& cache_;
  // Aligned copies of the operands (a message's data lies anywhere).
  std::vector<uint64_t> a_, b_;
};

}  // namespace hvd::runtime
