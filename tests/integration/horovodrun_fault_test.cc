// horovodrun when workers fail or the launcher is signalled or killed:
// the job ends with the right status and leaves nothing running.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "tests/util/job_pids.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(60);

void ExpectAllGone(const std::vector<pid_t>& pids) {
  for (pid_t p : Survivors(pids))
    ADD_FAILURE() << "pid " << p << " outlived the job";
}

TEST(HorovodrunTest, FailingRankEndsTheJobWithItsStatus) {
  TempDir dir;
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "3", HVD_TEST_WORKER, "--pid-dir", dir.path(),
       "--spawn-child", "--fail-rank", "1", "--code", "3", "--sleep", "120"},
      kTimeout);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_LT(r.took, seconds(20));
  EXPECT_NE(r.err.find("rank 1 on host localhost exited with code 3"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Process name: 1, Exit code: 3"), std::string::npos)
      << r.err;
  auto pids = ReadPids(dir.path());
  EXPECT_EQ(pids.size(), 6u);  // three workers and their children
  ExpectAllGone(pids);
}

TEST(HorovodrunTest, KilledRankCountsAs128PlusSignal) {
  Result r =
      RunCommand({HVD_HOROVODRUN, "-np", "2", "/bin/sh", "-c",
                  "if [ $HOROVOD_RANK = 0 ]; then kill -9 $$; fi; sleep 120"},
                 kTimeout);
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
  EXPECT_LT(r.took, seconds(20));
}

class StopSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(StopSignalTest, SignalToLauncherStopsEveryWorker) {
  const int sig = GetParam();
  TempDir dir;
  Subprocess p({HVD_HOROVODRUN, "-np", "3", HVD_TEST_WORKER, "--pid-dir",
                dir.path(), "--spawn-child", "--sleep", "120"});
  ASSERT_TRUE(WaitForPids(dir.path(), 6, seconds(30)));
  kill(p.pid(), sig);
  Result r = p.Wait(seconds(30));
  EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
  EXPECT_LT(r.took, seconds(30));
  EXPECT_NE(r.err.find(std::string("received SIG") + sigabbrev_np(sig)),
            std::string::npos)
      << r.err;
  ExpectAllGone(ReadPids(dir.path()));
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignalTest,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP));

TEST(HorovodrunTest, SecondSigintKillsAtOnce) {
  TempDir dir;
  // Workers that ignore SIGTERM would hold the job for the grace period.
  Subprocess p({HVD_HOROVODRUN, "-np", "2", "/bin/sh", "-c",
                "trap '' TERM; echo $$ > " + dir.path() +
                    "/$HOROVOD_RANK.pid; while :; do sleep 0.1; done"});
  ASSERT_TRUE(WaitForPids(dir.path(), 2, seconds(30)));
  kill(p.pid(), SIGINT);
  // The second only once the first is taken (two pending SIGINTs are one).
  ASSERT_FALSE(
      p.WaitForStderr("(received SIGINT; stopping)", seconds(30)).empty())
      << p.StderrSoFar();
  auto before = std::chrono::steady_clock::now();
  kill(p.pid(), SIGINT);
  Result r = p.Wait(seconds(30));
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - before, seconds(3));
  ExpectAllGone(ReadPids(dir.path()));
}

TEST(HorovodrunTest, WorkersThatIgnoreSigtermAreKilledAfterGrace) {
  TempDir dir;
  Result r =
      RunCommand({HVD_HOROVODRUN, "-np", "2", "/bin/sh", "-c",
                  "trap '' TERM; echo $$ > " + dir.path() +
                      "/$HOROVOD_RANK.pid; if [ $HOROVOD_RANK = 1 ]; then "
                      "sleep 0.5; exit 7; fi; while :; do sleep 0.1; done"},
                 kTimeout);
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_LT(r.took, seconds(20));
  ExpectAllGone(ReadPids(dir.path()));
}

