// Which of this machine's addresses reaches a peer. Launchers use it to
// tell workers where the rendezvous is; a worker started by mpirun or srun
// to pick the address its Gloo listens on.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd {

// The address of this machine that packets to `peer` (an IP address)
// leave from, as the routing table says (no packet is sent); NotFound when
// no route leads there.
StatusOr<std::string> LocalAddressToward(const std::string& peer);

}  // namespace hvd
