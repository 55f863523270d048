// --monitor's figures: the live health lines and the end-of-job summary,
// from the workers' metrics reports (runtime/metrics.h), which reach the
// launcher through the rendezvous. Pure. (common/metrics_http.h serves
// the reports for --metrics-port.)
#pragma once

#include <string>
#include <vector>

namespace hvd::launcher {

// One host's figures over an interval, from its ranks' reports at its
// start and end (pure). Absent figures are negative.
struct HostHealth {
  std::string host;
  int rank = -1;                // RankHealth's: the rank the figures are of
  double step_s = -1;           // mean time between steps
  double allreduce_share = -1;  // allreduce time / step time (0..1)
  double bus_bytes_per_s = -1;  // allreduce bus bandwidth
  double cpu_share = -1;        // process CPU / (wall x host CPUs)
  double memory_share = -1;     // resident / host memory
  // Where the ranks compute on GPUs: the mean share of time a kernel ran,
  // and memory in use over the GPUs' memory (read at the interval's end).
  double gpu_share = -1;
  double gpu_memory_share = -1;
};

// Which of a host's values are outside their healthy range: allreduce
// over 20 % of a step, CPU and GPU busy under 70 % of the time, memory
// and GPU memory over 90 % full (absent values are never marked).
struct HealthMarks {
  bool allreduce = false, cpu = false, memory = false, gpu = false,
       gpu_memory = false;
};
HealthMarks Marks(const HostHealth& h);

// `before` and `after`: reports by worker (the same keys); `seconds` of
// wall time between them; `size`: the job's ranks (for bus bandwidth).
std::vector<HostHealth> Health(const std::vector<std::string>& before,
                               const std::vector<std::string>& after,
                               double seconds, int size);
// The same figures for each rank alone, by rank: memory is its own share
// of its host's; CPU is left out (a host's ranks share its CPUs).
std::vector<HostHealth> RankHealth(const std::vector<std::string>& before,
                                   const std::vector<std::string>& after,
                                   double seconds, int size);

// "host a: step 0.120 s, allreduce 12 % of step, bus 1.50 GB/s, CPU 85 %,
// memory 3 %" (then "GPU 80 %, GPU memory 40 %" where GPUs are used) with
// a '!' after each value outside the healthy range (allreduce under 20 %
// of a step, CPU and GPU over 70 %, memory under 90 %).
std::string HealthLine(const HostHealth& h);

// The end-of-job table of the same figures (over the whole job), then what
// to try for each value out of range.
std::string HealthSummary(const std::vector<HostHealth>& hosts);

}  // namespace hvd::launcher
