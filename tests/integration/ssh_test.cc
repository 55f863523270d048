// horovodrun over real SSH: an sshd on 127.0.0.1 (reached as root@127.0.0.1,
// which always goes through SSH) and hosts in network namespaces.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/util/browser.h"
#include "tests/util/http_get.h"
#include "tests/util/job_pids.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(90);

// horovodrun with HOME in the test's folder, so known_hosts is the test's.
Result Horovodrun(const TempDir& home, std::vector<std::string> args) {
  std::vector<std::string> argv = {HVD_HOROVODRUN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, kTimeout, {"HOME=" + home.path()});
}

std::vector<std::string> SshArgs(const SshHost& h) {
  return {"-p", std::to_string(h.port()), "-i", h.user_key()};
}

std::string KnownHosts(const TempDir& home) {
  std::ifstream f(home.path() + "/.ssh/known_hosts");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void ExpectHello(const Result& r, int np) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  std::set<int> ranks;
  const std::regex line(R"(\[(\d+)\]<stdout>:rank (\d+)/(\d+): sum=(\d+))");
  for (const std::string& l : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    EXPECT_EQ(std::stoi(m[3]), np);
    EXPECT_EQ(std::stoi(m[4]), np * (np + 1) / 2);
    ranks.insert(std::stoi(m[1]));
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(np)) << r.out;
}

class SshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = WhyNoRootLogin(); !why.empty()) GTEST_SKIP() << why;
    host_ = std::make_unique<SshHost>(dir_, "h1");
    ASSERT_TRUE(host_->ok()) << host_->error();
  }
  TempDir dir_, home_;
  std::unique_ptr<SshHost> host_;
};

TEST_F(SshTest, JobAcrossLocalAndSshHostsWithIdentityFile) {
  auto args = SshArgs(*host_);
  for (std::string a :
       {"-np", "3", "-H", "localhost:1,root@127.0.0.1:2", HVD_HELLO}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ExpectHello(r, 3);
  // accept-new added the host's key.
  std::string key = host_->host_public_key();
  EXPECT_NE(KnownHosts(home_).find(key.substr(12, 40)), std::string::npos);
}

TEST_F(SshTest, HostfileWithUserHosts) {
  std::string hf =
      dir_.Write("hosts", "# test cluster\nroot@127.0.0.1 slots=2\n");
  auto args = SshArgs(*host_);
  for (std::string a : {"-np", "2", "--hostfile", hf.c_str(), HVD_HELLO}) {
    args.push_back(a);
  }
  ExpectHello(Horovodrun(home_, args), 2);
}

TEST_F(SshTest, RemoteWorkerSeesEnvironmentAndWorkingDirectory) {
  auto args = SshArgs(*host_);
  for (std::string a :
       {"-np", "1", "-H", "root@127.0.0.1:1", "--cycle-time-ms", "3", "/bin/sh",
        "-c",
        "echo $HOROVOD_RANK $HOROVOD_HOSTNAME $HOROVOD_CYCLE_TIME $(pwd)"}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:0 127.0.0.1 3 " +
                       std::filesystem::current_path().string() + "\n");
}

TEST_F(SshTest, UserAtHostRunsUnderTheRemoteWrapper) {
  auto args = SshArgs(*host_);
  for (std::string a :
       {"-np", "2", "-H", "localhost:1,root@127.0.0.1:1", "/bin/sh", "-c",
        // The echo ends the line: output passes on as it is, as Horovod's.
        "tr '\\0' ' ' < /proc/$PPID/cmdline; echo"}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  std::sort(lines.begin(), lines.end());
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[0].find("horovodrun"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("hvd-remote-exec"), std::string::npos) << lines[1];
}

// The workers of one host share one SSH connection: each worker's wrapper
// is a child of the same hvd-remote-exec --agent, so the host's login
// shell started once.
TEST_F(SshTest, AHostsWorkersShareOneConnection) {
  auto args = SshArgs(*host_);
  for (std::string a : {"-np", "3", "-H", "root@127.0.0.1:3", "/bin/sh", "-c",
                        "a=$(cut -d' ' -f4 /proc/$PPID/stat); "
                        "echo $a $(tr '\\0' ' ' < /proc/$a/cmdline)"}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> agents;
  for (const std::string& l : Lines(r.out)) {
    agents.insert(l.substr(l.find(':') + 1));
    EXPECT_NE(l.find("hvd-remote-exec --agent"), std::string::npos) << l;
  }
  EXPECT_EQ(Lines(r.out).size(), 3u) << r.out;
  EXPECT_EQ(agents.size(), 1u) << r.out;
}

// The worker whose hvd-ssh-exec holds the connection may finish first:
// the others' runs go on to their end, output and status intact.
TEST_F(SshTest, ASharedConnectionOutlivesTheWorkerThatHoldsIt) {
  auto args = SshArgs(*host_);
  for (std::string a :
       {"-np", "4", "-H", "root@127.0.0.1:4", "/bin/sh", "-c",
        "[ $HOROVOD_RANK -lt 2 ] || sleep 1; echo done $HOROVOD_RANK"}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "[0]<stdout>:done 0", "[1]<stdout>:done 1",
                       "[2]<stdout>:done 2", "[3]<stdout>:done 3"}))
      << r.out;
}

TEST_F(SshTest, VerboseSaysWhatHorovodsSaysAboutRemoteHosts) {
  auto args = SshArgs(*host_);
  for (std::string a :
       {"--verbose", "-np", "1", "-H", "root@127.0.0.1:1", HVD_HELLO}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Filtering local host names.\n"
                        "Remote host found: 127.0.0.1\n"
                        "Checking ssh on all remote hosts.\n"
                        "SSH was successful into all the remote hosts.\n",
                        0),
            0u)
      << r.out;
}

