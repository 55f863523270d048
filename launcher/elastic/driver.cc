#include "launcher/elastic/driver.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <set>

#include "launcher/say.h"
#include "rendezvous/host_updates.h"

namespace hvd::launcher::elastic {
namespace {

// How often the driver asks whether a new generation formed, while one is
// awaited.
constexpr std::chrono::milliseconds kFormationPoll{200};

std::vector<rendezvous::HostSlots> SlotsOf(const std::vector<HostSpec>& hosts) {
  std::vector<rendezvous::HostSlots> out;
  for (const HostSpec& h : hosts) out.push_back({h.host, h.slots, 0});
  return out;
}

class Fixed final : public HostSource {
 public:
  explicit Fixed(std::vector<HostSpec> hosts) : hosts_(std::move(hosts)) {}
  std::optional<std::vector<HostSpec>> Take() override {
    if (taken_) return std::nullopt;
    taken_ = true;
    return hosts_;
  }

 private:
  std::vector<HostSpec> hosts_;
  bool taken_ = false;
};

class Polled final : public HostSource {
 public:
  Polled(HostDiscovery discovery, std::chrono::milliseconds period,
         std::function<Status(const HostSpec&)> usable)
      : discovery_(std::move(discovery)),
        period_(period),
        usable_(std::move(usable)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Polled() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::optional<std::vector<HostSpec>> Take() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<std::vector<HostSpec>> out;
    out.swap(latest_);
    return out;
  }

 private:
  void Loop() {
    std::string last_error;
    std::set<std::string> refused;  // hosts whose refusal was said
    for (;;) {
      auto answer = discovery_.Poll();
      std::vector<HostSpec> hosts;
      if (answer.ok()) {
        last_error.clear();
        for (const HostSpec& h : *answer) {
          Status s = h.slots > 0 ? usable_(h) : Status::Ok();
          if (s.ok()) {
            refused.erase(h.host);
            hosts.push_back(h);
          } else if (refused.insert(h.host).second) {
            Say("elastic: leaving out host " + h.host + ": " + s.message());
          }
        }
      } else if (answer.status().message() != last_error) {
        // Once per new error: the last good answer stands meanwhile.
        last_error = answer.status().message();
        Say(last_error + "; keeping the last hosts it gave");
      }
      std::unique_lock<std::mutex> lock(mu_);
      if (answer.ok()) latest_ = std::move(hosts);
      if (cv_.wait_for(lock, period_, [this] { return stop_; })) return;
    }
  }

