#include "runtime/store.h"

#include <algorithm>

#include "common/parse.h"
#include "rendezvous/assignment.h"
#include "rendezvous/client.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How often a wait asks whether its generation is still current: a rank
// stuck in a superseded generation learns it within this, at the cost of
// one small call per waiting rank per period.
constexpr std::chrono::milliseconds kCurrentCheck{500};

class RendezvousStore final : public Store {
 public:
  RendezvousStore(rendezvous::RendezvousClient* client, std::string prefix,
                  int generation)
      : client_(client), prefix_(std::move(prefix)), generation_(generation) {}

  Status Set(const std::string& key, const std::string& value) override {
    return client_->Set(prefix_ + key, value);
  }

  // Waits in slices of kCurrentCheck, asking between them whether the
  // generation is still current (one long wait could not see the epoch
  // move: it completes only when all its keys are set).
  StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string& k : keys) full.push_back(prefix_ + k);
    if (generation_ <= 0) return client_->Wait(full, timeout);
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto left =
          std::max(std::chrono::milliseconds(1),
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - Clock::now()));
      auto got = client_->Wait(full, std::min(left, kCurrentCheck));
      if (got.ok() || got.status().code() != StatusCode::kDeadlineExceeded ||
          Clock::now() >= deadline) {
        return got;
      }
      HVD_RETURN_IF_ERROR(Current());
    }
  }

  Status Current() override {
    if (generation_ <= 0) return Status::Ok();
    auto epoch = client_->Get(rendezvous::kMembershipEpochKey);
    // NotFound: no membership was set since the job began. Other errors:
    // the rendezvous cannot say now; the wait goes on and its own timeout
    // bounds it.
    if (!epoch.ok()) return Status::Ok();
    auto n = ParseInt64(*epoch, rendezvous::kMembershipEpochKey, 0, INT32_MAX);
    if (!n.ok() || *n <= generation_) return Status::Ok();
    return Status::Aborted(
        "generation " + std::to_string(generation_),
        "superseded: the job's membership moved on to generation " +
            std::to_string(*n));
  }

 private:
  rendezvous::RendezvousClient* client_;
  std::string prefix_;
  int generation_;
};

}  // namespace

std::unique_ptr<Store> MakeRendezvousStore(rendezvous::RendezvousClient* client,
                                           std::string prefix, int generation) {
  return std::make_unique<RendezvousStore>(client, std::move(prefix),
                                           generation);
}

}  // namespace hvd::runtime
