// Who arrives last: collectives every rank submitted are counted once,
// whatever order the reports come in and however they overlap; the rank
// last most often is named when it stands out.
#include "launcher/stragglers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

// A rank's report: its submissions of "g" from seq `from` to `to`, each at
// seq * 1000 us plus `late_us`.
std::string Report(int rank, const std::string& host, uint64_t from,
                   uint64_t to, int64_t late_us) {
  std::string out = std::to_string(rank) + " " + host + "\n";
  for (uint64_t seq = from; seq <= to; ++seq) {
    out += std::to_string(seq) + " " +
           std::to_string(static_cast<int64_t>(seq) * 1000 + late_us) +
           " grad/w" + std::to_string(seq % 3) + "\n";
  }
  return out;
}

TEST(StragglersTest, CountsEachCollectiveOnceAndNamesTheLateRank) {
  Stragglers s(3);
  // Rank 2 is 4 ms behind the others; rank 1 0.1 ms. Reports overlap.
  s.Update({Report(0, "a", 1, 10, 0), Report(1, "a", 1, 8, 100),
            Report(2, "b", 1, 5, 4000)});
  EXPECT_EQ(s.counted(), 5u);  // only seqs 1-5 are on every rank
  s.Update({Report(2, "b", 1, 30, 4000), Report(0, "a", 5, 30, 0),
            Report(1, "a", 3, 30, 100)});
  EXPECT_EQ(s.counted(), 30u);
  // A read that found no reports forgets nothing: the same reports again
  // count nothing twice.
  s.Update({});
  s.Update({Report(2, "b", 1, 30, 4000), Report(0, "a", 5, 30, 0),
            Report(1, "a", 3, 30, 100)});
  EXPECT_EQ(s.counted(), 30u);
  EXPECT_EQ(s.Line(),
            "rank 2 (host b) arrived last in 100 % of 30 collectives, 3.9 ms "
            "behind the median");
  const std::string samples = s.Samples("j");
  EXPECT_NE(samples.find("hvd_rank_last_arrivals_total{rank=\"2\",host=\"b\","
                         "job=\"j\"} 30\n"),
            std::string::npos)
      << samples;
  EXPECT_NE(samples.find("hvd_rank_last_arrivals_total{rank=\"0\",host=\"a\","
                         "job=\"j\"} 0\n"),
            std::string::npos)
      << samples;
  EXPECT_NE(samples.find("hvd_collective_arrival_spread_seconds_count{job="
                         "\"j\"} 30\n"),
            std::string::npos)
      << samples;
  EXPECT_NE(samples.find("hvd_collective_arrival_spread_seconds_sum{job="
                         "\"j\"} 0.1"),
            std::string::npos)
      << samples;
}

TEST(StragglersTest, NobodyStandsOutWhenTheLastRankChanges) {
  Stragglers s(2);
  std::string zero = "0 a\n", one = "1 a\n";
  for (int seq = 1; seq <= 40; ++seq) {
    // Rank 1 is last on odd seqs, rank 0 on even ones.
    zero += std::to_string(seq) + " " +
            std::to_string(seq * 1000 + (seq % 2 ? 0 : 50)) + " t\n";
    one += std::to_string(seq) + " " +
           std::to_string(seq * 1000 + (seq % 2 ? 50 : 0)) + " t\n";
  }
  s.Update({zero, one});
  EXPECT_EQ(s.counted(), 40u);
  EXPECT_EQ(s.Line(), "");
}

TEST(StragglersTest, DifferentNamesAtOneSeqAreNotCounted) {
  Stragglers s(2);
  s.Update({"0 a\n1 100 x\n2 200 y\n", "1 a\n1 150 x\n2 250 z\n"});
  EXPECT_EQ(s.counted(), 1u);
  // Seq 2 is not counted later either, nor seq 1 again.
  s.Update({"0 a\n1 100 x\n2 200 y\n", "1 a\n1 150 x\n2 250 y\n"});
  EXPECT_EQ(s.counted(), 1u);
}

TEST(StragglersTest, MalformedReportsAreSkipped) {
  Stragglers s(2);
  s.Update({"", "x y\n1 2 t\n", "7 a\n1 5 t\n",
            "0 a\n1 100 t\nnot a line\n2 5 u\n"});
  EXPECT_EQ(s.counted(), 0u);
  EXPECT_EQ(s.Line(), "");
}

}  // namespace
}  // namespace hvd::launcher
