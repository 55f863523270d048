#include "common/metrics_format.h"

#include <gtest/gtest.h>

namespace hvd::metrics {
namespace {

TEST(MetricsFormatTest, SamplesLabelsAndHistograms) {
  EXPECT_EQ(Sample("a_total", {{"rank", "0"}, {"host", "x\"y\\z"}}, 3),
            "a_total{rank=\"0\",host=\"x\\\"y\\\\z\"} 3\n");
  EXPECT_EQ(Sample("g", {}, 0.25), "g 0.25\n");
  const std::string h =
      HistogramSamples("t_seconds", {{"rank", "1"}}, {0.1, 1}, {2, 0, 3}, 7.5);
  EXPECT_EQ(h,
            "t_seconds_bucket{rank=\"1\",le=\"0.1\"} 2\n"
            "t_seconds_bucket{rank=\"1\",le=\"1\"} 2\n"
            "t_seconds_bucket{rank=\"1\",le=\"+Inf\"} 5\n"
            "t_seconds_sum{rank=\"1\"} 7.5\n"
            "t_seconds_count{rank=\"1\"} 5\n");
}

// The launcher's exposition: one HELP and TYPE per family, every report's
// samples under it, lines of unknown families dropped.
TEST(MetricsFormatTest, ExpositionGroupsTheRanksReports) {
  const std::string r0 =
      Sample("hvd_collective_bytes_total", {{"rank", "0"}, {"op", "allreduce"}},
             10) +
      HistogramSamples("hvd_step_seconds", {{"rank", "0"}}, {1}, {1, 0}, 0.5) +
      "made_up_total 1\n";
  const std::string r1 = Sample("hvd_collective_bytes_total",
                                {{"rank", "1"}, {"op", "allreduce"}}, 20);
  const std::string out = Exposition({r0, r1});
  EXPECT_EQ(out.find("made_up"), std::string::npos);
  const size_t type = out.find("# TYPE hvd_collective_bytes_total counter\n");
  ASSERT_NE(type, std::string::npos) << out;
  EXPECT_NE(out.find("rank=\"0\",op=\"allreduce\"} 10\n"), std::string::npos);
  EXPECT_NE(out.find("rank=\"1\",op=\"allreduce\"} 20\n"), std::string::npos);
  EXPECT_NE(out.find("# TYPE hvd_step_seconds histogram\n"), std::string::npos);
  EXPECT_NE(out.find("hvd_step_seconds_count{rank=\"0\"} 1\n"),
            std::string::npos);
  // Families with no samples get no header.
  EXPECT_EQ(out.find("hvd_stall_warnings_total"), std::string::npos);
  EXPECT_EQ(
      SumSamples(r0 + r1, "hvd_collective_bytes_total", {{"op", "allreduce"}}),
      30);
  EXPECT_EQ(SumSamples(r0 + r1, "hvd_collective_bytes_total", {{"rank", "1"}}),
            20);
  EXPECT_EQ(SumSamples(r0, "hvd_step_seconds_sum"), 0.5);
}

}  // namespace
}  // namespace hvd::metrics
