// Trouble made on purpose (hvd_trouble_worker): a rank that skips a
// tensor, submits in another order or with another shape, sleeps in its
// data loading or deadlocks. The stall inspector asks horovodrun for every
// rank's flight recorder, and the report names the right rank, host and
// tensor; with a stall shutdown time the job then ends with that finding
// in its last line, and nothing is left running.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "tests/util/browser.h"
#include "tests/util/http_get.h"
#include "tests/util/job_pids.h"
#include "tests/util/ssh_host.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

using std::chrono::seconds;

constexpr std::chrono::milliseconds kTimeout = seconds(120);

struct TroubleRun {
  Result result;
  std::vector<pid_t> pids;
};

// -np 2, rank 1 makes `kind` of trouble; a stall is warned of after 1 s and
// ends the job after 3 s.
TroubleRun Trouble(const std::string& kind) {
  TempDir pids, tmp;  // the dumps go to $TMPDIR/hvd-flight-JOB
  TroubleRun run;
  run.result = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", HVD_TROUBLE_WORKER, "--trouble", kind,
       "--rank", "1", "--pid-dir", pids.path()},
      kTimeout,
      {"HOROVOD_STALL_CHECK_TIME_SECONDS=1",
       "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=3", "TMPDIR=" + tmp.path()});
  run.pids = ReadPids(pids.path());
  return run;
}

void ExpectNothingLeft(const TroubleRun& run) {
  EXPECT_EQ(run.pids.size(), 2u);
  for (pid_t p : Survivors(run.pids)) {
    ADD_FAILURE() << "pid " << p << " outlived the job";
  }
}

