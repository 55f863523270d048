// The TCP control plane: a full mesh of sockets the engine thread writes
// and reads itself (runtime/control_plane.h says why not through Gloo).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/control_plane.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_options.h"

namespace hvd::runtime {

struct ControlOptions : TcpOptions {
  // How long a caller's Exchange (and AwaitPeer) polls its sockets before
  // it rings the peers and sleeps: a peer a few microseconds behind answers
  // before a sleep-and-wake would. Each turn yields the CPU (a system call
  // among the turn's others), so the spin costs nothing where the host is
  // idle, and where ranks outnumber cores (hosts sharing a machine, as
  // containers do) the late peer gets the CPU it needs. Long enough for a
  // descheduled peer to get a turn: its engine thread answering a ring
  // without its caller only costs a cycle more.
  std::chrono::microseconds spin{500};
};

// Connects the mesh through `store` (tcp_mesh.h).
StatusOr<std::unique_ptr<ControlPlane>> CreateTcpControlPlane(
    const ControlOptions& options, Store& store);

}  // namespace hvd::runtime