TEST_F(SshTest, TokenNeverOnARemoteCommandLine) {
  auto args = SshArgs(*host_);
  for (std::string a : {"-np", "2", "-H", "root@127.0.0.1:2", HVD_TEST_WORKER,
                        "--check-token-hidden"}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u);
}

TEST_F(SshTest, StrictPolicyRefusesUnknownHostKey) {
  auto args = SshArgs(*host_);
  for (std::string a : {"--ssh-host-key-check", "strict", "-np", "1", "-H",
                        "root@127.0.0.1:1", HVD_HELLO}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("host key unknown"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("127.0.0.1:" + std::to_string(host_->port())),
            std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

TEST_F(SshTest, ChangedHostKeyIsRefused) {
  TempDir other;
  SshHost impostor(other, "x");  // only for a second, different key
  ASSERT_TRUE(impostor.ok()) << impostor.error();
  std::string pub = impostor.host_public_key();
  home_.Write(".ssh/known_hosts",
              "[127.0.0.1]:" + std::to_string(host_->port()) + " " +
                  pub.substr(0, pub.find(' ', 12)) + "\n");
  auto args = SshArgs(*host_);
  for (std::string a : {"-np", "1", "-H", "root@127.0.0.1:1", HVD_HELLO}) {
    args.push_back(a);
  }
  Result r = Horovodrun(home_, args);
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("host key changed"), std::string::npos) << lines[0];
}

TEST_F(SshTest, WrongKeyNamesTheKey) {
  TempDir other;
  SshHost stranger(other, "s");
  ASSERT_TRUE(stranger.ok());
  Result r = Horovodrun(
      home_, {"-p", std::to_string(host_->port()), "-i", stranger.user_key(),
              "-np", "1", "-H", "root@127.0.0.1:1", HVD_HELLO});
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(
      lines[0].find("authentication failed with key " + stranger.user_key()),
      std::string::npos)
      << lines[0];
}

TEST_F(SshTest, NoSshdIsConnectionRefused) {
  int port = host_->port();
  host_.reset();  // stops it
  Result r = Horovodrun(home_, {"-p", std::to_string(port), "-np", "1", "-H",
                                "root@127.0.0.1:1", HVD_HELLO});
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("connection refused"), std::string::npos) << lines[0];
}

// Two namespace hosts, a and b, that both accept a's user key.
class TwoSshHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net_ = std::make_unique<TestNetwork>(2);
    if (!net_->ok()) {
      GTEST_SKIP() << "no network namespaces here: " << net_->error();
    }
    a_ = std::make_unique<SshHost>(dir_, "a", net_->address(0), net_->ns(0));
    b_ = std::make_unique<SshHost>(dir_, "b", net_->address(1), net_->ns(1));
    ASSERT_TRUE(a_->ok()) << a_->error();
    ASSERT_TRUE(b_->ok()) << b_->error();
    b_->AcceptKeyOf(*a_);
  }

  TempDir dir_, home_;
  std::unique_ptr<TestNetwork> net_;
  std::unique_ptr<SshHost> a_, b_;
};

