// The executor: runs one group the fusion planner made on the backend set,
// and the local reduction of a small allreduce whose data every rank sent
// along with the negotiation. It fills the tensors and outputs; the engine
// completes the handles.
//
// Not thread-safe: the engine thread owns it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/backend_set.h"
#include "runtime/engine/pending.h"

namespace hvd::runtime {

class Timeline;

class Executor {
 public:
  // Neither is owned; `timeline` may be null.
  Executor(int rank, int size, BackendSet* backends, Timeline* timeline);

  // One collective call for the group: fused host allreduces through one
  // buffer, any other operation (a group of one) on its own, CUDA tensors
  // on the device backend. Returns the bytes allreduced (what autotune
  // scores). A failure is the backend's, and leaves the group incomplete.
  StatusOr<uint64_t> Run(const std::vector<Pending*>& group);

  // The allreduce of `p` from every rank's copy of its data (`from`, in
  // rank order, each of its size): the same bits on every rank, with no
  // collective. Returns the bytes reduced.
  uint64_t ReduceEager(Pending* p, const std::vector<std::string_view>& from);

 private:
  const int rank_, size_;
  BackendSet* backends_;
  Timeline* timeline_;
  std::vector<uint8_t> fusion_;
};

}  // namespace hvd::runtime
