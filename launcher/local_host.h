// Whether a host name denotes this machine: "localhost", this machine's
// name, or a name or address that resolves to one of its addresses
// (127.0.0.0/8 and ::1 included). Does I/O (getaddrinfo, getifaddrs).
#pragma once

#include <string>

namespace hvd::launcher {

bool IsLocalHost(const std::string& host);

// GPUs visible on this machine (/dev/nvidiaN), 0 when none.
int CountLocalGpus();

}  // namespace hvd::launcher