TEST(HorovodrunTest, LauncherKilledTakesItsWorkersWithIt) {
  TempDir dir;
  // The workers' own children too: the watchdog kills their groups.
  Subprocess p({HVD_HOROVODRUN, "-np", "2", HVD_TEST_WORKER, "--pid-dir",
                dir.path(), "--spawn-child", "--sleep", "120"});
  ASSERT_TRUE(WaitForPids(dir.path(), 4, seconds(30)));
  kill(p.pid(), SIGKILL);
  Result r = p.Wait(seconds(30));
  EXPECT_EQ(r.exit_code, 137);
  ExpectAllGone(ReadPids(dir.path()));
}

// Over shared memory (one host, the default) and over TCP (as between
// hosts).
class KilledRankTest : public ::testing::TestWithParam<bool> {};

TEST_P(KilledRankTest, MakesTheOthersFailFastNotHang) {
  const bool shm = GetParam();
  // The survivors ignore SIGTERM, so only their own collectives can end
  // them before the SIGKILL at the end of the grace period.
  TempDir tmp;  // horovodrun dumps the survivors' flight recorders there
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "3", HVD_TEST_WORKER, "--stream", "100000"},
      kTimeout,
      {shm ? "HOROVOD_SHM_DISABLE=0" : "HOROVOD_SHM_DISABLE=1",
       "TMPDIR=" + tmp.path()});
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_LT(r.took, seconds(4)) << "failed fast, before the grace period";
  EXPECT_NE(r.err.find("rank 1 on host localhost was killed by signal 9"),
            std::string::npos)
      << r.err;
  for (int rank : {0, 2}) {
    std::string line = "[" + std::to_string(rank) + "]<stderr>:stream failed";
    EXPECT_NE(r.err.find(line), std::string::npos) << rank << ":\n" << r.err;
  }
  // The survivors' error names the dead rank.
  const std::string named =
      shm ? "local rank 0: control plane: control exchange: local rank 1 (pid "
          : "rank 0: control plane: rank 1 closed its connection (it exited "
            "or crashed)";
  EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(SharedMemoryAndTcp, KilledRankTest,
                         ::testing::Values(true, false), [](const auto& info) {
                           return info.param ? "shm" : "tcp";
                         });

// A rank that exits 0 while another waits for it in init() of the next
// generation (a test suite whose ranks fell out of step): the wait ends
// after HOROVOD_GLOO_TIMEOUT_SECONDS with the rank it waited for named,
// and horovodrun says which rank left whom behind.
class OutOfStepTest : public ::testing::TestWithParam<bool> {};

