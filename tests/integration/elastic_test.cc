// Elastic jobs end to end: horovodrun on this machine, three hosts in
// network namespaces reached over SSH, a host discovery script the test
// rewrites, and workers under hvd::elastic::run (C++) or hvd.elastic.run
// with a TorchState (Python). Each case checks what the job printed, its
// exit status, and that no worker it started is left running.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "tests/util/job_output.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(120);

// One worker's last line: ELASTIC rank=R size=S steps=N weight=W ...
struct Finish {
  int rank = -1, size = 0, steps = 0, resets = 0;
  double weight = 0;
  bool same = true;  // Python: every rank held the same weights
};

std::vector<Finish> Finishes(const std::string& out) {
  const std::regex line(
      R"(\[\d+\]<stdout>:ELASTIC rank=(\d+) size=(\d+) steps=(\d+) )"
      R"(weight=([0-9.e+]+) resets=(\d+)( same=(\d))?)");
  std::vector<Finish> all;
  for (const std::string& l : Lines(out)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    Finish f;
    f.rank = std::stoi(m[1]);
    f.size = std::stoi(m[2]);
    f.steps = std::stoi(m[3]);
    f.weight = std::stod(m[4]);
    f.resets = std::stoi(m[5]);
    if (m[7].matched) f.same = m[7] == "1";
    all.push_back(f);
  }
  return all;
}

// Debian's interpreter with torch, and the hvd package built.
bool PythonReady() {
  return std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") == 0 &&
         std::filesystem::exists(HVD_PYTHON_PACKAGE "/hvd/__init__.py");
}

class ElasticNetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net_ = std::make_unique<TestNetwork>(3);
    if (!net_->ok()) GTEST_SKIP() << "no network namespaces: " << net_->error();
    for (int i = 0; i < 3; ++i) {
      hosts_.push_back(std::make_unique<SshHost>(
          dir_, "h" + std::to_string(i), net_->address(i), net_->ns(i)));
      ASSERT_TRUE(hosts_.back()->ok()) << hosts_.back()->error();
      if (i > 0) {
        // Every host accepts the first host's key.
        hosts_.back()->AcceptKeyOf(*hosts_[0]);
      }
    }
    pids_ = dir_.path() + "/pids";
    std::filesystem::create_directories(pids_);
  }

  void TearDown() override {
    // Whatever a failed case left: the workers it started, by pid.
    for (pid_t pid : WorkerPids()) {
      if (ProcessAlive(pid)) kill(pid, SIGKILL);
    }
  }

  std::string Host(int i, int slots) const {
    return net_->address(i) + ":" + std::to_string(slots);
  }

  // The discovery script's answer from now on.
  void Discover(const std::vector<std::string>& hosts) {
    std::string text;
    for (const std::string& h : hosts) text += h + "\n";
    std::string tmp = dir_.path() + "/hosts.tmp";
    std::ofstream(tmp) << text;
    std::filesystem::rename(tmp, dir_.path() + "/hosts");
  }

  std::vector<std::string> Args(std::vector<std::string> flags,
                                std::vector<std::string> worker) {
    std::vector<std::string> argv = {
        HVD_HOROVODRUN, "-i", hosts_[0]->user_key(), "--host-discovery-script",
        "cat " + dir_.path() + "/hosts"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), worker.begin(), worker.end());
    return argv;
  }

  std::vector<std::string> CppWorker(int steps, int step_ms = 50) {
    return {HVD_TEST_WORKER,
            "--elastic-job",
            std::to_string(steps),
            "--step-ms",
            std::to_string(step_ms),
            "--pid-dir",
            pids_};
  }

  std::unique_ptr<Subprocess> Start(const std::vector<std::string>& argv) {
    return std::make_unique<Subprocess>(
        argv, std::vector<std::string>{"HOME=" + home_.path(),
                                       "PYTHONDONTWRITEBYTECODE=1"});
  }

  // Waits for the launcher's line saying the job runs `n` workers.
  bool WaitForWorkers(Subprocess& job, int n) {
    return !job.WaitForStderr(
                   "elastic: (" + std::to_string(n) + ") workers? on",
                   seconds(60))
                .empty();
  }

  // Pids of the workers on host i (their pid files), once all `slots`
  // have written theirs.
  std::vector<pid_t> HostPids(int i, int slots) {
    std::vector<pid_t> out;
    for (int tries = 0; tries < 300; ++tries) {
      out.clear();
      for (int s = 0; s < slots; ++s) {
        std::ifstream f(pids_ + "/" + net_->address(i) + "-" +
                        std::to_string(s) + ".pid");
        pid_t pid = 0;
        if (f >> pid) out.push_back(pid);
      }
      if (static_cast<int>(out.size()) == slots) return out;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return out;
  }

  std::vector<pid_t> WorkerPids() {
    std::vector<pid_t> out;
    if (pids_.empty() || !std::filesystem::exists(pids_)) return out;
    for (const auto& e : std::filesystem::directory_iterator(pids_)) {
      std::ifstream f(e.path());
      pid_t pid = 0;
      if (f >> pid) out.push_back(pid);
    }
    return out;
  }

  void ExpectNothingLeft() {
    for (pid_t pid : WorkerPids()) {
      EXPECT_FALSE(ProcessAlive(pid)) << "worker " << pid << " outlived it";
    }
  }

  // The job finished on `size` workers, every one with all `steps` (weight
  // == steps: every step's +1 exactly once, the redone ones included).
  void ExpectFinished(const Result& r, int size, int steps, int resets) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto finishes = Finishes(r.out);
    ASSERT_EQ(static_cast<int>(finishes.size()), size) << r.out << r.err;
    std::set<int> ranks;
    int reset_most = 0;
    for (const Finish& f : finishes) {
      ranks.insert(f.rank);
      EXPECT_EQ(f.size, size);
      EXPECT_EQ(f.weight, steps);
      EXPECT_TRUE(f.same) << "ranks ended with different weights";
      reset_most = std::max(reset_most, f.resets);
    }
    // Workers that joined later reset less than those from the start.
    EXPECT_GE(reset_most, resets);
    EXPECT_EQ(static_cast<int>(ranks.size()), size);
    ExpectNothingLeft();
  }

  TempDir dir_, home_;
  std::unique_ptr<TestNetwork> net_;
  std::vector<std::unique_ptr<SshHost>> hosts_;
  std::string pids_;
};