bool Found(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// The stall's report, then the shutdown's, and the job's last line with it.
void ExpectStallReportNaming(const TroubleRun& run,
                             const std::string& finding) {
  const std::string& err = run.result.err;
  EXPECT_EQ(run.result.exit_code, 1) << err;
  EXPECT_TRUE(Found(err, R"(horovodrun: flight recorder dump 1 \(a stall\): )"
                         R"(2 of 2 ranks in )"))
      << err;
  EXPECT_TRUE(Found(err,
                    "horovodrun: flight recorder dump 2 \\(the stall "
                    "inspector ends the job\\): 2 of 2 ranks in "))
      << err;
  EXPECT_TRUE(Found(err, "\nhorovodrun: " + finding)) << err;
  EXPECT_TRUE(Found(err, R"(horovodrun: one or more processes exited with )"
                         R"(non-zero status; .*; the stall inspector ended )"
                         R"(the job: )" +
                             finding))
      << err;
  ExpectNothingLeft(run);
}

TEST(FlightTroubleTest, ARankThatSkipsATensorIsNamed) {
  ExpectStallReportNaming(
      Trouble("skip"),
      R"(rank 1 \(host localhost\) never submitted "grad/fc2\.weight" )"
      R"(\(seq 9 on the others\); rank 0 waits there since \d+\.\d s; )"
      R"(rank 1's last op: allreduce "grad/fc1\.weight" \(seq 8\) done )"
      R"(\d+\.\d s ago, and it waits on "loss" instead: it went on without )"
      R"(it \("loss" submitted 4 times, "grad/fc2\.weight" 2\))");
}

TEST(FlightTroubleTest, RanksInDifferentOrdersAreSaidSo) {
  ExpectStallReportNaming(
      Trouble("order"),
      R"(the ranks submit in different orders: rank 0 \(host localhost\) )"
      R"(waits on "grad/fc1\.weight" \(seq 8\); rank 1 \(host localhost\) )"
      R"(on "grad/fc2\.weight" \(seq 8\); since \d+\.\d s)");
}

TEST(FlightTroubleTest, ARankAsleepInItsDataLoadingIsNamed) {
  ExpectStallReportNaming(
      Trouble("sleep"),
      R"(rank 1 \(host localhost\) never submitted "grad/fc2\.weight" )"
      R"(\(seq 9 on the others\); rank 0 waits there since \d+\.\d s; )"
      R"(rank 1's last op: allreduce "grad/fc1\.weight" \(seq 8\) done )"
      R"(\d+\.\d s ago)");
}

TEST(FlightTroubleTest, ADeadlockedRankIsNamed) {
  ExpectStallReportNaming(
      Trouble("deadlock"),
      R"(rank 1 \(host localhost\) never submitted "grad/fc2\.weight" )"
      R"(\(seq 9 on the others\))");
}

TEST(FlightTroubleTest, AnotherShapeIsRefusedNamingBothRanks) {
  const TroubleRun run = Trouble("shape");
  EXPECT_EQ(run.result.exit_code, 1) << run.result.err;
  EXPECT_TRUE(Found(run.result.err,
                    R"(tensor 'grad/fc1\.weight': rank 0 asks for average )"
                    R"(allreduce of float32 shape \[1024\] but rank 1 for )"
                    R"(average allreduce of float32 shape \[1000\])"))
      << run.result.err;
  ExpectNothingLeft(run);
}

// Rank 1 exits 3 while rank 0 waits for it in a collective: before the job
// is stopped, horovodrun dumps what rank 0 left (answered, or recorded
// when its collective failed) and names the rank that left no record.
TEST(FlightTroubleTest, ARankThatExitsIsNamedInTheFailureDump) {
  const TroubleRun run = Trouble("exit");
  const std::string& err = run.result.err;
  EXPECT_NE(run.result.exit_code, 0) << err;
  EXPECT_TRUE(Found(err, R"(horovodrun: flight recorder dump \d+ \(rank [01] )"
                         R"(\(host localhost\) failed\): 1 of 2 ranks in )"))
      << err;
  EXPECT_TRUE(Found(err,
                    R"(horovodrun: rank 0 wait(s|ed) on "grad/fc2\.weight" )"
                    R"(\(seq 9\) .*; rank 1 \(host localhost\) left )"
                    R"(no record \(it (exited with status 3|did not )"
                    R"(answer)\))"))
      << err;
  ExpectNothingLeft(run);
}

// Rank 1 computes each gradient 3x as long as rank 0: --monitor's summary
// names it as the rank that arrives last, and the job ends well.
TEST(FlightTroubleTest, AThreeTimesSlowerRankIsNamedAsTheStraggler) {
  TempDir pids;
  const Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--monitor", HVD_TROUBLE_WORKER, "--trouble",
       "slow", "--rank", "1", "--steps", "12", "--pid-dir", pids.path()},
      kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex(R"(horovodrun: monitor: stragglers: rank 1 \(host )"
                 R"(localhost\) arrived last in (\d+) % of (\d+) )"
                 R"(collectives, ([0-9.]+) ms behind the median)")))
      << r.err;
  EXPECT_GE(std::stoi(m[1]), 75);
  EXPECT_EQ(std::stoi(m[2]), 36);  // 12 steps of 3 allreduces
  TroubleRun run;
  run.pids = ReadPids(pids.path());
  ExpectNothingLeft(run);
}

