// The local transport: a job of one rank, where every collective is a copy
// within the process and the negotiation answers itself.
#pragma once

#include <memory>

#include "runtime/backend.h"
#include "runtime/control_plane.h"

namespace hvd::runtime {

std::unique_ptr<Backend> CreateLocalBackend();

// The single-rank plane: Exchange returns the message itself; Wait sleeps
// until Notify.
std::unique_ptr<ControlPlane> CreateLocalControlPlane();

}  // namespace hvd::runtime
