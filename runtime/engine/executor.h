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
#include "runtime/engine/adasum.h"
#include "runtime/engine/pending.h"

namespace hvd::runtime {

class Timeline;

class Executor {
 public:
  // Neither is owned; `timeline` may be null.
  Executor(int rank, int size, BackendSet* backends, Timeline* timeline);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // One collective call for the group: fused host allreduces through one
  // buffer, any other operation (a group of one) on its own, CUDA tensors
  // on the device backend. Returns the bytes allreduced (what autotune
  // scores). A failure is the backend's, and leaves the group incomplete.
  StatusOr<uint64_t> Run(const std::vector<Pending*>& group);

  // The allreduce of `p` from every rank's copy of its data (`from`, in
  // rank order, each of its size; a group's, reduced, where ranks'
  // messages merged on the way): the same bits on every rank, with no
  // collective. Returns the bytes reduced.
  uint64_t ReduceEager(Pending* p, const std::vector<std::string_view>& from);
  // The same into `data`, for a request that is not pending (untraced).
  uint64_t ReduceEager(const Request& r, void* data,
                       const std::vector<std::string_view>& from);

 private:
  // The timeline's phases of the group being run (executor.cc).
  class Phases;
  // One operation each; a group of more than one is only an allreduce.
  Status Allgather(Backend& backend, Pending& p, Phases& phases);
  Status Reducescatter(Backend& backend, Pending& p, Phases& phases);
  Status Alltoall(Backend& backend, Pending& p, Phases& phases);
  Status Broadcast(Backend& backend, Pending& p, Phases& phases);
  Status Allreduce(Backend& backend, const std::vector<Pending*>& group,
                   Phases& phases);

  const int rank_, size_;
  BackendSet* backends_;
  Timeline* timeline_;
  Adasum adasum_;
  // The fusion buffer, at least `bytes`: in a shared block (shm_heap.h)
  // where the system gives one, so that the shared-memory backend reduces
  // a fused group straight between the ranks' buffers; otherwise in
  // fallback_. Grown (doubling), never shrunk.
  uint8_t* FusionBuffer(size_t bytes);
  uint8_t* fusion_ = nullptr;
  size_t fusion_bytes_ = 0;
  bool fusion_shared_ = false;
  std::vector<uint8_t> fallback_;
  std::vector<uint8_t> eager_next_;  // ReduceEager's copy of a peer's data
  std::vector<Piece> pieces_;        // a fused group's tensors, reused
};

}  // namespace hvd::runtime
