// The runtime's metrics: what a report holds, its GPU part included (fed by
// a reader standing in for the NCCL backend's).
#include "runtime/metrics.h"

#include <gtest/gtest.h>

#include "common/metrics_format.h"

namespace hvd::runtime {
namespace {

const metrics::Labels kLabels = {{"rank", "1"}, {"host", "a"}};

TEST(MetricsTest, CollectivesAndStepsAreCounted) {
  Metrics m;
  m.Collective("allreduce", "shm", 3, 4096, 0.002);
  m.Collective("allreduce", "shm", 1, 1024, 0.001);
  const auto t0 = Metrics::Clock::now();
  m.Step(t0);
  m.Step(t0 + std::chrono::milliseconds(250));
  const std::string r = m.Report(kLabels);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_collective_bytes_total",
                                {{"op", "allreduce"}, {"transport", "shm"}}),
            5120);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_collective_tensors_total"), 4);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_step_seconds_count"), 1);
  EXPECT_DOUBLE_EQ(metrics::SumSamples(r, "hvd_step_seconds_sum"), 0.25);
  EXPECT_GT(metrics::SumSamples(r, "process_resident_memory_bytes"), 0);
  // No GPU reader: no GPU samples.
  EXPECT_EQ(r.find("hvd_gpu_"), std::string::npos) << r;
}

TEST(MetricsTest, DisabledCountsNothing) {
  Metrics m;
  m.set_enabled(false);
  m.Collective("allreduce", "shm", 1, 1024, 0.001);
  EXPECT_EQ(m.Report(kLabels).find("hvd_collective_bytes_total"),
            std::string::npos);
}

TEST(MetricsTest, GpuSamplesCarryTheDevice) {
  Metrics m;
  m.SetGpuReader([] {
    Metrics::GpuUsage u;
    u.device = 3;
    u.memory_used_bytes = 2e9;
    u.memory_total_bytes = 8e9;
    u.utilization = 0.75;
    return std::optional<Metrics::GpuUsage>(u);
  });
  const std::string r = m.Report(kLabels);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_gpu_memory_used_bytes", {{"gpu", "3"}}),
            2e9);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_gpu_memory_total_bytes"), 8e9);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_gpu_utilization_ratio"), 0.75);
  // Every sample is of a declared family (the exposition gives each its
  // HELP and TYPE).
  const std::string exposition = metrics::Exposition({r}, {});
  EXPECT_NE(exposition.find("# TYPE hvd_gpu_utilization_ratio gauge"),
            std::string::npos)
      << exposition;

  // Memory alone (no NVML): no utilisation sample; a reader that cannot
  // tell: no GPU samples at all.
  m.SetGpuReader([] {
    Metrics::GpuUsage u;
    u.memory_used_bytes = 1;
    u.memory_total_bytes = 2;
    return std::optional<Metrics::GpuUsage>(u);
  });
  EXPECT_EQ(m.Report(kLabels).find("hvd_gpu_utilization_ratio"),
            std::string::npos);
  m.SetGpuReader([] { return std::optional<Metrics::GpuUsage>(); });
  EXPECT_EQ(m.Report(kLabels).find("hvd_gpu_"), std::string::npos);
}

}  // namespace
}  // namespace hvd::runtime
