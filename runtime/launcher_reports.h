// What a worker tells its launcher through the rendezvous, beside the job
// itself: its metrics every interval, its flight recorder when the
// launcher asks, and (rank 0's stall inspector) the asks for every rank's
// flight recorder. All best effort: the job never waits on them, but for
// the one wait AskForFlightDumps says.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/metrics.h"

namespace hvd::rendezvous {
class RendezvousClient;
}

namespace hvd::runtime {

// Every interval, and once more at the end, this rank's report goes to the
// rendezvous under `key` (metrics/HOST/SLOT, a job-wide key: the launcher
// reads the latest of each worker, whatever generation it is in).
class MetricsPublisher {
 public:
  // `arrivals`: this rank's recent submissions for `arrivals_key` ("" while
  // there are none).
  MetricsPublisher(std::shared_ptr<rendezvous::RendezvousClient> client,
                   std::string key, metrics::Labels labels,
                   std::chrono::milliseconds interval, std::string arrivals_key,
                   std::function<std::string()> arrivals);
  ~MetricsPublisher();

 private:
  void Loop();
  void Publish();

  std::shared_ptr<rendezvous::RendezvousClient> client_;
  std::string key_;
  metrics::Labels labels_;
  std::chrono::milliseconds interval_;
  std::string arrivals_key_;
  std::function<std::string()> arrivals_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// Answers the launcher's requests for this rank's flight recorder
// (rendezvous/flight_keys.h): a wait on the next request stays armed at
// the rendezvous (no thread, no polling), and its callback publishes the
// dump, then arms the wait on the one after. Gone with its owner: a
// callback after that does nothing.
class FlightResponder {
 public:
  FlightResponder(const std::shared_ptr<rendezvous::RendezvousClient>& client,
                  std::string host, int slot,
                  std::function<std::string()> dump);
  ~FlightResponder();

 private:
  struct State {
    std::weak_ptr<rendezvous::RendezvousClient> client;
    std::string host;
    int slot = 0;
    std::mutex mu;
    bool alive = true;  // guarded by mu; `dump` may run only while it holds
    std::function<std::string()> dump;
  };
  static void Arm(const std::shared_ptr<State>& state, uint64_t n);

  std::shared_ptr<State> state_;
};

// Rank 0's stall inspector asks the launcher for every rank's flight
// recorder (rendezvous/flight_keys.h). Before a stall shutdown (`final`)
// it waits for the launcher's report (the other ranks must still be there
// to answer), at most a little longer than the launcher waits for dumps,
// and only when a launcher that answers runs the job.
std::function<void(const std::string& stalled, bool final)> AskForFlightDumps(
    const std::shared_ptr<rendezvous::RendezvousClient>& client, int generation,
    int rank);

}  // namespace hvd::runtime
