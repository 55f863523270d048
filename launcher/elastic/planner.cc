#include "launcher/elastic/planner.h"

#include <algorithm>

namespace hvd::launcher::elastic {
namespace {

int SlotCount(const std::vector<HostSpec>& hosts) {
  int n = 0;
  for (const HostSpec& h : hosts) n += h.slots;
  return n;
}

bool SameHosts(const std::vector<HostSpec>& a, const std::vector<HostSpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].host != b[i].host || a[i].slots != b[i].slots) return false;
  }
  return true;
}

std::set<Slot> SlotsOf(const std::vector<HostSpec>& hosts) {
  std::set<Slot> out;
  for (const HostSpec& h : hosts) {
    for (int s = 0; s < h.slots; ++s) out.insert({h.host, s});
  }
  return out;
}

}  // namespace

ElasticPlanner::ElasticPlanner(ElasticOptions options, HostManager* hosts)
    : options_(options), hosts_(hosts) {}

void ElasticPlanner::WorkerExited(const Slot& slot, int status,
                                  Clock::time_point now) {
  if (!running_.erase(slot)) return;  // stopped by the plan
  if (status == 0) {
    finishing_ = true;
    return;
  }
  if (finishing_) {
    if (!failed_) {
      failed_ = "a worker on " + slot.host + " (slot " +
                std::to_string(slot.slot) + ") failed with status " +
                std::to_string(status) +
                " after others had finished; the job cannot reset now";
    }
    return;
  }
  // Workers of one host often fail together (the host went away): one
  // failure of the host, not one per worker, for its cooldown.
  if (!hosts_->Blacklisted(slot.host, now)) hosts_->Blacklist(slot.host, now);
  const bool any_left = std::any_of(
      running_.begin(), running_.end(),
      [&](const Slot& s) { return !hosts_->Blacklisted(s.host, now); });
  if (!any_left && !failed_) {
    failed_ =
        "every worker failed or runs on a blacklisted host (the last "
        "on " +
        slot.host + ", status " + std::to_string(status) +
        "): no worker is left to go on from";
  }
}

void ElasticPlanner::Abandon(const std::vector<Slot>& slots) {
  for (const Slot& s : slots) {
    if (running_.erase(s)) abandoned_.push_back(s);
  }
}

std::vector<HostSpec> ElasticPlanner::Desired(Clock::time_point now) const {
  std::vector<HostSpec> out;
  int room = options_.max_np > 0 ? options_.max_np : 1 << 30;
  for (HostSpec h : hosts_->Current(now)) {
    if (room <= 0) break;
    h.slots = std::min(h.slots, room);
    room -= h.slots;
    out.push_back(std::move(h));
  }
  return out;
}

Actions ElasticPlanner::Tick(Clock::time_point now) {
  Actions a;
  a.stop.swap(abandoned_);
  auto stop_all = [&] {
    a.stop.insert(a.stop.end(), running_.begin(), running_.end());
    running_.clear();
  };
  if (failed_) {
    a.failure = *failed_;
    stop_all();
    return a;
  }
  if (finishing_) {
    a.done = running_.empty() && a.stop.empty();
    return a;
  }
  std::vector<HostSpec> desired = Desired(now);
  const int slots = SlotCount(desired);
  const int needed =
      started_ ? options_.min_np : std::max(options_.min_np, options_.start_np);
  if (slots < std::max(needed, 1)) {
    if (!short_since_) short_since_ = now;
    if (now - *short_since_ >= options_.elastic_timeout) {
      a.failure = "waited " + std::to_string(options_.elastic_timeout.count()) +
                  " s (--elastic-timeout) for at least " +
                  std::to_string(needed) +
                  (started_ ? " slots (--min-np)" : " slots (-np)") +
                  "; the hosts offer " + std::to_string(slots);
      stop_all();
    }
    return a;
  }
  short_since_.reset();
  if (started_ && SameHosts(desired, membership_)) return a;  // no change
  if (started_) {
    ++resets_;
    if (options_.reset_limit > 0 && resets_ > options_.reset_limit) {
      a.failure = "the job reset " + std::to_string(resets_) +
                  " times, more than --reset-limit " +
                  std::to_string(options_.reset_limit) + " allows";
      stop_all();
      return a;
    }
  }
  started_ = true;
  const std::set<Slot> want = SlotsOf(desired);
  for (const Slot& s : running_) {
    if (!want.count(s)) a.stop.push_back(s);
  }
  for (const Slot& s : a.stop) running_.erase(s);
  for (const Slot& s : want) {
    if (!running_.count(s)) a.start.push_back(s);
  }
  running_.insert(a.start.begin(), a.start.end());
  membership_ = desired;
  a.membership = desired;
  a.size = slots;
  return a;
}

}  // namespace hvd::launcher::elastic