// (a) Every worker of a host is SIGKILLed mid-training: the others go back
// to the last commit and finish without it.
TEST_F(ElasticNetnsTest, KilledHostLeavesAndTheRestFinishFromTheLastCommit) {
  Discover({Host(0, 2), Host(1, 2)});
  auto job = Start(Args({"-np", "4", "--min-np", "2"}, CppWorker(120)));
  ASSERT_TRUE(WaitForWorkers(*job, 4)) << job->StderrSoFar();
  auto victims = HostPids(1, 2);
  ASSERT_EQ(victims.size(), 2u);
  // Mid-training: rank 0 has finished step 20 of 120.
  ASSERT_FALSE(
      job->WaitForStdout("(STEP step=20 size=4 )", seconds(60)).empty())
      << job->StderrSoFar();
  for (pid_t pid : victims) kill(pid, SIGKILL);
  Result r = job->Wait(kTimeout);
  EXPECT_NE(r.err.find("host " + net_->address(1) + " leaves the job"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("elastic: 2 workers on " + Host(0, 2) + " (reset 1)"),
            std::string::npos)
      << r.err;
  ExpectFinished(r, 2, 120, 1);
}

// (b) Discovery adds a host: the job grows to it at the next commit.
TEST_F(ElasticNetnsTest, DiscoveredHostJoinsTheJob) {
  Discover({Host(0, 2)});
  auto job = Start(Args({"-np", "2"}, CppWorker(120)));
  ASSERT_TRUE(WaitForWorkers(*job, 2)) << job->StderrSoFar();
  HostPids(0, 2);
  Discover({Host(0, 2), Host(1, 1)});
  ASSERT_TRUE(WaitForWorkers(*job, 3)) << job->StderrSoFar();
  Result r = job->Wait(kTimeout);
  ExpectFinished(r, 3, 120, 1);
}

// (c) Discovery drops a host: its workers are stopped, the rest go on.
TEST_F(ElasticNetnsTest, RemovedHostsWorkersStopAndTheRestGoOn) {
  Discover({Host(0, 2), Host(1, 2)});
  auto job = Start(Args({"-np", "4", "--min-np", "2"}, CppWorker(120)));
  ASSERT_TRUE(WaitForWorkers(*job, 4)) << job->StderrSoFar();
  auto removed = HostPids(1, 2);
  ASSERT_EQ(removed.size(), 2u);
  Discover({Host(0, 2)});
  ASSERT_TRUE(WaitForWorkers(*job, 2)) << job->StderrSoFar();
  Result r = job->Wait(kTimeout);
  ExpectFinished(r, 2, 120, 1);
  for (pid_t pid : removed) EXPECT_FALSE(ProcessAlive(pid));
}

// (d) Below --min-np for longer than --elastic-timeout: the job ends with
// one line saying why, and nothing is left running on any host.
TEST_F(ElasticNetnsTest, BelowMinNpPastTheTimeoutEndsTheJob) {
  Discover({Host(0, 2), Host(1, 2)});
  auto job = Start(Args({"-np", "4", "--min-np", "4", "--elastic-timeout", "3"},
                        CppWorker(100000)));
  ASSERT_TRUE(WaitForWorkers(*job, 4)) << job->StderrSoFar();
  auto victims = HostPids(1, 2);
  ASSERT_EQ(victims.size(), 2u);
  HostPids(0, 2);
  for (pid_t pid : victims) kill(pid, SIGKILL);
  Result r = job->Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("horovodrun: waited 3 s (--elastic-timeout) for at "
                       "least 4 slots (--min-np); the hosts offer 2"),
            std::string::npos)
      << r.err;
  ExpectNothingLeft();
}