TEST_P(OutOfStepTest, TheWaitEndsNamingTheRankThatLeft) {
  const bool shm = GetParam();
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", HVD_TEST_WORKER, "--out-of-step"}, kTimeout,
      {shm ? "HOROVOD_SHM_DISABLE=0" : "HOROVOD_SHM_DISABLE=1",
       "HOROVOD_GLOO_TIMEOUT_SECONDS=5"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Rank 0 is named either way: gone, or (should the launcher not have
  // seen its exit yet) still in generation 1.
  const std::regex worker_line(
      R"(\[1\]<stderr>:test_worker: second init: .*waited for the job's )"
      R"(ranks: rank 0 \(host localhost\) (exited with status 0 after )"
      R"(generation 1|is still in generation 1))");
  EXPECT_TRUE(std::regex_search(r.err, worker_line)) << r.err;
  EXPECT_NE(r.err.find("horovodrun: rank 0 (host localhost) exited with "
                       "status 0 after generation 1, but rank 1 (host "
                       "localhost) joined generation 2 and waits for it"),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.took, seconds(50)) << "a deadline, not a hang";
}

INSTANTIATE_TEST_SUITE_P(SharedMemoryAndTcp, OutOfStepTest,
                         ::testing::Values(true, false), [](const auto& info) {
                           return info.param ? "shm" : "tcp";
                         });

// SIGUSR1 to horovodrun: every rank's flight recorder lands in a file of
// its own, with the collectives it ran, and the job goes on to its end.
TEST(HorovodrunTest, Sigusr1DumpsEveryRanksFlightRecorder) {
  TempDir dir;
  const std::string stop = dir.path() + "/stop";
  Subprocess p({HVD_HOROVODRUN, "-np", "2", HVD_TEST_WORKER, "--steps", "1",
                "--work", "allreduce", "--until-file", stop, "--say-steps"},
               {"TMPDIR=" + dir.path()});
  // Both ranks have run collectives once rank 0 finished a step.
  ASSERT_FALSE(p.WaitForStdout(R"((\[0\]<stdout>:STEP 2))", kTimeout).empty())
      << p.StderrSoFar();
  ASSERT_EQ(kill(p.pid(), SIGUSR1), 0);
  const std::string where = p.WaitForStderr(
      R"(horovodrun: flight recorder dump 1 \(asked by SIGUSR1\): 2 of 2 ranks in (\S+))",
      kTimeout);
  ASSERT_FALSE(where.empty()) << p.StderrSoFar();
  std::ofstream(stop) << "stop\n";
  Result r = p.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int rank : {0, 1}) {
    std::ifstream f(where + "/rank." + std::to_string(rank) + ".json");
    const std::string dump((std::istreambuf_iterator<char>(f)),
                           std::istreambuf_iterator<char>());
    EXPECT_TRUE(std::regex_search(
        dump, std::regex("\"rank\":" + std::to_string(rank) + "[,}]")))
        << dump.substr(0, 200);
    // At least the first step's 20 allreduces, each finished.
    size_t finished = 0;
    for (size_t at = dump.find("\"finished_us\":"); at != std::string::npos;
         at = dump.find("\"finished_us\":", at + 1)) {
      if (dump.compare(at + 14, 4, "null") != 0) ++finished;
    }
    EXPECT_GE(finished, 20u) << dump.substr(0, 400);
  }
  // The saved dumps read again offline: a report of a job that was not
  // stuck (its ranks ran the same collectives).
  Result offline = RunCommand({HVD_HOROVODRUN, "--analyze", where}, kTimeout);
  EXPECT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_TRUE(std::regex_search(
      offline.out, std::regex("no collective is in flight|every rank waits "
                              "on the same collectives|no rank stayed away")))
      << offline.out;
  Result none = RunCommand({HVD_HOROVODRUN, "--analyze", stop}, kTimeout);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("horovodrun: " + stop), std::string::npos)
      << none.err;
}

// This job's segments: their names start with hvd- and the job id's first
// 16 characters (other tests' jobs may be setting up theirs meanwhile).
std::set<std::string> ShmSegments(const std::string& job) {
  std::set<std::string> names;
  const std::string prefix = "hvd-" + job.substr(0, 16);
  for (const auto& e : fs::directory_iterator("/dev/shm")) {
    std::string n = e.path().filename();
    if (n.rfind(prefix, 0) == 0) names.insert(n);
  }
  return names;
}

TEST(HorovodrunTest, SharedMemoryLeavesNothingInDevShmEvenAfterSigkill) {
  TempDir dir;
  Subprocess p({HVD_HOROVODRUN, "-np", "2", HVD_TEST_WORKER, "--pid-dir",
                dir.path(), "--sleep", "60"});
  // Both ranks have written their pids after init: the segment is mapped
  // by both, and its name must already be gone.
  auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (ReadPids(dir.path()).size() < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  auto pids = ReadPids(dir.path());
  ASSERT_EQ(pids.size(), 2u) << p.StderrSoFar();
  std::ifstream job_file(dir.path() + "/job");
  std::string job;
  job_file >> job;
  ASSERT_FALSE(job.empty());
  EXPECT_TRUE(ShmSegments(job).empty()) << "a segment name outlived the setup";
  ASSERT_EQ(::kill(pids[1], SIGKILL), 0);
  Result r = p.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 137) << r.err;
  ExpectAllGone(pids);
  EXPECT_TRUE(ShmSegments(job).empty());
}

}  // namespace
}  // namespace hvd::testing
