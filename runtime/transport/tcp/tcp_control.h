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
  // How long Exchange polls its sockets without sleeping: a peer that is
  // a few microseconds behind answers before a sleep-and-wake would.
  std::chrono::microseconds spin{50};
};

// Connects the mesh through `store` (tcp_mesh.h).
StatusOr<std::unique_ptr<ControlPlane>> CreateTcpControlPlane(
    const ControlOptions& options, Store& store);

}  // namespace hvd::runtime