// (e) A host whose worker keeps failing is blacklisted, comes back after
// its cooldown, fails again, and --reset-limit ends the job.
TEST_F(ElasticNetnsTest, FailingHostIsBlacklistedAndTheResetLimitEndsTheJob) {
  Discover({Host(0, 1), Host(1, 1), Host(2, 1)});
  std::vector<std::string> worker = CppWorker(100000, 20);
  worker.push_back("--fail-host");
  worker.push_back(net_->address(1));
  auto job = Start(Args({"-np", "3", "--min-np", "2", "--reset-limit", "2",
                         "--blacklist-cooldown-range", "1", "2"},
                        worker));
  Result r = job->Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Out, back after its cooldown, out again: the third reset is one too
  // many.
  EXPECT_NE(r.err.find("elastic: 2 workers on " + Host(0, 1) + "," +
                       Host(2, 1) + " (reset 1)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("elastic: 3 workers on " + Host(0, 1) + "," +
                       Host(1, 1) + "," + Host(2, 1) + " (reset 2)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("horovodrun: the job reset 3 times, more than "
                       "--reset-limit 2 allows"),
            std::string::npos)
      << r.err;
  ExpectNothingLeft();
}

// (f) The same as (a) in Python: hvd.elastic.run with a TorchState (model,
// optimizer, counters) goes back to the last commit on the survivors.
TEST_F(ElasticNetnsTest, PythonTorchStateSurvivesAKilledHost) {
  if (!PythonReady()) {
    GTEST_SKIP() << "no python3-torch or no hvd Python package built";
  }
  Discover({Host(0, 2), Host(1, 2)});
  auto job = Start(
      Args({"-np", "4", "--min-np", "2"},
           {"/usr/bin/python3", HVD_SOURCE_DIR "/tests/python/elastic_job.py",
            "--steps", "150", "--pid-dir", pids_}));
  ASSERT_TRUE(WaitForWorkers(*job, 4)) << job->StderrSoFar();
  auto victims = HostPids(1, 2);
  ASSERT_EQ(victims.size(), 2u);
  // Mid-training: rank 0 has finished step 20 of 150.
  ASSERT_FALSE(
      job->WaitForStdout("(STEP step=20 size=4 )", seconds(60)).empty())
      << job->StderrSoFar();
  for (pid_t pid : victims) kill(pid, SIGKILL);
  Result r = job->Wait(kTimeout);
  ExpectFinished(r, 2, 150, 1);
}

// (g) Horovod's worker notifications: as discovery adds a host and then
// takes it away, every running worker hears each change as it happens
// (State::on_hosts_updated, from the listener's thread), and the job
// resets to it at the next commit.
TEST_F(ElasticNetnsTest, EveryWorkerHearsEachHostChangeAsItHappens) {
  Discover({Host(0, 2)});
  auto job = Start(Args({"-np", "2"}, CppWorker(300)));
  ASSERT_TRUE(WaitForWorkers(*job, 2)) << job->StderrSoFar();
  HostPids(0, 2);
  Discover({Host(0, 2), Host(1, 1)});
  ASSERT_TRUE(WaitForWorkers(*job, 3)) << job->StderrSoFar();
  HostPids(1, 1);
  const std::string added =
      "HOSTS_UPDATED host=" + net_->address(0) + " result=2";
  ASSERT_FALSE(job->WaitForStdout(added, seconds(60)).empty());
  Discover({Host(0, 2)});
  ASSERT_TRUE(WaitForWorkers(*job, 2)) << job->StderrSoFar();
  Result r = job->Wait(kTimeout);
  ExpectFinished(r, 2, 300, 2);
  // Both workers of host 0 heard both changes (the removed host's worker
  // may be stopped before it hears of it).
  EXPECT_EQ(Occurrences(r.out, added), 2u) << r.out;
  EXPECT_EQ(Occurrences(r.out,
                        "HOSTS_UPDATED host=" + net_->address(0) + " result=1"),
            2u)
      << r.out;
}

