// The TCP control plane: sockets the engine thread writes and reads itself
// (runtime/control_plane.h says why not through Gloo), in one of two
// shapes:
//
//   mesh      every rank sends its message to every other at once: one
//             trip, but n - 1 frames and sockets per rank, n(n - 1) in all
//   doubling  recursive doubling (doubling.h): log2(n) trips (two more
//             where n is no power of two), each with one partner, whose
//             frame carries the messages of every rank it has heard of so
//             far (control_frame.h: equal messages once, so a cycle of
//             cached tensors costs the same bytes per trip at any n);
//             log2(n) sockets per rank
//
// ChooseControlExchange picks; the mesh only where it is as few trips.
//
// A rank whose exchange fails tells its peers why (an abort frame) before
// it gives up, and each of them tells theirs: where no rank is connected
// to every other, a dead rank is still everyone's error within a few
// trips, named as the rank that found it saw it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/control_plane.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_options.h"

namespace hvd::runtime {

enum class ControlExchange { kMesh, kDoubling };

const char* ControlExchangeName(ControlExchange e);

// The mesh up to `mesh_max_ranks` ranks (HOROVOD_CONTROL_MESH_RANKS), the
// doubling past them. Every rank picks the same from the same inputs.
ControlExchange ChooseControlExchange(int size, int64_t mesh_max_ranks);

struct ControlOptions : TcpOptions {
  ControlExchange exchange = ControlExchange::kDoubling;
  // How long a caller's Exchange (and AwaitPeer) polls its sockets before
  // it rings the peers and sleeps: a peer a few microseconds behind answers
  // before a sleep-and-wake would. Each turn yields the CPU (a system call
  // among the turn's others), so the spin costs nothing where the host is
  // idle, and where ranks outnumber cores (hosts sharing a machine, as
  // containers do) the late peer gets the CPU it needs. Long enough for a
  // descheduled peer to get a turn: its engine thread answering a ring
  // without its caller only costs a cycle more. The least spin: a plane
  // whose exchanges take longer spins 4 times their recent mean, up to 16
  // times this. Where ranks share cores (16 namespace hosts on 2 cores),
  // a trip round all of them outlasts 500 us; a ring then wakes an engine
  // thread whose caller was coming anyway, which delays the next trip
  // more: 4 B took 2.2 ms there against 0.5 ms with the spin at 2 ms.
  std::chrono::microseconds spin{500};
  // Sockets besides the plane's own whose bytes wake Wait, and are drained
  // there (no reason for an exchange by themselves): a host leader's bells
  // from the other ranks of its host (host_control.h). Owned by the
  // caller, open while the plane lives.
  std::vector<int> wake_fds;
  // The plane's ranks are hosts' leaders (rank = host index), and errors
  // name them so.
  bool leaders = false;
};

// Connects to the exchange's peers through `store` (tcp_mesh.h).
StatusOr<std::unique_ptr<ControlPlane>> CreateTcpControlPlane(
    const ControlOptions& options, Store& store);

}  // namespace hvd::runtime
