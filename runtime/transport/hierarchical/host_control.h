// The engine's control plane for jobs of several hosts: the ranks of a host
// meet in shared memory, and only one of them, its leader (local rank 0),
// speaks across hosts, where the leaders combine by the TCP plane's
// recursive doubling (tcp_control.h). A cycle runs in three steps:
//
//   1. the host's ranks exchange their messages through shared memory;
//   2. the leader makes them one host message (one engine message, where
//      the host's messages merge: a cycle of one small cached allreduce,
//      its data reduced) and exchanges that with the other leaders;
//   3. the leader hands every host's message to its ranks through shared
//      memory (or the error that stopped step 2).
//
// So the network carries log2(hosts) frames per leader per cycle, and none
// from the other ranks; a rank opens one socket (to its leader) besides
// the shared memory, and a leader log2(hosts) pairs more. Every rank reads
// the same step-3 bytes, so every rank sees the same messages and merges.
//
// A leader's engine thread sleeps on its sockets (tcp_control.h's Wait),
// not on its shared-memory bell: the host's other ranks, when they ring it
// (they started an exchange and the leader did not come), also send a
// byte down a socket to it, which wakes it there.
//
// Where every host holds one rank, there is nothing to meet in shared
// memory: the factory hands back the leaders' TCP plane itself.
#pragma once

#include <memory>
#include <vector>

#include "common/status.h"
#include "runtime/control_plane.h"
#include "runtime/store.h"
#include "runtime/transport/shm/shm_segment.h"
#include "runtime/transport/tcp/tcp_control.h"

namespace hvd::runtime {

struct HostControlOptions {
  // This host's ranks (rank = local rank, size = local size).
  ShmOptions local;
  // The job: this rank's rank and size, and where its sockets listen.
  TcpOptions job;
  // The leaders among themselves (rank = this host's index, size = the
  // hosts; read on leaders only; wake_fds is set here).
  ControlOptions cross;
};

// Connects this rank's pieces through `store` (keys "hbell", "ctl" and the
// shared-memory segment's); every rank of the job calls it.
StatusOr<std::unique_ptr<ControlPlane>> CreateHostControlPlane(
    const HostControlOptions& options, Store& store);

}  // namespace hvd::runtime
