// horovodrun as a user runs it: real processes, real rendezvous, real Gloo.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/util/job_output.h"
#include "tests/util/job_pids.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(60);

class HelloTest : public ::testing::TestWithParam<int> {};

TEST_P(HelloTest, EveryRankPrintsTheSum) {
  const int np = GetParam();
  Result r = RunCommand({HVD_HOROVODRUN, "-np", std::to_string(np), HVD_HELLO},
                        kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<int> seen;
  const std::regex line(R"(\[(\d+)\]<stdout>:rank (\d+)/(\d+): sum=(\d+))");
  for (const std::string& l : Lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    EXPECT_EQ(m[1], m[2]);
    EXPECT_EQ(std::stoi(m[3]), np);
    EXPECT_EQ(std::stoi(m[4]), np * (np + 1) / 2);
    seen.insert(std::stoi(m[1]));
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(np));
}

INSTANTIATE_TEST_SUITE_P(Np, HelloTest, ::testing::Values(1, 2, 3, 4));

// hvd_hello --rounds: init, allreduce, shutdown 20 times in each worker
// process, on shared memory and on TCP, with a rank that is late to every
// round after the first.
struct RoundsCase {
  int np;
  bool tcp;
  bool late;
};

class RoundsTest : public ::testing::TestWithParam<RoundsCase> {};

TEST_P(RoundsTest, EveryRoundJoinsAgainAndSumsRight) {
  const RoundsCase c = GetParam();
  std::vector<std::string> argv = {
      HVD_HOROVODRUN, "-np", std::to_string(c.np), HVD_HELLO, "--rounds", "20"};
  if (c.late) {
    argv.insert(argv.end(),
                {"--late-rank", std::to_string(c.np - 1), "--late-ms", "100"});
  }
  std::vector<std::string> env;
  if (c.tcp) env.push_back("HOROVOD_SHM_DISABLE=1");
  Result r = RunCommand(argv, kTimeout, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(
      R"(\[(\d+)\]<stdout>:rank (\d+)/(\d+): round (\d+) sum=(\d+))");
  std::map<int, int> rounds_of_rank;
  for (const std::string& l : Lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    const int round = std::stoi(m[4]);
    EXPECT_EQ(std::stoi(m[5]), c.np * (c.np + 1) / 2 + c.np * (round - 1));
    // Each rank prints its rounds in order.
    EXPECT_EQ(round, ++rounds_of_rank[std::stoi(m[1])]) << l;
  }
  ASSERT_EQ(rounds_of_rank.size(), static_cast<size_t>(c.np));
  for (auto [rank, n] : rounds_of_rank) EXPECT_EQ(n, 20) << "rank " << rank;
}

INSTANTIATE_TEST_SUITE_P(
    Rounds, RoundsTest,
    ::testing::Values(RoundsCase{2, false, false}, RoundsCase{3, false, false},
                      RoundsCase{2, true, false}, RoundsCase{3, true, false},
                      RoundsCase{3, false, true}, RoundsCase{3, true, true}),
    [](const auto& info) {
      return std::string(info.param.tcp ? "Tcp" : "Shm") + "Np" +
             std::to_string(info.param.np) + (info.param.late ? "Late" : "");
    });

TEST(HorovodrunTest, HelloRefusesABadRoundCount) {
  Result r = RunCommand({HVD_HELLO, "--rounds", "x"}, kTimeout);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--rounds needs a whole number"), std::string::npos)
      << r.err;
}

TEST(HorovodrunTest, ThreeSlotsOnLocalhostPrintSixThreeTimes) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "3", "-H", "localhost:3", HVD_HELLO}, kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (int rank = 0; rank < 3; ++rank) {
    std::string want = "[" + std::to_string(rank) + "]<stdout>:rank " +
                       std::to_string(rank) + "/3: sum=6";
    EXPECT_NE(std::find(lines.begin(), lines.end(), want), lines.end()) << want;
  }
}

TEST(HorovodrunTest, MixedHostNamesOfThisMachine) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "3", "-H", "localhost:1,127.0.0.1:2", HVD_HELLO},
      kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 3u);
}