TEST_F(TwoSshHostsTest, JobAcrossThreeHosts) {
  Result r = Horovodrun(home_, {"-i", a_->user_key(), "-np", "5", "-H",
                                "localhost:1," + net_->address(0) + ":2," +
                                    net_->address(1) + ":2",
                                HVD_HELLO});
  ExpectHello(r, 5);
}

// The live page of a job on two namespace hosts: each host's row and each
// rank's (polled until both hosts report steps: a deadline for a loaded
// machine), as a browser renders them.
TEST_F(TwoSshHostsTest, TheLivePageShowsEachHostAndRank) {
  const int port = FreePort("127.0.0.1");
  const std::string stop = dir_.path() + "/stop";
  Subprocess job({HVD_HOROVODRUN, "-i", a_->user_key(), "-np", "2", "-H",
                  net_->address(0) + ":1," + net_->address(1) + ":1",
                  "--metrics-port", std::to_string(port), HVD_TEST_WORKER,
                  "--steps", "1", "--until-file", stop, "--work", "allreduce"},
                 {"HOME=" + home_.path()});
  nlohmann::json state;
  for (int tries = 0; tries < 1200; ++tries) {
    state =
        nlohmann::json::parse(HttpGet(port, "/api/state").body, nullptr, false);
    // Rows are arrays in the state's columns' order; "step" is the third.
    if (state.is_object() && state["hosts"].size() == 2 &&
        !state["hosts"][0][2].is_null() && !state["hosts"][1][2].is_null()) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(state.is_object());
  ASSERT_EQ(state["hosts"].size(), 2u) << state.dump();
  EXPECT_EQ(state["ranks"].size(), 2u) << state.dump();
  if (!ChromiumPath().empty()) {
    EXPECT_EQ(PageLacks("http://127.0.0.1:" + std::to_string(port) + "/",
                        {R"(<tr data-host=")" + net_->address(0) + "\">",
                         R"(<tr data-host=")" + net_->address(1) + "\">",
                         R"(<tr data-rank="1")"}),
              "");
  }
  std::ofstream(stop).put('\n');
  Result r = job.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// Autotune across hosts also tries the TCP allreduce on one stream per
// peer (its row in the log has tcp_streams 0) and the TCP collectives'
// crossovers 4 times as far (tcp_wide_crossovers 1), every rank switching
// in the same cycle: the program checks every result meanwhile.
TEST_F(TwoSshHostsTest, AutotuneTriesOneTcpStreamAcrossHosts) {
  const std::string log = dir_.path() + "/autotune.csv";
  std::vector<std::string> args = {
      "-i", a_->user_key(), "-np",
      "2",  "-H",           net_->address(0) + ":1," + net_->address(1) + ":1"};
  args.insert(args.end(),
              {"--autotune", "--autotune-log-file", log,
               "--autotune-warmup-samples", "1", "--autotune-steps-per-sample",
               "2", "--autotune-bayes-opt-max-samples", "3"});
  args.insert(args.end(),
              {"--cycle-time-ms", "2", HVD_AUTOTUNE_BENCH, "--steps", "60"});
  Result r = Horovodrun(home_, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(log);
  std::vector<std::string> rows;
  for (std::string line; std::getline(f, line);) rows.push_back(line);
  ASSERT_GE(rows.size(), 3u) << log;
  EXPECT_NE(rows[0].find(",single_copy,tcp_streams,"), std::string::npos)
      << rows[0];
  // The last choices before the best: the streams off, then the wide
  // crossovers on.
  ASSERT_GE(rows.size(), 4u) << log;
  auto cells = [&](const std::string& row) {
    std::vector<std::string> out;
    std::stringstream line(row);
    for (std::string c; std::getline(line, c, ',');) out.push_back(c);
    return out;
  };
  const std::string& streams = rows[rows.size() - 3];
  const std::string& wide = rows[rows.size() - 2];
  EXPECT_NE(streams.find(",choice,"), std::string::npos) << streams;
  EXPECT_NE(wide.find(",choice,"), std::string::npos) << wide;
  ASSERT_EQ(cells(streams).size(), 12u) << streams;
  ASSERT_EQ(cells(wide).size(), 12u) << wide;
  EXPECT_EQ(cells(streams)[9], "0") << streams;
  EXPECT_EQ(cells(wide)[10], "1") << wide;
}

// Trouble across hosts: rank 0 on host a, rank 1 on host b makes it. A
// stall is warned of after 1 s (rank 0's inspector asks for every rank's
// flight recorder; host b's comes through the rendezvous) and ends the job
// after 3 s, whose last line repeats the report's finding.
class TroubleAcrossHostsTest : public TwoSshHostsTest {
 protected:
  Result Run(std::vector<std::string> program,
             std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        HVD_HOROVODRUN,
        "-i",
        a_->user_key(),
        "-np",
        "2",
        "-H",
        net_->address(0) + ":1," + net_->address(1) + ":1"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), program.begin(), program.end());
    return RunCommand(argv, kTimeout,
                      {"HOME=" + home_.path(), "TMPDIR=" + tmp_.path(),
                       "HOROVOD_STALL_CHECK_TIME_SECONDS=1",
                       "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=3",
                       "PYTHONPATH=" HVD_PYTHON_DIR});
  }
  std::string B() const { return "rank 1 (host " + net_->address(1) + ")"; }
  void ExpectFinding(const Result& r, const std::string& finding) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("horovodrun: flight recorder dump 1 (a stall): 2 of "
                         "2 ranks in "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("horovodrun: " + finding), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("; the stall inspector ended the job: " + finding),
              std::string::npos)
        << r.err;
  }
  std::vector<std::string> Trouble(const std::string& kind) {
    return {HVD_TROUBLE_WORKER, "--trouble", kind, "--rank", "1",
            "--pid-dir",        pids_.path()};
  }
  // Every worker the job started (they wrote their pids) is gone.
  void TearDown() override {
    for (pid_t p : Survivors(ReadPids(pids_.path()))) {
      ADD_FAILURE() << "pid " << p << " outlived the job";
    }
  }

  TempDir tmp_, pids_;
};

