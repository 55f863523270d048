#include "runtime/launcher_reports.h"

#include <pthread.h>

#include <atomic>
#include <vector>

#include "common/parse.h"
#include "rendezvous/client.h"
#include "rendezvous/flight_keys.h"

namespace hvd::runtime {

MetricsPublisher::MetricsPublisher(
    std::shared_ptr<rendezvous::RendezvousClient> client, std::string key,
    metrics::Labels labels, std::chrono::milliseconds interval,
    std::string arrivals_key, std::function<std::string()> arrivals)
    : client_(std::move(client)),
      key_(std::move(key)),
      labels_(std::move(labels)),
      interval_(interval),
      arrivals_key_(std::move(arrivals_key)),
      arrivals_(std::move(arrivals)) {
  thread_ = std::thread([this] { Loop(); });
}

MetricsPublisher::~MetricsPublisher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Publish();
}

void MetricsPublisher::Loop() {
  pthread_setname_np(pthread_self(), "hvd-metrics");
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    Publish();
    lock.lock();
  }
}

void MetricsPublisher::Publish() {
  // Best effort: a lost report is followed by the next.
  (void)client_->Set(key_, Metrics::Process().Report(labels_));
  if (std::string a = arrivals_(); !a.empty()) {
    (void)client_->Set(arrivals_key_, a);
  }
}

FlightResponder::FlightResponder(
    const std::shared_ptr<rendezvous::RendezvousClient>& client,
    std::string host, int slot, std::function<std::string()> dump)
    : state_(std::make_shared<State>()) {
  state_->client = client;
  state_->host = std::move(host);
  state_->slot = slot;
  state_->dump = std::move(dump);
  // Requests so far: this responder answers the ones to come.
  uint64_t next = 1;
  if (auto count = client->Get(rendezvous::kFlightCountKey); count.ok()) {
    auto n = ParseInt64(*count, rendezvous::kFlightCountKey, 0, INT64_MAX);
    if (n.ok()) next = static_cast<uint64_t>(*n) + 1;
  }
  Arm(state_, next);
}

FlightResponder::~FlightResponder() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->alive = false;
}

void FlightResponder::Arm(const std::shared_ptr<State>& state, uint64_t n) {
  auto client = state->client.lock();
  if (!client) return;
  client->WaitAsync(
      {rendezvous::FlightRequestKey(n)}, std::chrono::hours(24),
      [state, n](StatusOr<std::vector<std::string>> asked) {
        // Cancelled or unreachable: the job or this responder is ending.
        if (!asked.ok() &&
            asked.status().code() != StatusCode::kDeadlineExceeded) {
          return;
        }
        std::string dump;
        {
          std::lock_guard<std::mutex> lock(state->mu);
          if (!state->alive) return;
          if (asked.ok()) dump = state->dump();
        }
        auto client = state->client.lock();
        if (!client) return;
        if (asked.ok()) {
          client->SetAsync(
              rendezvous::FlightDumpKey(n, state->host, state->slot), dump,
              [](Status) {});  // best effort: the launcher names the silent
        }
        Arm(state, asked.ok() ? n + 1 : n);
      });
}

std::function<void(const std::string&, bool)> AskForFlightDumps(
    const std::shared_ptr<rendezvous::RendezvousClient>& client, int generation,
    int rank) {
  std::weak_ptr<rendezvous::RendezvousClient> weak = client;
  auto asks = std::make_shared<std::atomic<int>>(0);
  return
      [weak, generation, rank, asks](const std::string& stalled, bool final) {
        auto c = weak.lock();
        if (!c) return;
        const std::string token = "g" + std::to_string(generation) + "r" +
                                  std::to_string(rank) + "n" +
                                  std::to_string(++*asks);
        Status s = c->Set(rendezvous::kFlightAskKey,
                          token + (final ? " shutdown " : " stall ") + stalled);
        if (!s.ok() || !final || !c->Get(rendezvous::kFlightAnswererKey).ok()) {
          return;
        }
        (void)c->Wait({rendezvous::FlightAskedKey(token)},
                      std::chrono::seconds(15));
      };
}

}  // namespace hvd::runtime