TEST(HorovodrunTest, LinesAreNeverMixed) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "3", HVD_TEST_WORKER, "--lines", "2000"},
      kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(
      R"(\[(\d)\]<(stdout|stderr)>:rank (\d) line (\d+) x{120})");
  for (const std::string* text : {&r.out, &r.err}) {
    auto lines = Lines(*text);
    EXPECT_EQ(lines.size(), 6000u);
    for (const std::string& l : lines) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(l, m, line)) << "mixed or malformed: " << l;
      EXPECT_EQ(m[1], m[3]);
      EXPECT_EQ(m[2], text == &r.out ? "stdout" : "stderr");
    }
  }
}

TEST(HorovodrunTest, ProgressPiecesAndLastLineWithoutNewline) {
  Result r = RunCommand({HVD_HOROVODRUN, "-np", "1", "/bin/sh", "-c",
                         "printf '10%%\\r20%%\\rdone\\nno newline'"},
                        kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "[0]<stdout>:10%\r[0]<stdout>:20%\r[0]<stdout>:done\n"
            "[0]<stdout>:no newline");
}

// --output-filename files hold what the terminal gets (Horovod's), and
// --prefix-output-with-timestamp puts Horovod's timestamp first.
TEST(HorovodrunTest, OutputFilesAndTimestampsAsHorovods) {
  TempDir dir;
  Result r = RunCommand({HVD_HOROVODRUN, "-np", "2", "--output-filename",
                         dir.path(), "--prefix-output-with-timestamp",
                         "/bin/sh", "-c", "echo out; echo err >&2"},
                        kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(
      R"([A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4})"
      R"(\[(\d)\]<(stdout|stderr)>:(out|err))");
  for (int rank = 0; rank < 2; ++rank) {
    for (const char* stream : {"stdout", "stderr"}) {
      std::ifstream f(dir.path() + "/rank." + std::to_string(rank) + "/" +
                      stream);
      std::string text((std::istreambuf_iterator<char>(f)),
                       std::istreambuf_iterator<char>());
      auto lines = Lines(text);
      ASSERT_EQ(lines.size(), 1u) << text;
      std::smatch m;
      ASSERT_TRUE(std::regex_match(lines[0], m, line)) << lines[0];
      EXPECT_EQ(m[1], std::to_string(rank));
      EXPECT_EQ(m[2], stream);
      // The terminal got the same line.
      const std::string& terminal =
          std::string(stream) == "stdout" ? r.out : r.err;
      EXPECT_NE(terminal.find(lines[0]), std::string::npos) << terminal;
    }
  }
}

TEST(HorovodrunTest, WorkerEnvironmentHasHorovodVariables) {
  Result r =
      RunCommand({HVD_HOROVODRUN, "-np", "2", "-H", "localhost:1,127.0.0.1:1",
                  "/bin/sh", "-c",
                  "echo $HOROVOD_RANK $HOROVOD_SIZE $HOROVOD_LOCAL_RANK "
                  "$HOROVOD_LOCAL_SIZE $HOROVOD_CROSS_RANK $HOROVOD_CROSS_SIZE "
                  "$HOROVOD_HOSTNAME"},
                 kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  std::sort(lines.begin(), lines.end());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "[0]<stdout>:0 2 0 1 0 2 localhost");
  EXPECT_EQ(lines[1], "[1]<stdout>:1 2 0 1 1 2 127.0.0.1");
}

TEST(HorovodrunTest, DistributedGradientsAccumulateAndAverage) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "3", HVD_TEST_WORKER, "--gradients"}, kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 3u) << r.out;
}

