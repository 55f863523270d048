// --metrics-port and --monitor for the length of a job: the /metrics
// endpoint over the workers' reports (and /debug/collectives), the live
// page at / with its /api/state (live_page.h, live_state.h), the live
// health lines, who arrives last at the collectives (launcher/stragglers.h,
// read once a second), and the summary at the end (Finish).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics_http.h"
#include "common/status.h"
#include "launcher/cli.h"
#include "launcher/job_rendezvous.h"
#include "launcher/live_state.h"
#include "launcher/stragglers.h"

namespace hvd::launcher {

class JobWatch {
 public:
  // Workers report once a second when anyone watches (sets their
  // HVD_METRICS_INTERVAL_MS in `env`).
  static void AskWorkers(const LaunchOptions& o,
                         std::map<std::string, std::string>& env);

  // `size`: the job's workers (for the bus bandwidth and hvd_job_workers).
  static StatusOr<std::unique_ptr<JobWatch>> Start(const LaunchOptions& o,
                                                   JobRendezvous* job,
                                                   int size);

  // Stops the lines and prints the summary (the workers' last reports
  // came as they shut down). Idempotent.
  void Finish();
  ~JobWatch();

 private:
  JobWatch() = default;
  void Loop();
  // The pages of --metrics-port.
  std::map<std::string, metrics::HttpServer::Page> Pages();
  // The live page's sample of the `seconds` that ended at `t`, since the
  // reports `before` (replaced by the new ones).
  void Sample(std::chrono::steady_clock::time_point t, double seconds,
              std::vector<std::string>& before);
  // Reads the workers' arrivals into stragglers_.
  void CountArrivals();
  std::string StragglerSamples();
  // "monitor: stragglers: ..." when a rank stands out, else "".
  std::string StragglerLine();

  JobRendezvous* job_ = nullptr;
  int size_ = 0;
  bool monitor_ = false;
  std::chrono::seconds interval_{10};
  std::chrono::steady_clock::time_point start_;
  std::unique_ptr<metrics::HttpServer> server_;
  bool finished_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
  std::mutex stragglers_mu_;  // the scrape's thread and the loop's
  std::unique_ptr<Stragglers> stragglers_;
  LiveJob live_job_;
  // Rank 0's HOROVOD_TIMELINE, absolute ("" when none), served as
  // /timeline.json where this machine can read it.
  std::string timeline_;
  bool live_ = false;    // --metrics-port: the loop samples for the page
  std::mutex live_mu_;   // the page's thread and the loop's
  LiveHistory history_;  // guarded by live_mu_
  // The members as of the last sample, and when they last changed
  // (seconds into the job); guarded by live_mu_.
  std::vector<rendezvous::Member> members_;
  double members_changed_s_ = 0;
};

}  // namespace hvd::launcher
