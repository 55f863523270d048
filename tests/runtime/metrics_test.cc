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

TEST(MetricsTest, CycleTalliesAddToTheTotals) {
  ASSERT_EQ(metrics::LatencyBuckets().size(), metrics::kLatencyBucketCount);
  Metrics m;
  // Nothing express yet: no sample of its transport.
  EXPECT_EQ(m.Report(kLabels).find("transport=\"negotiation\""),
            std::string::npos);
  Metrics::CycleTally* a = m.NewCycleTally();
  Metrics::CycleTally* b = m.NewCycleTally();
  a->Express(2e-6, 4, 3e-6, 3e-6);
  a->Express(0.5, 8, 0.002, -1);
  b->Express(4e-6, 16, 5e-6, 1.0);
  a->CacheLookup(true);
  a->CacheLookup(false);
  b->CacheLookup(true);
  b->CacheLookup(true);
  m.Negotiation(0.02);  // the locked path's, in the same histogram
  const std::string r = m.Report(kLabels);
  const metrics::Labels express = {{"op", "allreduce"},
                                   {"transport", "negotiation"}};
  EXPECT_EQ(metrics::SumSamples(r, "hvd_collective_calls_total", express), 3);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_collective_tensors_total", express), 3);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_collective_bytes_total", express), 28);
  EXPECT_DOUBLE_EQ(
      metrics::SumSamples(r, "hvd_collective_seconds_sum", express),
      3e-6 + 0.002 + 5e-6);
  // Cumulative buckets: two calls within 10 us, all three within 3 ms.
  EXPECT_EQ(
      metrics::SumSamples(r, "hvd_collective_seconds_bucket",
                          {{"transport", "negotiation"}, {"le", "1e-05"}}),
      2);
  EXPECT_EQ(
      metrics::SumSamples(r, "hvd_collective_seconds_bucket",
                          {{"transport", "negotiation"}, {"le", "0.003"}}),
      3);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_negotiation_seconds_count"), 4);
  EXPECT_DOUBLE_EQ(metrics::SumSamples(r, "hvd_negotiation_seconds_sum"),
                   2e-6 + 0.5 + 4e-6 + 0.02);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_response_cache_hits_total"), 3);
  EXPECT_EQ(metrics::SumSamples(r, "hvd_response_cache_misses_total"), 1);
  EXPECT_DOUBLE_EQ(metrics::SumSamples(r, "hvd_allreduce_busy_seconds_total"),
                   3e-6 + 1.0);
  // Off, a tally counts nothing more.
  m.set_enabled(false);
  a->Express(1e-6, 4, 1e-6, 1e-6);
  a->CacheLookup(true);
  const std::string off = m.Report(kLabels);
  EXPECT_EQ(metrics::SumSamples(off, "hvd_collective_calls_total", express), 3);
  EXPECT_EQ(metrics::SumSamples(off, "hvd_response_cache_hits_total"), 3);
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