// Ranks of a host read each other's buffers (single copy) when the kernel
// lets them, and say so at debug level; where a seccomp profile forbids
// process_vm_readv and pidfd_getfd (as containers do) each rank says once
// that it falls back, and the results are the same.
TEST(HorovodrunTest, SingleCopyAllreduceAndItsFallback) {
  for (bool deny : {false, true}) {
    std::vector<std::string> argv = {HVD_HOROVODRUN, "-np",   "3",
                                     "--log-level",  "DEBUG", HVD_TEST_WORKER,
                                     "--exact"};
    if (deny) argv.push_back("--deny-cross-memory");
    // Single copy is off unless set.
    Result r = RunCommand(argv, kTimeout,
                          {"HOROVOD_SHM_SINGLE_COPY_THRESHOLD=2097152"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Lines(r.out).size(), 3u) << r.out;
    const std::string all = r.out + r.err;
    size_t off = 0, warnings = 0;
    while ((off = all.find("single-copy allreduce is off", off)) !=
           std::string::npos) {
      ++warnings, ++off;
    }
    EXPECT_EQ(warnings, deny ? 3u : 0u) << all;
    EXPECT_EQ(all.find("single-copy allreduce from 2097152 bytes") !=
                  std::string::npos,
              !deny)
        << all;
    if (deny) {
      EXPECT_NE(all.find("Operation not permitted"), std::string::npos) << all;
    }
    // Buffers from hvd::alloc_shared (and the fusion buffer) are reduced
    // between the ranks directly, or, where the peers' descriptors cannot
    // be taken, copied like any other (each rank says so once).
    warnings = 0;
    for (off = 0;
         (off = all.find("copied like any other", off)) != std::string::npos;
         ++off) {
      ++warnings;
    }
    EXPECT_EQ(warnings, deny ? 3u : 0u) << all;
    EXPECT_EQ(all.find("straight between the ranks' shared buffers") !=
                  std::string::npos,
              !deny)
        << all;
  }
}

TEST(HorovodrunTest, TokenNeverOnACommandLine) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", HVD_TEST_WORKER, "--check-token-hidden"},
      kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u);
}

TEST(HorovodrunTest, WorkersThatNeverJoinAreNamedAfterTheJoinTimeout) {
  Result r = RunCommand({HVD_HOROVODRUN, "-np", "2", "--join-timeout", "2",
                         HVD_TEST_WORKER, "--no-init", "--sleep", "120"},
                        kTimeout);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_LT(r.took, seconds(20));
  EXPECT_NE(r.err.find("ranks 0 (localhost), 1 (localhost) did not join the "
                       "rendezvous within 2 s"),
            std::string::npos)
      << r.err;
}

// A worker slower to reach hvd::init() than --start-timeout (a script
// importing a framework first) is not killed for it, and its peers wait.
TEST(HorovodrunTest, SlowWorkersAreNotKilledByTheStartTimeout) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--start-timeout", "1", "/bin/sh", "-c",
       std::string("if [ \"$HOROVOD_RANK\" = 1 ]; then sleep 3; fi; exec ") +
           HVD_HELLO},
      kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u) << r.out;
}

// --verbose prints Horovod's lines first, on stdout as its print()s do.
TEST(HorovodrunTest, VerboseSaysWhatHorovodsSays) {
  Result r = RunCommand({HVD_HOROVODRUN, "--verbose", "-np", "1", HVD_HELLO},
                        kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("Filtering local host names.\nRemote host found: \n", 0), 0u)
      << r.out;
  EXPECT_NE(r.err.find("horovodrun: rendezvous on"), std::string::npos)
      << r.err;
}

// CPU time (user + system, clock ticks) `pid` has used so far.
long CpuTicks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis: state is field 3,
  // utime and stime fields 14 and 15.
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::vector<std::string> fields;
  for (std::string x; rest >> x;) fields.push_back(x);
  if (fields.size() < 13) return -1;
  return std::stol(fields[11]) + std::stol(fields[12]);
}

// While its workers run, horovodrun sleeps in poll(): it takes no CPU from
// them (with no join timeout set, the default, it once woke at once for a
// deadline it then ignored, and spun half a core away from the workers).
TEST(HorovodrunTest, IdleWhileItsWorkersRun) {
  TempDir dir;
  // The workers say when they run and wait for the test to let them end,
  // so the 2 s measured lie inside the job however slow its start.
  const std::string d = dir.path();
  Subprocess run({HVD_HOROVODRUN, "-np", "2", "/bin/sh", "-c",
                  "touch " + d + "/$HOROVOD_RANK.up; while [ ! -e " + d +
                      "/done ]; do sleep 0.05; done"});
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(WaitForFile(d + "/" + std::to_string(i) + ".up", seconds(60)))
        << run.StderrSoFar();
  }
  const long before = CpuTicks(run.pid());
  std::this_thread::sleep_for(seconds(2));
  const long after = CpuTicks(run.pid());
  dir.Write("done", "");
  Result r = run.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_GE(before, 0);
  // A spinning loop takes 40-100 ticks in these 2 s; an idle one about 0.
  EXPECT_LT(after - before, 10) << "horovodrun used " << after - before
                                << " ticks of CPU in 2 s of its workers";
}