  HostDiscovery discovery_;
  std::chrono::milliseconds period_;
  std::function<Status(const HostSpec&)> usable_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                            // guarded by mu_
  std::optional<std::vector<HostSpec>> latest_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace

std::unique_ptr<HostSource> FixedHosts(std::vector<HostSpec> hosts) {
  return std::make_unique<Fixed>(std::move(hosts));
}

std::unique_ptr<HostSource> PolledHosts(
    HostDiscovery discovery, std::chrono::milliseconds period,
    std::function<Status(const HostSpec&)> usable) {
  return std::make_unique<Polled>(std::move(discovery), period,
                                  std::move(usable));
}

ElasticDriver::ElasticDriver(ElasticOptions options,
                             HostManagerOptions host_options,
                             std::unique_ptr<HostSource> source,
                             ElasticDriverHooks hooks, bool verbose)
    : hosts_(host_options),
      planner_(options, &hosts_),
      source_(std::move(source)),
      hooks_(std::move(hooks)),
      verbose_(verbose) {}

WorkerDriver::Step ElasticDriver::Tick() {
  const auto now = Clock::now();
  if ((awaiting_formation_ || finish_to_judge_) &&
      now - last_formation_check_ >= kFormationPoll) {
    if (finish_to_judge_) {
      AbandonUnproven(*finish_to_judge_);
    } else {
      CheckFormed();
    }
  }
  if (auto answer = source_->Take()) {
    HostChange change = hosts_.Update(*answer);
    if (verbose_ && change.any()) {
      Say("elastic: discovery now gives " + FormatHostList(*answer));
    }
  }
  Actions a = planner_.Tick(now);
  Step step;
  for (const Slot& s : a.stop) step.stop.push_back({s.host, s.slot});
  if (a.failure) {
    step.failure = *a.failure;
    return step;
  }
  step.done = a.done;
  if (a.membership.empty()) return step;

  std::vector<rendezvous::HostSlots> slots;
  for (const HostSpec& h : a.membership) {
    slots.push_back({h.host, h.slots, hooks_.gpus(h)});
  }
  if (Status s = hooks_.set_membership(slots, a.size); !s.ok()) {
    step.failure = "cannot set the job's hosts: " + s.message();
    return step;
  }
  ++memberships_;
  if (memberships_ > 1) AnnounceHostUpdate(applied_, a.membership, now);
  applied_ = a.membership;
  awaiting_formation_ = true;
  for (const Slot& s : a.start) proven_.erase(s);  // a new process there
  Say("elastic: " + std::to_string(a.size) + " worker" +
      (a.size == 1 ? "" : "s") + " on " + FormatHostList(a.membership) +
      (memberships_ > 1 ? " (reset " + std::to_string(planner_.resets()) + ")"
                        : ""));
  const std::vector<rendezvous::Assignment> ranks =
      rendezvous::ComputeAssignments(slots);
  for (const Slot& s : a.start) {
    int first = 0;
    const HostSpec* host = nullptr;
    for (const HostSpec& h : a.membership) {
      if (h.host == s.host) {
        host = &h;
        break;
      }
      first += h.slots;
    }
    if (host == nullptr) continue;  // the planner starts only members
    const rendezvous::Assignment& assignment = ranks[first + s.slot];
    auto spec = hooks_.make_spec(*host, s.slot, assignment);
    if (!spec.ok()) {
      Say("elastic: cannot start a worker on " + s.host + ": " +
          spec.status().message());
      planner_.WorkerExited(s, 127, now);
      continue;
    }
    step.start.push_back({s.host, s.slot, assignment.rank, std::move(*spec)});
  }
  return step;
}

void ElasticDriver::AnnounceHostUpdate(const std::vector<HostSpec>& before,
                                       const std::vector<HostSpec>& after,
                                       Clock::time_point now) {
  if (!hooks_.set_key) return;
  const rendezvous::HostUpdateResult result =
      rendezvous::CompareHosts(SlotsOf(before), SlotsOf(after));
  if (result == rendezvous::HostUpdateResult::kNoUpdate) return;
  if (result == rendezvous::HostUpdateResult::kRemoved) {
    // Only failed hosts left: the survivors reset on the failure itself.
    bool all_failed = true;
    for (const HostSpec& h : before) {
      const bool kept =
          std::any_of(after.begin(), after.end(), [&](const HostSpec& k) {
            return k.host == h.host && k.slots >= h.slots;
          });
      if (!kept && !hosts_.Blacklisted(h.host, now)) all_failed = false;
    }
    if (all_failed) return;
  }
  const int n = host_updates_ + 1;
  const rendezvous::HostUpdate update{static_cast<int64_t>(std::time(nullptr)),
                                      result};
  Status s = hooks_.set_key(rendezvous::HostUpdateKey(n),
                            rendezvous::FormatHostUpdate(update));
  if (s.ok()) {
    s = hooks_.set_key(rendezvous::kHostUpdateCountKey, std::to_string(n));
  }
  if (!s.ok()) {
    // The workers still see the new membership at their next commit.
    Say("elastic: cannot tell the workers of the host change: " + s.message());
    return;
  }
  host_updates_ = n;
}

ElasticDriver::Formation ElasticDriver::CheckFormed() {
  last_formation_check_ = Clock::now();
  if (!hooks_.members) return Formation::kNotFormed;
  const std::vector<rendezvous::Member> members = hooks_.members();
  std::set<Slot> listed, applied;
  for (const rendezvous::Member& m : members) listed.insert({m.host, m.slot});
  for (const HostSpec& h : applied_) {
    for (int i = 0; i < h.slots; ++i) applied.insert({h.host, i});
  }
  if (members.empty() || listed != applied) return Formation::kUnknown;
  for (const rendezvous::Member& m : members) {
    if (m.generation == 0) return Formation::kNotFormed;  // not all joined
  }
  proven_.insert(listed.begin(), listed.end());
  awaiting_formation_ = false;
  return Formation::kFormed;
}

void ElasticDriver::AbandonUnproven(const Slot& finished) {
  if (CheckFormed() == Formation::kUnknown) {
    finish_to_judge_ = finished;
    return;
  }
  finish_to_judge_.reset();
  if (!proven_.count(finished)) return;  // not a worker that joins at all
  std::vector<Slot> stranded;
  std::string where;
  for (const Slot& s : planner_.running()) {
    if (s == finished || proven_.count(s)) continue;
    stranded.push_back(s);
    where += (where.empty() ? "" : ", ") + s.host + " (slot " +
             std::to_string(s.slot) + ")";
  }
  if (stranded.empty()) return;
  Say("elastic: a worker finished; stopping the workers started for a "
      "reset that will not come now: " +
      where);
  planner_.Abandon(stranded);
}

void ElasticDriver::Exited(const std::string& host, int slot, int exit_code) {
  if (exit_code == 0 && !planner_.finishing()) AbandonUnproven({host, slot});
  const bool out_before = hosts_.Blacklisted(host, Clock::now());
  planner_.WorkerExited({host, slot}, exit_code, Clock::now());
  if (!out_before && hosts_.Blacklisted(host, Clock::now())) {
    Say("elastic: host " + host + " leaves the job (a worker failed)");
  }
}

}  // namespace hvd::launcher::elastic
