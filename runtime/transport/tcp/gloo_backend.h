// Collectives over Gloo's TCP transport, for CPU buffers.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/settings.h"
#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/store.h"

namespace hvd::runtime {

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // Network interface to bind (HOROVOD_GLOO_IFACE); wins over `hostname`.
  std::string iface;
  // Address or name to bind and advertise when no interface is given.
  std::string hostname = "127.0.0.1";
  // How long the full-mesh connection may take (peers still starting).
  std::chrono::milliseconds connect_timeout{
      std::chrono::seconds(settings::DefaultInt("start_timeout"))};
  // How long any one collective may wait for a peer before it fails.
  std::chrono::milliseconds op_timeout{
      std::chrono::seconds(settings::DefaultInt("gloo_timeout_seconds"))};
};

// Connects the full mesh through `store` (which must outlive the call only).
// Errors name this rank and say which peer or setting to check.
StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(const GlooOptions& options,
                                                     Store& store);

}  // namespace hvd::runtime
