// Host lists as users write them for -H: "h1:2,h2:4", "h", "[::1]:2".
// Pure parsing, no name resolution.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

struct HostSpec {
  std::string host;  // as written, without brackets for IPv6
  int slots = 1;
  bool operator==(const HostSpec&) const = default;
};

// Slots default to 1 when a host has no ":N". Errors name the bad entry.
StatusOr<std::vector<HostSpec>> ParseHostList(std::string_view text);

// Back to "-H" form, for messages.
std::string FormatHostList(const std::vector<HostSpec>& hosts);

}  // namespace hvd::launcher