TEST(HorovodrunTest, ProgramsThatExitWithoutJoiningAreFine) {
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--start-timeout", "1", "/bin/echo", "hi"},
      kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u);
}

// Bad input: one line on stderr, exit 2, nothing started.
void ExpectUsageError(const std::vector<std::string>& args,
                      const std::string& says) {
  std::vector<std::string> argv = {HVD_HOROVODRUN};
  argv.insert(argv.end(), args.begin(), args.end());
  Result r = RunCommand(argv, kTimeout);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("horovodrun: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(says), std::string::npos) << lines[0];
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(HorovodrunTest, MoreProcessesThanSlotsIsAUsageError) {
  ExpectUsageError({"-np", "5", "-H", "localhost:4", HVD_HELLO},
                   "needs 5 slots but -H localhost:4 has 4");
}

TEST(HorovodrunTest, OtherUsageErrors) {
  ExpectUsageError({HVD_HELLO}, "-np: is required");
  ExpectUsageError({"-np", "2", "--bogus", HVD_HELLO}, "unknown option");
  ExpectUsageError({"-np", "2", "no-such-program-hvd"}, "not found on PATH");
  ExpectUsageError({"-np", "2", "-H", "localhost:x", HVD_HELLO}, "-H slots");
}

TEST(HorovodrunTest, UnreachableHostIsOneLineNamingIt) {
  Result r = RunCommand({HVD_HOROVODRUN, "-np", "1", "--start-timeout", "5",
                         "-H", "host.invalid:1", HVD_HELLO},
                        kTimeout);
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("host host.invalid:22"), std::string::npos)
      << lines[0];
}

TEST(HorovodrunTest, HelpAndVersion) {
  Result help = RunCommand({HVD_HOROVODRUN, "--help"}, kTimeout);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: horovodrun -np N"), std::string::npos);
  Result version = RunCommand({HVD_HOROVODRUN, "--version"}, kTimeout);
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("hvd"), std::string::npos);
}

