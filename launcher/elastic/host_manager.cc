#include "launcher/elastic/host_manager.h"

#include <algorithm>
#include <cmath>

#include "rendezvous/host_updates.h"

namespace hvd::launcher::elastic {

HostManager::HostManager(HostManagerOptions options)
    : options_(options), rng_(options.seed) {}

HostChange HostManager::Update(const std::vector<HostSpec>& discovered) {
  std::map<std::string, int> now;
  for (const HostSpec& h : discovered) {
    if (h.slots > 0) now[h.host] = h.slots;
    auto known =
        std::find_if(order_.begin(), order_.end(),
                     [&](const HostSpec& o) { return o.host == h.host; });
    if (known == order_.end()) {
      order_.push_back(h);
    } else {
      known->user = h.user;
    }
  }
  const int result = static_cast<int>(rendezvous::CompareSlots(slots_, now));
  slots_ = std::move(now);
  return HostChange{
      (result & static_cast<int>(rendezvous::HostUpdateResult::kAdded)) != 0,
      (result & static_cast<int>(rendezvous::HostUpdateResult::kRemoved)) != 0};
}

std::vector<HostSpec> HostManager::Current(Clock::time_point now) const {
  std::vector<HostSpec> out;
  for (const HostSpec& h : order_) {
    auto it = slots_.find(h.host);
    if (it == slots_.end() || Blacklisted(h.host, now)) continue;
    HostSpec spec = h;
    spec.slots = it->second;
    out.push_back(std::move(spec));
  }
  return out;
}

int HostManager::Slots(Clock::time_point now) const {
  int n = 0;
  for (const HostSpec& h : Current(now)) n += h.slots;
  return n;
}

void HostManager::Blacklist(const std::string& host, Clock::time_point now) {
  State& s = state_[host];
  ++s.failures;
  if (options_.cooldown_hi_s <= 0) {
    s.forever = true;
    return;
  }
  // Horovod's: lo * 2^n plus up to lo of jitter, then kept within
  // [lo, hi].
  const double lo = options_.cooldown_lo_s;
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  const double delay =
      lo * std::ldexp(1.0, std::min(s.failures, 30)) + jitter(rng_) * lo;
  const double seconds = std::max(lo, std::min(options_.cooldown_hi_s, delay));
  s.until = now + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(seconds));
}

bool HostManager::Blacklisted(const std::string& host,
                              Clock::time_point now) const {
  auto it = state_.find(host);
  if (it == state_.end()) return false;
  return it->second.forever || now < it->second.until;
}

std::optional<Clock::time_point> HostManager::NextCooldownEnd(
    Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  for (const auto& [host, s] : state_) {
    if (s.forever || s.until <= now) continue;
    if (!next || s.until < *next) next = s.until;
  }
  return next;
}

int ElasticSize(int slots, int min_np, int max_np) {
  if (slots < std::max(min_np, 1)) return 0;
  return max_np > 0 ? std::min(slots, max_np) : slots;
}

}  // namespace hvd::launcher::elastic