// (h) Horovod's own elastic test scripts: rank 0 waits, between two
// commits, for the host update to reach state._host_messages; the
// launcher's update arrives there, and the job grows at the next commit.
TEST_F(ElasticNetnsTest, PythonStateHearsTheHostUpdateBetweenCommits) {
  if (!PythonReady()) {
    GTEST_SKIP() << "no python3-torch or no hvd Python package built";
  }
  Discover({Host(0, 2)});
  auto job =
      Start(Args({"-np", "2"}, {"/usr/bin/python3",
                                HVD_SOURCE_DIR "/tests/python/elastic_job.py",
                                "--steps", "60", "--commit-every", "10",
                                "--wait-hosts-at", "12", "--pid-dir", pids_}));
  ASSERT_FALSE(job->WaitForStdout("WAITING", seconds(120)).empty())
      << job->StderrSoFar();
  Discover({Host(0, 2), Host(1, 1)});
  ASSERT_FALSE(job->WaitForStdout("NOTIFIED result=2", seconds(60)).empty())
      << job->StderrSoFar();
  Result r = job->Wait(kTimeout);
  ExpectFinished(r, 3, 60, 1);
}

// (i) Horovod's endings: when every worker has failed, or every host the
// job ran on is blacklisted, the job ends at once with an error, though
// --elastic-timeout is long and a cooldown would bring the hosts back.
TEST_F(ElasticNetnsTest, WhenEveryWorkerFailsTheJobEndsAtOnce) {
  Discover({Host(0, 1), Host(1, 1)});
  std::vector<std::string> worker = CppWorker(100000, 20);
  worker.insert(worker.end(), {"--fail-host", "all"});
  const auto began = std::chrono::steady_clock::now();
  auto job = Start(Args({"-np", "2", "--min-np", "1", "--elastic-timeout",
                         "600", "--blacklist-cooldown-range", "1", "2"},
                        worker));
  Result r = job->Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no worker is left to go on from"), std::string::npos)
      << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - began, seconds(300));
  ExpectNothingLeft();
}

// (j) A host joins but the workers finish before their next commit, so
// the reset that would take it in never comes: as in Horovod (new workers
// start only at a reset), the job ends with success, and the worker that
// was started for it is stopped.
TEST_F(ElasticNetnsTest, WorkersThatFinishBeforeTheResetEndTheJobWithSuccess) {
  Discover({Host(0, 2)});
  std::vector<std::string> worker = CppWorker(80, 50);
  worker.insert(worker.end(), {"--commit-every", "100000"});  // no commit
  auto job = Start(Args({"-np", "2"}, worker));
  ASSERT_TRUE(WaitForWorkers(*job, 2)) << job->StderrSoFar();
  HostPids(0, 2);
  ASSERT_FALSE(
      job->WaitForStdout("(STEP step=10 size=2 )", seconds(60)).empty())
      << job->StderrSoFar();
  Discover({Host(0, 2), Host(1, 1)});
  ASSERT_TRUE(WaitForWorkers(*job, 3)) << job->StderrSoFar();
  Result r = job->Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopping the workers started for a reset that will "
                       "not come now: " +
                       net_->address(1) + " (slot 0)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Finishes(r.out).size(), 2u) << r.out;
  ExpectNothingLeft();
}

// Processes on this machine running `program` whose environment says they
// are workers of `host` (the namespace addresses are this test's alone).
std::vector<pid_t> WorkersOfHost(const std::string& host,
                                 const std::string& program) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string env, cmd;
    if (!ReadProcFile(e.path() / "environ", &env)) continue;  // it ended
    if (env.find(std::string("HVD_HOST=") + host + '\0') != std::string::npos &&
        env.find("HVD_JOB_TOKEN=") != std::string::npos) {
      if (!ReadProcFile(e.path() / "cmdline", &cmd)) continue;
      // Not the remote wrapper that started it (its command line names
      // the program too).
      if (cmd.find(program) != std::string::npos &&
          cmd.find("hvd-remote-exec") == std::string::npos) {
        out.push_back(std::stoi(name));
      }
    }
  }
  return out;
}