TEST(HorovodrunTest, AutotuneSwitchesEveryRankTogetherAndLogsTheBest) {
  TempDir dir;
  const std::string log = dir.path() + "/autotune.csv";
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--autotune", "--autotune-log-file", log,
       "--autotune-warmup-samples", "1", "--autotune-steps-per-sample", "2",
       "--autotune-bayes-opt-max-samples", "6", "--cycle-time-ms", "2",
       "--log-level", "INFO", HVD_AUTOTUNE_BENCH, "--steps", "80"},
      std::chrono::seconds(120),
      // Single copy is off unless set: on, so that its choice is tried.
      {"HOROVOD_SHM_SINGLE_COPY_THRESHOLD=1048576"});
  // The program checks every result while the values change under it.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(log);
  std::vector<std::string> rows;
  for (std::string line; std::getline(f, line);) rows.push_back(line);
  // + the cache, shared-memory and single-copy choices, and the best.
  ASSERT_EQ(rows.size(), 1u + 1 + 6 + 3 + 1) << log;
  EXPECT_EQ(rows[0],
            "sample,phase,fusion_threshold_mb,cycle_time_ms,response_cache,"
            "hierarchical_allreduce,hierarchical_allgather,shared_memory,"
            "single_copy,tcp_streams,tcp_wide_crossovers,bytes_per_second");
  auto column = [&](size_t row, size_t col) {
    std::vector<std::string> cells;
    std::stringstream line(rows[row]);
    for (std::string c; std::getline(line, c, ',');) cells.push_back(c);
    return col < cells.size() ? cells[col] : std::string("?");
  };
  const size_t n = rows.size();
  for (size_t row : {n - 4, n - 3, n - 2}) {
    EXPECT_EQ(column(row, 1), "choice") << rows[row];
  }
  // The shared-memory choice: its row has it off, and every rank moved its
  // data to TCP for that sample (then to whatever was best); the
  // single-copy choice's row has single copy off.
  EXPECT_EQ(column(n - 3, 7), "0") << rows[n - 3];
  EXPECT_EQ(column(n - 2, 8), "0") << rows[n - 2];
  for (const char* rank : {"[0]<stderr>", "[1]<stderr>"}) {
    bool found = false;
    for (const std::string& l : Lines(r.err + r.out)) {
      found |=
          l.rfind(rank, 0) == 0 &&
          l.find("autotune: data through Gloo over TCP") != std::string::npos;
    }
    EXPECT_TRUE(found) << rank << " did not switch: " << r.err;
  }
  EXPECT_NE(rows[1].find(",warmup,"), std::string::npos);
  EXPECT_NE(rows.back().find(",best,"), std::string::npos);
  // The cycle time was given: it stays fixed in every sample.
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_NE(rows[i].find(",2.000,"), std::string::npos) << rows[i];
  }
}

}  // namespace
// hvd::elastic::run in a fixed job: rank 1 leaves at step 12, every rank
// goes back to the commit of step 10, joins again and finishes; 2 steps
// are redone, and the weights end where 20 steps take them.
TEST(HorovodrunTest, ElasticRunResetsToTheLastCommitAndFinishes) {
  for (int np : {2, 3}) {
    Result r = RunCommand({HVD_HOROVODRUN, "-np", std::to_string(np),
                           HVD_TEST_WORKER, "--elastic"},
                          kTimeout);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::regex line(
        R"(\[(\d+)\]<stdout>:ELASTIC rank=(\d+) steps=(\d+) weight=(\d+) resets=(\d+))");
    int ranks = 0;
    for (const std::string& l : Lines(r.out)) {
      std::smatch m;
      if (!std::regex_match(l, m, line)) continue;
      ++ranks;
      EXPECT_EQ(m[4], "20") << l;  // every step's +1, once
      EXPECT_EQ(m[5], "1") << l;   // one reset
      // 12 steps before the failure (rank 1: 12), 10 after the reset.
      EXPECT_EQ(std::stoi(m[3]), 22) << l;
    }
    EXPECT_EQ(ranks, np) << r.out << r.err;
  }
}

}  // namespace hvd::testing

namespace hvd::testing {
namespace {

// An elastic job on this machine's loopback "hosts" (127.0.0.0/8 is local,
// so no SSH): a discovery script that answers once, then fails and then
// hangs, is logged once per kind of failure, and the job goes on with its
// last good answer to the end.
TEST(HorovodrunElasticTest, FailingDiscoveryKeepsTheLastGoodHosts) {
  TempDir dir;
  const std::string count = dir.path() + "/count";
  const std::string script = dir.Write(
      "discover.sh",
      "n=$(cat " + count + " 2>/dev/null || echo 0); echo $((n + 1)) > " +
          count +
          "\n"
          "if [ $n -eq 0 ]; then echo 127.0.0.1:1; echo 127.0.0.2:1; exit 0; "
          "fi\n"
          "if [ $n -lt 3 ]; then exit 3; fi\n"
          "sleep 30\n",
      0700);
  Result r = RunCommand({HVD_HOROVODRUN, "-np", "2", "--start-timeout", "1",
                         "--host-discovery-script", script, HVD_TEST_WORKER,
                         "--elastic-job", "120", "--step-ms", "40"},
                        kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(
      R"(\[\d+\]<stdout>:ELASTIC rank=\d+ size=2 steps=120 weight=120 resets=0)");
  int done = 0;
  for (const std::string& l : Lines(r.out)) done += std::regex_match(l, line);
  EXPECT_EQ(done, 2) << r.out;
  auto said = [&](const std::string& what) { return Occurrences(r.err, what); };
  EXPECT_EQ(said("exited with status 3; keeping the last hosts it gave"), 1u)
      << r.err;
  EXPECT_EQ(said("did not finish within 1000 ms; it was stopped; keeping the "
                 "last hosts it gave"),
            1u)
      << r.err;
}

}  // namespace
}  // namespace hvd::testing
