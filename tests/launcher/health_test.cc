#include "launcher/health.h"

#include <gtest/gtest.h>

#include "common/metrics_format.h"

namespace hvd::launcher {
namespace {

std::string Report(const std::string& host, int rank, double steps,
                   double step_sum, double busy, double transfer, double bytes,
                   double cpu) {
  metrics::Labels l = {{"rank", std::to_string(rank)}, {"host", host}};
  metrics::Labels ar = l;
  ar.push_back({"op", "allreduce"});
  return metrics::Sample("hvd_step_seconds_sum", l, step_sum) +
         metrics::Sample("hvd_step_seconds_count", l, steps) +
         metrics::Sample("hvd_allreduce_busy_seconds_total", l, busy) +
         metrics::Sample("hvd_collective_seconds_sum", ar, transfer) +
         metrics::Sample("hvd_collective_bytes_total", ar, bytes) +
         metrics::Sample("process_cpu_seconds_total", l, cpu) +
         metrics::Sample("process_resident_memory_bytes", l, 1e9) +
         metrics::Sample("hvd_host_memory_bytes", l, 8e9) +
         metrics::Sample("hvd_host_cpus", l, 4);
}

// Figures over an interval are the differences of the counters, per host.
TEST(HealthTest, IntervalFiguresPerHost) {
  std::vector<std::string> before = {
      Report("a", 0, 10, 1.0, 0.1, 0.05, 1e6, 2),
      Report("a", 1, 10, 1.0, 0.1, 0.05, 1e6, 2)};
  std::vector<std::string> after = {Report("a", 0, 20, 2.0, 0.4, 0.25, 5e8, 4),
                                    Report("a", 1, 20, 2.0, 0.4, 0.25, 5e8, 4)};
  auto hosts = Health(before, after, 1.0, 2);
  ASSERT_EQ(hosts.size(), 1u);
  const HostHealth& h = hosts[0];
  EXPECT_DOUBLE_EQ(h.step_s, 0.1);           // 2 s over 20 steps
  EXPECT_DOUBLE_EQ(h.allreduce_share, 0.3);  // 0.6 s of 2 s
  // (2 x 499e6 bytes) / (0.4 s) x 2(n-1)/n, n = 2.
  EXPECT_NEAR(h.bus_bytes_per_s, 2 * 499e6 / 0.4, 1);
  EXPECT_DOUBLE_EQ(h.cpu_share, 4.0 / 4);  // 4 CPU s in 1 s of 4 CPUs
  EXPECT_DOUBLE_EQ(h.memory_share, 0.25);  // 2 GB of 8
  const std::string line = HealthLine(h);
  EXPECT_EQ(line,
            "host a: step 0.100 s, allreduce 30 % of step !, bus 2.50 GB/s, "
            "CPU 100 %, memory 25 %");
  const std::string summary = HealthSummary(hosts);
  EXPECT_NE(summary.find("to try: allreduce takes 30 % of a step: raise "
                         "--fusion-threshold-mb"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("CPU is busy"), std::string::npos) << summary;
}

// A worker that joined since the last look counts from zero; a job with
// no steps shares its allreduce time of the wall time.
TEST(HealthTest, NewWorkersAndNoSteps) {
  auto hosts = Health({}, {Report("b", 3, 0, 0, 0.5, 0.5, 1e6, 0.2)}, 1.0, 4);
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_LT(hosts[0].step_s, 0);
  EXPECT_DOUBLE_EQ(hosts[0].allreduce_share, 0.5);
  EXPECT_NE(HealthLine(hosts[0]).find("no steps, allreduce 50 % of time !"),
            std::string::npos)
      << HealthLine(hosts[0]);
}

// GPU figures: utilisation averaged over the host's ranks, memory counted
// once per GPU however many ranks share it; each out of range is marked
// and gets its advice.
TEST(HealthTest, GpuFigures) {
  auto with_gpu = [](int rank, const std::string& gpu, double util,
                     double used) {
    metrics::Labels l = {
        {"rank", std::to_string(rank)}, {"host", "g"}, {"gpu", gpu}};
    return Report("g", rank, 10, 1.0, 0.1, 0.05, 1e6, 4) +
           metrics::Sample("hvd_gpu_utilization_ratio", l, util) +
           metrics::Sample("hvd_gpu_memory_used_bytes", l, used) +
           metrics::Sample("hvd_gpu_memory_total_bytes", l, 10e9);
  };
  auto hosts =
      Health({},
             {with_gpu(0, "0", 0.5, 9.5e9), with_gpu(1, "0", 0.3, 9.5e9),
              with_gpu(2, "1", 0.4, 9.5e9)},
             1.0, 3);
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_DOUBLE_EQ(hosts[0].gpu_share, 0.4);
  EXPECT_DOUBLE_EQ(hosts[0].gpu_memory_share, 0.95);  // 19 GB of 20
  const std::string line = HealthLine(hosts[0]);
  EXPECT_NE(line.find("GPU 40 % !, GPU memory 95 % !"), std::string::npos)
      << line;
  const std::string summary = HealthSummary(hosts);
  EXPECT_NE(summary.find("to try: the GPU computes 40 % of the time"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("to try: GPU memory is 95 % full"), std::string::npos)
      << summary;
  // Without GPU samples the line says nothing of GPUs.
  auto cpu_only =
      Health({}, {Report("c", 0, 10, 1.0, 0.1, 0.05, 1e6, 4)}, 1.0, 1);
  EXPECT_LT(cpu_only[0].gpu_share, 0);
  EXPECT_EQ(HealthLine(cpu_only[0]).find("GPU"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
