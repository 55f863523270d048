// The launcher's window on a running job: GET /metrics in Prometheus' text
// format (--metrics-port), and the live health lines and the end-of-job
// summary of --monitor. The workers' reports reach the launcher through the
// rendezvous (runtime/metrics.h); nothing scrapes the workers.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

// Serves `exposition()` at /metrics on every address, port `port` (0: a
// free one), from a thread of its own, until destroyed.
class MetricsServer {
 public:
  static StatusOr<std::unique_ptr<MetricsServer>> Start(
      int port, std::function<std::string()> exposition);
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  void Loop();
  void Serve(int fd);

  std::function<std::string()> exposition_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
};

// One host's figures over an interval, from its ranks' reports at its
// start and end (pure). Absent figures are negative.
struct HostHealth {
  std::string host;
  double step_s = -1;           // mean time between steps
  double allreduce_share = -1;  // allreduce time / step time (0..1)
  double bus_bytes_per_s = -1;  // allreduce bus bandwidth
  double cpu_share = -1;        // process CPU / (wall x host CPUs)
  double memory_share = -1;     // resident / host memory
};

// `before` and `after`: reports by worker (the same keys); `seconds` of
// wall time between them; `size`: the job's ranks (for bus bandwidth).
std::vector<HostHealth> Health(const std::vector<std::string>& before,
                               const std::vector<std::string>& after,
                               double seconds, int size);

// "host a: step 0.120 s, allreduce 12 % of step, bus 1.50 GB/s, CPU 85 %,
// memory 3 %" with a '!' after each value outside the healthy range
// (allreduce under 20 % of a step, CPU over 70 %, memory under 90 %).
std::string HealthLine(const HostHealth& h);

// The end-of-job table of the same figures (over the whole job), then what
// to try for each value out of range.
std::string HealthSummary(const std::vector<HostHealth>& hosts);

}  // namespace hvd::launcher
