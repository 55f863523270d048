// Collectives over Gloo's TCP transport, for CPU buffers.
#pragma once

#include <memory>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_options.h"

namespace hvd::runtime {

using GlooOptions = TcpOptions;

// Connects the full mesh through `store` (which must outlive the call only).
// Errors name this rank and say which peer or setting to check.
StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(const GlooOptions& options,
                                                     Store& store);

}  // namespace hvd::runtime