// The live page of a job whose rank 1 is 3x slower: its state names rank 1
// the straggler (once enough collectives are counted: polled, a deadline
// for a loaded machine), and a browser shows its row marked.
TEST(FlightTroubleTest, TheLivePageMarksTheSlowRank) {
  TempDir pids;
  const int port = FreePort("127.0.0.1");
  Subprocess job({HVD_HOROVODRUN, "-np", "2", "--metrics-port",
                  std::to_string(port), HVD_TROUBLE_WORKER, "--trouble", "slow",
                  "--rank", "1", "--steps", "100000", "--pid-dir",
                  pids.path()});
  nlohmann::json state;
  for (int tries = 0; tries < 1200; ++tries) {
    state =
        nlohmann::json::parse(HttpGet(port, "/api/state").body, nullptr, false);
    if (state.is_object() && state["straggler"] == 1 &&
        state["ranks"].size() == 2) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(state.is_object());
  EXPECT_EQ(state["straggler"], 1) << state.dump();
  EXPECT_NE(state["stragglers"].get<std::string>().find("rank 1 (host "),
            std::string::npos)
      << state.dump();
  if (!ChromiumPath().empty()) {
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
    EXPECT_EQ(
        PageLacks(url,
                  {R"(<tr data-rank="1" class="straggler">)",
                   R"(<tr data-rank="0">)"},
                  std::string(HVD_SCREENSHOT_DIR) + "/live_page_straggler.png"),
        "");
  }
  ASSERT_EQ(kill(job.pid(), SIGTERM), 0);
  const Result end = job.Wait(kTimeout);
  EXPECT_EQ(end.exit_code, 128 + SIGTERM) << end.err;
  TroubleRun run;
  run.pids = ReadPids(pids.path());
  ExpectNothingLeft(run);
}

// A job that hangs (rank 1 asleep in its data loading, no stall shutdown):
// GET /debug/collectives on --metrics-port gathers every rank's recorder
// and the report while it hangs; SIGTERM then ends it.
TEST(FlightTroubleTest, DebugCollectivesServesTheRecordsAndTheReport) {
  TempDir pids, tmp;
  const int port = FreePort("127.0.0.1");
  Subprocess job(
      {HVD_HOROVODRUN, "-np", "2", "--metrics-port", std::to_string(port),
       HVD_TROUBLE_WORKER, "--trouble", "sleep", "--rank", "1", "--pid-dir",
       pids.path()},
      {"HOROVOD_STALL_CHECK_TIME_SECONDS=1", "TMPDIR=" + tmp.path()});
  // The stall's own report says the hang is there.
  ASSERT_FALSE(
      job.WaitForStderr(R"(horovodrun: (rank 1 \(host localhost\) never )"
                        R"(submitted "grad/fc2\.weight"))",
                        kTimeout)
          .empty())
      << job.StderrSoFar();
  const HttpResponse r = HttpGet(port, "/debug/collectives");
  EXPECT_EQ(r.code, 200);
  const auto page = nlohmann::json::parse(r.body, nullptr, false);
  ASSERT_TRUE(page.is_object()) << r.body;
  ASSERT_EQ(page["ranks"].size(), 2u) << r.body;
  for (int rank : {0, 1}) {
    EXPECT_EQ(page["ranks"][rank]["rank"], rank) << r.body;
    EXPECT_GE(page["ranks"][rank]["entries"].size(), 8u) << r.body;
  }
  ASSERT_FALSE(page["report"].empty()) << r.body;
  EXPECT_TRUE(Found(page["report"][0].get<std::string>(),
                    R"(^rank 1 \(host localhost\) never submitted )"
                    R"("grad/fc2\.weight" \(seq 9 on the others\))"))
      << r.body;
  EXPECT_EQ(HttpGet(port, "/nothing").code, 404);
  // The live page shows the report (its state has it for a page that has
  // not seen it), as a browser renders it.
  const auto state = nlohmann::json::parse(
      HttpGet(port, "/api/state?flight=0").body, nullptr, false);
  ASSERT_TRUE(state.is_object());
  ASSERT_TRUE(state.contains("flight")) << state.dump();
  bool named = false;
  for (const auto& line : state["flight"]["lines"]) {
    named = named ||
            line.get<std::string>().find(
                "never submitted \"grad/fc2.weight\"") != std::string::npos;
  }
  EXPECT_TRUE(named) << state.dump();
  EXPECT_FALSE(
      nlohmann::json::parse(
          HttpGet(port, "/api/state?flight=" + state["flight"]["n"].dump())
              .body)
          .contains("flight"));
  if (!ChromiumPath().empty()) {
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
    EXPECT_EQ(
        PageLacks(
            url,
            {R"(<div id="flight">)", "never submitted \"grad/fc2.weight\""},
            std::string(HVD_SCREENSHOT_DIR) + "/live_page_stall.png"),
        "");
  }
  ASSERT_EQ(kill(job.pid(), SIGTERM), 0);
  const Result end = job.Wait(kTimeout);
  EXPECT_EQ(end.exit_code, 128 + SIGTERM) << end.err;
  TroubleRun run;
  run.pids = ReadPids(pids.path());
  ExpectNothingLeft(run);
}

}  // namespace
}  // namespace hvd::testing
