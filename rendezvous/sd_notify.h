// systemd's readiness protocol (sd_notify(3)), without libsystemd: one
// datagram to the socket named by $NOTIFY_SOCKET.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd::rendezvous {

// Sends `state` ("READY=1", "STOPPING=1", "STATUS=...") when NOTIFY_SOCKET
// is set; does nothing (OK) when it is not, as outside systemd.
Status SdNotify(const std::string& state);

}  // namespace hvd::rendezvous
