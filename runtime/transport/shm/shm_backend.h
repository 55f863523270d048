// Collectives through shared memory, for ranks on one host: what makes a
// single-host job (and, later, the local stage of a hierarchical one) move
// data at memory speed instead of through TCP loopback.
//
// One segment per host group: local rank 0 creates it (mode 0600) under a
// random name it publishes in the rendezvous store; the others map it, and
// the last one to map unlinks the name, so once a job runs nothing of it is
// left in /dev/shm whatever happens to its processes. The segment holds a
// header of per-rank sequence counters (the barrier) and two sets of data
// slots used alternately, so consecutive phases overlap without extra
// barriers.
//
// Allreduce: every rank copies a chunk into its slot; after a barrier each
// rank reduces its share of the chunk over all slots in rank order (the
// same bits everywhere) into a shared result; after a second barrier every
// rank copies the result out. Allgather, broadcast and alltoall are one
// barrier per chunk. Reduce-scatter and allgather work in place too (a
// rank's block of `out` at its place in `in`, its input at its place in
// `out`): then only the blocks the other ranks need are copied, which is
// what the hierarchical allreduce's local phases rely on. Waits spin
// briefly, then yield; a peer that dies or stalls past the timeout is an
// error naming its local rank.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/control_plane.h"
#include "runtime/store.h"
#include "runtime/transport/shm/shm_segment.h"

namespace hvd::runtime {

StatusOr<std::unique_ptr<Backend>> CreateShmBackend(const ShmOptions& options,
                                                    Store& store);

// How many allreduces this process's shared-memory backends have run
// straight between the ranks' shared buffers (shm_heap.h), and reading
// the peers' buffers (single copy), and fused groups reduced where their
// tensors lie (pieces): for tests.
struct ShmPaths {
  uint64_t shared_buffers = 0;
  uint64_t single_copy = 0;
  uint64_t pieces = 0;
};
ShmPaths ShmAllreducePaths();

// The engine's control plane through a segment of its own (slot_bytes per
// rank and round; longer messages take several rounds). `on_ring(q)`, if
// given, runs each time this rank would ring local rank q's bell (q did
// not come within the spin), and says whether to: where q's engine thread
// sleeps on more than its bell (a host leader also waits on its sockets)
// it wakes it there too; where this rank knows q is busy in the same
// exchange elsewhere, a ring would only wake q for nothing.
StatusOr<std::unique_ptr<ControlPlane>> CreateShmControlPlane(
    const ShmOptions& options, Store& store,
    std::function<bool(int)> on_ring = {});

}  // namespace hvd::runtime
