// Collectives over Gloo's TCP transport, for CPU buffers.
#pragma once

#include <cstdint>
#include <memory>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_options.h"

namespace hvd::runtime {

struct GlooOptions : TcpOptions {
  // Allreduce on the TCP ring of hvd's own sockets (tcp_ring.h) rather
  // than on Gloo's.
  bool ring = true;
  // Its sockets per neighbour, and the bytes per stream below which a
  // step uses fewer (tcp_ring.h).
  int ring_streams = 1;
  size_t ring_stream_bytes = size_t{1} << 20;
  size_t ring_doubling_bytes = size_t{64} << 10;
  size_t ring_halving_bytes = size_t{4} << 20;
};

// Connects through `store`: hvd's ring (ring: its neighbours and the
// doubling's partners) at once, and Gloo's full mesh on the first
// collective that the ring does not take (collective_algorithm.h), or at
// once without the ring. Errors name this rank and say which peer or
// setting to check.
StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(
    const GlooOptions& options, std::unique_ptr<Store> store);

// How many Gloo meshes this process has connected, for tests.
uint64_t GlooMeshesConnected();

}  // namespace hvd::runtime
