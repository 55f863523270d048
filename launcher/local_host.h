// Whether a host name denotes this machine: "localhost", this machine's
// name, or a name or address that resolves to one of its addresses
// (127.0.0.0/8 and ::1 included). Does I/O (getaddrinfo, getifaddrs).
#pragma once

#include <string>

#include "common/local_address.h"
#include "common/status.h"

namespace hvd::launcher {

bool IsLocalHost(const std::string& host);

// The first IPv4 (else IPv6) address of interface `name`, or NotFound.
StatusOr<std::string> InterfaceAddress(const std::string& name);

// The first address `name` resolves to (IPv4 first); NotFound naming it.
StatusOr<std::string> ResolveAddress(const std::string& name);

// GPUs visible on this machine (/dev/nvidiaN), 0 when none.
int CountLocalGpus();

}  // namespace hvd::launcher