// Horovod's elastic example in Python: a host is lost in the first epoch,
// the job finishes on the other host with the accuracy a fixed job gets
// (two epochs on 6000 digits: over 85 %), every rank holding the same
// weights.
TEST_F(ElasticNetnsTest, PythonExampleLosesAHostAndStillLearns) {
  if (!PythonReady()) {
    GTEST_SKIP() << "no python3-torch or no hvd Python package built";
  }
  Discover({Host(0, 2), Host(1, 2)});
  auto job =
      Start(Args({"-np", "4", "--min-np", "2"},
                 {"/usr/bin/python3",
                  HVD_SOURCE_DIR "/examples/pytorch/pytorch_mnist_elastic.py",
                  "--train-limit", "6000", "--test-limit", "2000", "--epochs",
                  "2", "--log-interval", "1000"}));
  ASSERT_TRUE(WaitForWorkers(*job, 4)) << job->StderrSoFar();
  std::vector<pid_t> victims;
  for (int tries = 0; tries < 200 && victims.size() < 2; ++tries) {
    std::this_thread::sleep_for(milliseconds(100));
    victims = WorkersOfHost(net_->address(1), "pytorch_mnist_elastic.py");
  }
  ASSERT_EQ(victims.size(), 2u);
  // Into the first epoch: its first batch is done.
  ASSERT_FALSE(
      job->WaitForStdout("(Train Epoch: 1 batch 0 )", seconds(120)).empty())
      << job->StderrSoFar();
  for (pid_t pid : victims) kill(pid, SIGKILL);
  Result r = job->Wait(kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("reset: now 2 ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights identical on every rank"), std::string::npos)
      << r.out;
  std::smatch m;
  const std::regex acc(R"(epoch 2: Accuracy: ([0-9.]+)%)");
  ASSERT_TRUE(std::regex_search(r.out, m, acc)) << r.out;
  EXPECT_GT(std::stod(m[1]), 85.0) << r.out;
  for (pid_t pid : victims) EXPECT_FALSE(ProcessAlive(pid));
}

// (a) with train_mnist --elastic: a host is lost in the second epoch; the
// rest go back to the last commit, the per-epoch check that every rank
// holds the same weights and optimizer state stays quiet, and the test
// accuracy is in the spread of a fixed job of this size (three epochs on
// 6000 digits: 88-91 % on 4 ranks; losing 2 ranks in epoch 2 gives the
// rest more steps per epoch and 93 %). Where in epoch 2 the host is lost
// moves the result: a loaded machine's run reset at its first batch and
// reached 86.35 %, so the bound is what learning together gives at worst
// (85 %), far above a reset that broke training (under 20 %).
TEST_F(ElasticNetnsTest, TrainMnistLosesAHostAndStillLearns) {
  Discover({Host(0, 2), Host(1, 2)});
  auto job =
      Start(Args({"-np", "4", "--min-np", "2"},
                 {HVD_TRAIN_MNIST, "--elastic", "--train-limit", "6000",
                  "--test-limit", "2000", "--epochs", "3", "--warmup-epochs",
                  "1", "--log-dir", "", "--checkpoint-dir", dir_.path()}));
  ASSERT_TRUE(WaitForWorkers(*job, 4)) << job->StderrSoFar();
  ASSERT_FALSE(job->WaitForStdout("Epoch 2/3", seconds(120)).empty())
      << job->StderrSoFar();
  // A batch into the second epoch: its progress bar has drawn.
  const std::regex bar(R"(\d+/\d+ \[)");
  bool in_epoch = false;
  for (int tries = 0; tries < 6000 && !in_epoch; ++tries) {
    const std::string out = job->StdoutSoFar();
    const std::string after = out.substr(out.find("Epoch 2/3"));
    in_epoch = std::regex_search(after, bar);
    if (!in_epoch) std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_TRUE(in_epoch) << job->StdoutSoFar();
  auto victims = WorkersOfHost(net_->address(1), "train_mnist");
  ASSERT_EQ(victims.size(), 2u);
  for (pid_t pid : victims) kill(pid, SIGKILL);
  Result r = job->Wait(kTimeout);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Reset: now 2 ranks, from epoch 2 batch "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("weights or optimizer state differ"), std::string::npos)
      << r.err;
  EXPECT_GT(TestAccuracy(r.out), 0.85) << r.out;
  for (pid_t pid : victims) EXPECT_FALSE(ProcessAlive(pid));
}

}  // namespace
}  // namespace hvd::testing
