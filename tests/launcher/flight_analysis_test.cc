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
  FlightRank r;
  r.rank = rank;
  r.host = host;
  r.dumped_us = kDumped;
  r.ops = std::move(ops);
  return r;
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

// Each rank waits for what the other has not submitted: one line says so,
// naming no rank as the one that stayed away.
TEST(FlightAnalysisTest, DifferentOrdersAreSaidSo) {
  std::vector<FlightRank> ranks = {
      Rank(0, "a", {Op(1, "x", 9'000'000, 8'000'000), Op(2, "A", 5'000'000)}),
      Rank(1, "b", {Op(1, "x", 9'000'000, 8'000'000), Op(2, "B", 4'000'000)}),
      Rank(2, "b", {Op(1, "x", 9'000'000, 8'000'000), Op(2, "A", 5'000'000)})};
  EXPECT_EQ(AnalyzeFlight(ranks),
            std::vector<std::string>{
                "the ranks submit in different orders: ranks 0, 2 wait on "
                "\"A\" (seq 2); rank 1 (host b) on \"B\" (seq 2); since "
                "5.0 s"});
}

// Rank 1 skipped step 3's "fc2" and went on to step 4's "loss": with two
// ranks each waits on what the other has not submitted, but rank 1 has
// submitted "loss" two rounds more than "fc2", so it is the one named.
TEST(FlightAnalysisTest, ARankThatWentOnWithoutATensorIsNamedAlone) {
  auto steps = [](int ranks_steps) {
    std::vector<FlightOp> ops;
    uint64_t seq = 0;
    for (int step = 0; step < ranks_steps; ++step) {
      for (const char* name : {"loss", "fc1", "fc2"}) {
        ops.push_back(Op(++seq, name, 9'000'000, 8'000'000));
      }
    }
    return ops;
  };
  std::vector<FlightOp> zero = steps(2), one = steps(2);
  zero.push_back(Op(7, "loss", 6'000'000, 5'000'000));
  zero.push_back(Op(8, "fc1", 6'000'000, 5'000'000));
  zero.push_back(Op(9, "fc2", 5'000'000));
  one.push_back(Op(7, "loss", 6'000'000, 5'000'000));
  one.push_back(Op(8, "fc1", 6'000'000, 5'000'000));
  one.push_back(Op(9, "loss", 5'000'000));
  const auto lines = AnalyzeFlight(
      {Rank(0, "a", std::move(zero)), Rank(1, "b", std::move(one))});
  ASSERT_EQ(lines.size(), 1u) << Joined(lines);
  EXPECT_EQ(lines[0],
            "rank 1 (host b) never submitted \"fc2\" (seq 9 on the others); "
            "rank 0 waits there since 5.0 s; rank 1's last op: allreduce "
            "\"fc1\" (seq 8) done 5.0 s ago, and it waits on \"loss\" "
            "instead: it went on without it (\"loss\" submitted 4 times, "
            "\"fc2\" 2)");
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

// A rank that exited without a record while the others waited on a
// collective until it failed: named next to what they waited on.
TEST(FlightAnalysisTest, ARankWithoutARecordIsNamedByTheFailedWait) {
  FlightOp failed = Op(9, "fc2", 3'000'000, 2'500'000);
  failed.failed = true;
  FlightRank gone;
  gone.rank = 1;
  gone.host = "b";
  gone.no_record = "it exited with status 3";
  const auto lines = AnalyzeFlight(
      {Rank(0, "a", {Op(8, "fc1", 4'000'000, 3'500'000), failed}), gone});
  ASSERT_EQ(lines.size(), 1u) << Joined(lines);
  EXPECT_EQ(lines[0],
            "rank 0 waited on \"fc2\" (seq 9) 0.5 s until it failed; rank 1 "
            "(host b) left no record (it exited with status 3)");
}

// Python workers' dumps carry each op's submitting frame and every
// thread's stack: the named rank's last op says where it was submitted,
// and where the rank is now (its main thread's innermost frame).
TEST(FlightAnalysisTest, SitesAndStacksSayWhereTheRankIs) {
  FlightOp loss = Op(1840, "loss", 31'300'000, 31'200'000);
  loss.site = "train.py:80 in step";
  FlightRank r3 = Rank(3, "b", {loss});
  r3.stacks =
      "Thread 0x00007f0000000002 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "\n"
      "Thread 0x00007f0000000001 (most recent call first):\n"
      "  File \"/home/u/train.py\", line 88 in load_batch\n"
      "  File \"/home/u/train.py\", line 120 in <module>\n";
  std::vector<FlightRank> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(Rank(r, "a",
                         {Op(1840, "loss", 31'300'000, 31'200'000),
                          Op(1841, "grad/fc2.weight", 31'000'000)}));
  }
  ranks.push_back(r3);
  const auto lines = AnalyzeFlight(ranks);
  ASSERT_EQ(lines.size(), 1u) << Joined(lines);
  EXPECT_EQ(lines[0],
            "rank 3 (host b) never submitted \"grad/fc2.weight\" (seq 1841 on "
            "the others); ranks 0-2 wait there since 31.0 s; rank 3's last "
            "op: allreduce \"loss\" (seq 1840) done 31.2 s ago, submitted at "
            "train.py:80 in step; rank 3 is in train.py:88 in load_batch");
  EXPECT_EQ(InnermostFrame(""), "");
  EXPECT_EQ(InnermostFrame("Thread 0x1 (most recent call first):\n"), "");
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