TEST_F(TroubleAcrossHostsTest, ARemoteRankAsleepIsNamed) {
  ExpectFinding(Run(Trouble("sleep")),
                B() +
                    " never submitted \"grad/fc2.weight\" (seq 9 on the "
                    "others); rank 0 waits there since ");
}

TEST_F(TroubleAcrossHostsTest, ARemoteRankThatSkipsATensorIsNamed) {
  const Result r = Run(Trouble("skip"));
  ExpectFinding(r, B() + " never submitted \"grad/fc2.weight\"");
  EXPECT_NE(r.err.find("it went on without it"), std::string::npos) << r.err;
}

TEST_F(TroubleAcrossHostsTest, ARemoteDeadlockIsNamed) {
  ExpectFinding(Run(Trouble("deadlock")),
                B() + " never submitted \"grad/fc2.weight\"");
}

TEST_F(TroubleAcrossHostsTest, DifferentOrdersAcrossHostsAreSaidSo) {
  const Result r = Run(Trouble("order"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(
      r.err.find("the stall inspector ended the job: the ranks submit "
                 "in different orders: rank 0 (host " +
                 net_->address(0) + ") waits on \"grad/fc1.weight\" (seq 8); " +
                 B() + " on \"grad/fc2.weight\" (seq 8); since "),
      std::string::npos)
      << r.err;
}

TEST_F(TroubleAcrossHostsTest, ARemoteSlowRankIsTheStraggler) {
  std::vector<std::string> slow = Trouble("slow");
  slow.insert(slow.end(), {"--steps", "12"});
  const Result r = Run(slow, {"--monitor"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("horovodrun: monitor: stragglers: rank 1 \\(host " +
                        std::regex_replace(net_->address(1), std::regex("\\."),
                                           "\\.") +
                        "\\) arrived last in (7[5-9]|[89][0-9]|100) % of 36 "
                        "collectives")))
      << r.err;
}

// Ranks out of step across hosts: rank 0 (host a) exits 0 after its first
// generation while rank 1 (host b) waits for it in the next init().
TEST_F(TroubleAcrossHostsTest, OutOfStepAcrossHostsNamesTheRankThatLeft) {
  const Result r = RunCommand(
      {HVD_HOROVODRUN, "-i", a_->user_key(), "-np", "2", "-H",
       net_->address(0) + ":1," + net_->address(1) + ":1", HVD_TEST_WORKER,
       "--out-of-step"},
      kTimeout, {"HOME=" + home_.path(), "HOROVOD_GLOO_TIMEOUT_SECONDS=3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string a = "rank 0 (host " + net_->address(0) + ")";
  EXPECT_NE(r.err.find("horovodrun: " + a +
                       " exited with status 0 after "
                       "generation 1, but rank 1 (host " +
                       net_->address(1) + ") joined generation 2"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("waited for the job's ranks: " + a), std::string::npos)
      << r.err;
}

// Python on the remote host: the report says where in the script it is.
TEST_F(TroubleAcrossHostsTest, ARemotePythonRankIsNamedWithItsLine) {
  const Result r = Run({"/usr/bin/python3", HVD_TROUBLE_PY, "sleep", "1"});
  if (r.err.find("No module named") != std::string::npos) {
    GTEST_SKIP() << "/usr/bin/python3 lacks torch or hvd's extension";
  }
  ExpectFinding(r, B() + " never submitted \"allreduce.loss\"");
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("rank 1 is in trouble_train\\.py:\\d+ in load_batch")))
      << r.err;
}

// A namespace host's worker dies before its host's peer maps the segment
// that peer made: the job ends, and nothing of it stays in /dev/shm (the
// hosts share this machine's /dev/shm, so the test sees theirs).
TEST(SshNetnsTest, RemoteRankKilledBeforeMappingLeavesNoSegment) {
  TestNetwork net(1);
  if (!net.ok()) GTEST_SKIP() << "no network namespaces here: " << net.error();
  TempDir dir, home, out;
  SshHost a(dir, "a", net.address(0), net.ns(0));
  ASSERT_TRUE(a.ok()) << a.error();
  const std::string script =
      "echo $HVD_JOB_ID > " + out.path() +
      "/job; if [ \"$HOROVOD_RANK\" = 1 ]; then sleep 2; kill -9 $$; fi; "
      "exec " HVD_HELLO;
  // Both ranks on the namespace host: their data goes through its shared
  // memory.
  Result r = Horovodrun(home, {"-i", a.user_key(), "-np", "2", "-H",
                               net.address(0) + ":2", "sh", "-c", script});
  EXPECT_EQ(r.exit_code, 137) << r.err;
  std::ifstream f(out.path() + "/job");
  std::string job;
  f >> job;
  ASSERT_FALSE(job.empty()) << "no job id written";
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_NE(e.path().filename().string().rfind("hvd-" + job.substr(0, 16), 0),
              0u)
        << e.path() << " outlived the job";
  }
}

// Two hosts of two ranks: hierarchical allreduce and allgather (shared
// memory on each host, Gloo between them) give exact results; with a third
// host of one rank the hosts differ, and the job falls back to the flat
// ring with a logged reason, still exact.
TEST_F(TwoSshHostsTest, HierarchicalCollectivesAreExactAcrossHosts) {
  // Even hosts are hierarchical when asked and by default; the --no- flags
  // pin the flat ring; uneven hosts fall back, saying why.
  const std::string even = net_->address(0) + ":2," + net_->address(1) + ":2";
  const std::string used =
      "hierarchical allreduce allgather: 2 ranks per host over shared "
      "memory, 2 hosts over Gloo";
  const std::string fallback =
      "hierarchical collectives off: hosts hold different numbers of ranks";
  struct Case {
    std::string hosts;
    int np;
    std::vector<std::string> flags;
    std::string says;   // in stderr
    bool hierarchical;  // the "used" line
  };
  const std::vector<Case> cases = {
      {even,
       4,
       {"--hierarchical-allreduce", "--hierarchical-allgather"},
       used,
       true},
      {even, 4, {}, used, true},
      {even,
       4,
       {"--no-hierarchical-allreduce", "--no-hierarchical-allgather"},
       "",
       false},
      {"localhost:1," + even,
       5,
       {"--hierarchical-allreduce", "--hierarchical-allgather"},
       fallback,
       false},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {
        "-i", a_->user_key(), "-np", std::to_string(c.np), "-H", c.hosts};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.insert(args.end(),
                {"--log-level", "INFO", HVD_TEST_WORKER, "--exact"});
    Result r = Horovodrun(home_, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (int rank = 0; rank < c.np; ++rank) {
      EXPECT_NE(r.out.find("[" + std::to_string(rank) + "]<stdout>:exact ok"),
                std::string::npos)
          << r.out << r.err;
    }
    if (!c.says.empty()) {
      EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    }
    EXPECT_EQ(r.err.find(used) != std::string::npos, c.hierarchical) << r.err;
  }
}

}  // namespace
}  // namespace hvd::testing
