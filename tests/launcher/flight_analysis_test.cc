// The root-cause report from the ranks' flight recorder dumps: each kind
// of trouble is said as such, naming the right rank, host and tensor.
#include "launcher/flight_analysis.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/util/temp_dir.h"

namespace hvd::launcher {
namespace {

using hvd::testing::TempDir;

constexpr int64_t kDumped = 100'000'000;  // us

// An op submitted `ago_us` before the dump, finished `done_ago_us` before
// it (-1: not finished).
FlightOp Op(uint64_t seq, const std::string& name, int64_t ago_us,
            int64_t done_ago_us = -1, int64_t bytes = 4,
            const std::string& op = "allreduce") {
  FlightOp o;
  o.seq = seq;
  o.name = name;
  o.op = op;
  o.bytes = bytes;
  o.submitted_us = kDumped - ago_us;
  if (done_ago_us >= 0) o.finished_us = kDumped - done_ago_us;
  return o;
}

FlightRank Rank(int rank, const std::string& host, std::vector<FlightOp> ops) {
  return FlightRank{rank, host, kDumped, std::move(ops)};
}

bool Has(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(FlightAnalysisTest, ARankThatNeverSubmittedIsNamedWithItsLastOp) {
  std::vector<FlightRank> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(Rank(r, "a",
                         {Op(1840, "loss", 31'300'000, 31'200'000),
                          Op(1841, "grad/fc2.weight", 31'000'000)}));
  }
  ranks.push_back(Rank(3, "b", {Op(1840, "loss", 31'300'000, 31'200'000)}));
  const auto lines = AnalyzeFlight(ranks);
  ASSERT_EQ(lines.size(), 1u) << Joined(lines);
  EXPECT_EQ(lines[0],
            "rank 3 (host b) never submitted \"grad/fc2.weight\" (seq 1841 on "
            "the others); ranks 0-2 wait there since 31.0 s; rank 3's last "
            "op: allreduce \"loss\" (seq 1840) done 31.2 s ago");
}

TEST(FlightAnalysisTest, DifferentOrdersAreSaidSo) {
  std::vector<FlightRank> ranks = {
      Rank(0, "a", {Op(1, "x", 9'000'000, 8'000'000), Op(2, "A", 5'000'000)}),
      Rank(1, "b", {Op(1, "x", 9'000'000, 8'000'000), Op(2, "B", 4'000'000)})};
  const auto lines = AnalyzeFlight(ranks);
  EXPECT_TRUE(Has(lines, "rank 1 (host b) never submitted \"A\""))
      << Joined(lines);
  EXPECT_TRUE(Has(lines,
                  "waits on \"B\" instead (the ranks submit in "
                  "different orders)"))
      << Joined(lines);
  EXPECT_TRUE(Has(lines, "rank 0 (host a) never submitted \"B\""))
      << Joined(lines);
}

TEST(FlightAnalysisTest, DifferentShapesOrOpsAreADisagreement) {
  std::vector<FlightRank> ranks = {
      Rank(0, "a", {Op(7, "w", 2'000'000, -1, 16)}),
      Rank(1, "a", {Op(7, "w", 2'000'000, -1, 20)}),
      Rank(2, "b", {Op(7, "w", 2'000'000, -1, 16, "allgather")})};
  const auto lines = AnalyzeFlight(ranks);
  ASSERT_EQ(lines.size(), 1u) << Joined(lines);
  EXPECT_EQ(lines[0],
            "the ranks disagree on \"w\": rank 0 submitted allreduce of 16 "
            "bytes; rank 1 submitted allreduce of 20 bytes; rank 2 submitted "
            "allgather of 16 bytes");
}

TEST(FlightAnalysisTest, ANameSubmittedAgainCountsOnlyItsLatestRound) {
  // Step 2's "g": rank 1 finished step 1's and has not come back.
  std::vector<FlightRank> ranks = {
      Rank(0, "a", {Op(1, "g", 9'000'000, 8'900'000), Op(2, "g", 3'000'000)}),
      Rank(1, "c", {Op(1, "g", 9'000'000, 8'900'000)})};
  const auto lines = AnalyzeFlight(ranks);
  EXPECT_TRUE(Has(lines,
                  "rank 1 (host c) never submitted \"g\" (seq 2 on the "
                  "others); rank 0 waits there since 3.0 s"))
      << Joined(lines);
}

TEST(FlightAnalysisTest, NothingInFlightNamesTheLongestIdleRank) {
  std::vector<FlightRank> ranks = {
      Rank(0, "a", {Op(5, "x", 2'000'000, 1'000'000)}),
      Rank(1, "b", {Op(5, "x", 2'000'000, 12'000'000)})};
  EXPECT_EQ(AnalyzeFlight(ranks),
            std::vector<std::string>{
                "no collective is in flight on any rank; rank 1 (host b) ran "
                "its last the longest ago: allreduce \"x\" (seq 5) done 12.0 s "
                "ago"});
  EXPECT_EQ(AnalyzeFlight({Rank(0, "a", {})}),
            std::vector<std::string>{"no rank has run a collective yet"});
}

TEST(FlightAnalysisTest, EveryoneWaitingOnTheSameIsNotARanksFault) {
  std::vector<FlightRank> ranks = {Rank(0, "a", {Op(3, "y", 1'000'000)}),
                                   Rank(1, "b", {Op(3, "y", 1'000'000)})};
  const auto lines = AnalyzeFlight(ranks);
  EXPECT_TRUE(Has(lines,
                  "every rank waits on the same collectives (1 in "
                  "flight)"))
      << Joined(lines);
}

// Two ranks dumped apart: rank 1 (dumped 15 s before rank 0) still waits
// on seq 60, which rank 0 has since finished, and rank 0 waits on seq 61,
// which rank 1 had not reached when it was dumped. Neither stayed away.
TEST(FlightAnalysisTest, DumpsTakenApartAreNotDifferentOrders) {
  FlightRank early = Rank(
      1, "a",
      {Op(59, "t.58", 30'000'000, 25'000'000), Op(60, "t.59", 20'000'000)});
  early.dumped_us = kDumped - 15'000'000;
  std::vector<FlightRank> ranks = {
      Rank(0, "a",
           {Op(59, "t.58", 30'000'000, 25'000'000),
            Op(60, "t.59", 20'000'000, 10'000'000), Op(61, "t.60", 8'000'000)}),
      early};
  const auto lines = AnalyzeFlight(ranks);
  ASSERT_EQ(lines.size(), 1u) << Joined(lines);
  EXPECT_TRUE(Has(lines, "the job was moving when its ranks were dumped"))
      << Joined(lines);
  // Rank 1 dumped after rank 0 had waited 8 s on seq 61 stayed away.
  ranks[1].dumped_us = kDumped;
  EXPECT_TRUE(Has(AnalyzeFlight(ranks),
                  "rank 1 (host a) never submitted \"t.60\" (seq 61 on the "
                  "others); rank 0 waits there since 8.0 s"))
      << Joined(AnalyzeFlight(ranks));
}

// A wait of milliseconds on a tensor another rank has not submitted yet is
// a job that moves (that rank computes its next gradient), not a hang.
TEST(FlightAnalysisTest, AShortWaitIsAJobThatMoves) {
  std::vector<FlightRank> ranks = {
      Rank(0, "a", {Op(5, "x", 3'000, 2'000), Op(6, "y", 1'000)}),
      Rank(1, "a", {Op(5, "x", 3'000, 2'000)})};
  EXPECT_TRUE(Has(AnalyzeFlight(ranks), "no rank stayed away"))
      << Joined(AnalyzeFlight(ranks));
}

TEST(FlightAnalysisTest, ReadsADirectoryOfDumpsAndRefusesBadOnes) {
  TempDir dir;
  std::ofstream(dir.path() + "/rank.0.json")
      << R"({"rank":0,"host":"a","dumped_us":100000000,"process_set":0,)"
         R"("entries":[{"seq":1,"name":"t","op":"allreduce","dtype":"float32",)"
         R"("bytes":4,"device":-1,"submitted_us":99000000,)"
         R"("negotiated_us":null,"started_us":null,"finished_us":null,)"
         R"("failed":false}]})";
  std::ofstream(dir.path() + "/rank.1.json")
      << R"({"rank":1,"host":"b","dumped_us":100000000,"entries":[]})";
  auto lines = AnalyzeFlightDir(dir.path());
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  EXPECT_TRUE(Has(*lines, "rank 1 (host b) never submitted \"t\""))
      << Joined(*lines);

  std::ofstream(dir.path() + "/rank.2.json") << "{not json";
  auto bad = AnalyzeFlightDir(dir.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rank.2.json"), std::string::npos)
      << bad.status().ToString();
  TempDir empty;
  EXPECT_FALSE(AnalyzeFlightDir(empty.path()).ok());
}

}  // namespace
}  // namespace hvd::launcher
