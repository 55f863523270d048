// Host lists as users write them for -H: "h1:2,h2:4", "h", "[::1]:2".
// Pure parsing, no name resolution.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

struct HostSpec {
  std::string host;  // as written, without brackets for IPv6 or "user@"
  int slots = 1;
  std::string user;  // from "user@host"; empty: the launcher's user
  bool operator==(const HostSpec&) const = default;
};

// Slots default to 1 when a host has no ":N". Errors name the bad entry.
StatusOr<std::vector<HostSpec>> ParseHostList(std::string_view text);

// What an elastic job's host discovery script prints: one HOST:SLOTS (or
// HOST, taking `default_slots`, --slots-per-host) per line, blank lines
// ignored, a host printed twice with the same slots once. HOST:0 stays in
// the list (known, with no slots). Errors say what to print instead.
StatusOr<std::vector<HostSpec>> ParseDiscoveredHosts(std::string_view text,
                                                     int default_slots);

// A host file as Horovod and OpenMPI write it: "host slots=N" per line
// (max_slots=M accepted and ignored, a bare host is one slot), '#'
// comments, blank lines. `path` names the file in errors.
StatusOr<std::vector<HostSpec>> ParseHostFile(std::string_view text,
                                              const std::string& path);

// The hosts of a Slurm allocation: SLURM_JOB_NODELIST ("node[01-04,07],x")
// with SLURM_TASKS_PER_NODE ("2(x3),1").
StatusOr<std::vector<HostSpec>> ParseSlurmHosts(std::string_view nodelist,
                                                std::string_view tasks);

// Back to "-H" form, for messages.
std::string FormatHostList(const std::vector<HostSpec>& hosts);

}  // namespace hvd::launcher
