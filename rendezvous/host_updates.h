// Host updates: how an elastic job's launcher tells its workers, as they
// run, that the job's hosts changed (Horovod's worker notifications,
// HostsUpdatedRequest). Pure: no I/O.
//
// The launcher numbers its updates 1, 2, ... and sets each under
// HostUpdateKey(n), then kHostUpdateCountKey to n. A worker learns the
// count when it starts listening and then waits for the key of the next
// number, so it gets every later update once, in order, as soon as it is
// set (a wait on a key, not a poll). Workers act on them at their next
// commit (State.check_host_updates); the membership epoch
// (kMembershipEpochKey) stays the check that never misses a change.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rendezvous/assignment.h"

namespace hvd::rendezvous {

inline constexpr const char* kHostUpdateCountKey = "hvd/host-updates";

// Horovod's HostUpdateResult: what an update did to the job's hosts.
enum class HostUpdateResult : int {
  kNoUpdate = 0,
  kRemoved = 1,
  kAdded = 2,
  kMixed = 3,  // removed | added
};

struct HostUpdate {
  int64_t timestamp = 0;  // seconds since the epoch, as Horovod's driver
  HostUpdateResult result = HostUpdateResult::kNoUpdate;
  bool operator==(const HostUpdate&) const = default;
};

// "hvd/host-update/N".
std::string HostUpdateKey(int n);

// "TIMESTAMP RESULT", and its inverse (InvalidArgument for anything else).
std::string FormatHostUpdate(const HostUpdate& u);
StatusOr<HostUpdate> ParseHostUpdate(std::string_view text);

// What going from hosts `before` to `after` (host -> slots) did: removed
// when a host left or lost slots, added when one came or gained slots.
HostUpdateResult CompareSlots(const std::map<std::string, int>& before,
                              const std::map<std::string, int>& after);
// The same for two host lists (a host named twice counts its slots once
// per line).
HostUpdateResult CompareHosts(const std::vector<HostSlots>& before,
                              const std::vector<HostSlots>& after);

}  // namespace hvd::rendezvous
