// The hosts of an elastic job as discovery reports them over time, as
// Horovod's host manager keeps them: hosts keep their place in the
// assignment order and new ones go last (so the oldest hosts hold the
// lowest ranks), and a host whose workers failed is blacklisted, for good
// or, with --blacklist-cooldown-range, for a cooldown that doubles with
// each failure. Pure: the caller passes the time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "launcher/hosts.h"

namespace hvd::launcher::elastic {

using Clock = std::chrono::steady_clock;

struct HostManagerOptions {
  // --blacklist-cooldown-range LO HI in seconds; both 0: a blacklisted host
  // never comes back (Horovod without the flag).
  double cooldown_lo_s = 0;
  double cooldown_hi_s = 0;
  uint64_t seed = 1;  // the cooldowns' jitter
};

// What changed between two answers of discovery (Horovod's
// HostUpdateResult): hosts or slots added, removed, or both.
struct HostChange {
  bool added = false;
  bool removed = false;
  bool any() const { return added || removed; }
  bool operator==(const HostChange&) const = default;
};

class HostManager {
 public:
  explicit HostManager(HostManagerOptions options = {});

  // Discovery's latest answer. Hosts with 0 slots count as absent.
  HostChange Update(const std::vector<HostSpec>& discovered);

  // The hosts to run on at `now`, in assignment order: discovered, with
  // slots, and not blacklisted (or cooled down).
  std::vector<HostSpec> Current(Clock::time_point now) const;
  int Slots(Clock::time_point now) const;

  // The workers of `host` failed: it leaves the job until its cooldown
  // ends (never, without a cooldown range). As Horovod computes it, the
  // n-th failure of a host keeps it out lo * 2^n + U(0, 1) * lo seconds,
  // kept within [lo, hi]. A failure during a cooldown is not counted
  // (the caller blacklists only hosts that are not).
  void Blacklist(const std::string& host, Clock::time_point now);
  bool Blacklisted(const std::string& host, Clock::time_point now) const;
  // When the next cooldown ends, if some host is cooling down at `now`.
  std::optional<Clock::time_point> NextCooldownEnd(Clock::time_point now) const;

 private:
  struct State {
    int failures = 0;
    bool forever = false;
    Clock::time_point until{};
  };
  HostManagerOptions options_;
  std::vector<HostSpec> order_;  // every host discovery ever named, in order
  std::map<std::string, int> slots_;  // the latest answer
  std::map<std::string, State> state_;
  std::mt19937_64 rng_;
};

// How many workers an elastic job runs on `slots` free slots: all of them
// up to max_np (0: no maximum), or 0 while there are fewer than min_np.
int ElasticSize(int slots, int min_np, int max_np);

}  // namespace hvd::launcher::elastic
