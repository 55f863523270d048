// host:port parsing, IPv6 in brackets ("[::1]:50051").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd {

struct HostPort {
  std::string host;  // without brackets
  uint16_t port = 0;

  // Brackets an IPv6 literal again: "[::1]:5", "node1:5".
  std::string ToString() const;
  bool operator==(const HostPort&) const = default;
};

// `what` names the setting for the error message.
StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view what);

// "HOST:PORT[,HOST:PORT...]": one or more, none empty, each with a port
// other than 0 (servers to reach, not addresses to listen on).
StatusOr<std::vector<HostPort>> ParseHostPortList(std::string_view text,
                                                  std::string_view what);

}  // namespace hvd
