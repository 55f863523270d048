// horovodrun inside a real Slurm allocation: the test starts munged,
// slurmctld and two slurmd nodes of its own (tests/util/slurm_cluster.h),
// then runs horovodrun under salloc and sbatch. Workers start through one
// srun step; the checks are the results, the exit status after a failing
// rank, scancel, a node's workers killed, and that no worker is left.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "tests/util/job_output.h"
#include "tests/util/job_pids.h"
#include "tests/util/slurm_cluster.h"
#include "tests/util/subprocess.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(120);

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<SlurmCluster>(dir_, 2, 2);
    if (!cluster_->ok()) GTEST_SKIP() << "no Slurm here: " << cluster_->error();
    pids_ = dir_.path() + "/pids";
    std::filesystem::create_directories(pids_);
  }

  void TearDown() override {
    for (pid_t pid : WorkerPids()) {
      if (ProcessAlive(pid)) kill(pid, SIGKILL);
    }
  }

  Result Run(std::vector<std::string> argv) {
    return RunCommand(argv, kTimeout, cluster_->env());
  }

  // salloc -N2 -n4 horovodrun ARGS
  std::vector<std::string> Salloc(std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/salloc", "-N2", "-n4",
                                     HVD_HOROVODRUN};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  std::vector<pid_t> WorkerPids() {
    std::vector<pid_t> out;
    if (pids_.empty() || !std::filesystem::exists(pids_)) return out;
    for (const auto& e : std::filesystem::directory_iterator(pids_)) {
      if (e.path().extension() != ".pid") continue;
      std::ifstream f(e.path());
      pid_t pid = 0;
      if (f >> pid) out.push_back(pid);
    }
    return out;
  }

  // Waits until `n` workers wrote their pids.
  std::vector<pid_t> WaitForPids(size_t n) {
    for (int tries = 0; tries < 600; ++tries) {
      auto pids = WorkerPids();
      if (pids.size() >= n) return pids;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return WorkerPids();
  }

  void ExpectNoWorkerLeft() {
    for (pid_t pid : WorkerPids()) {
      // A killed worker's pid may linger a moment as its step ends.
      for (int tries = 0; tries < 100 && ProcessAlive(pid); ++tries) {
        std::this_thread::sleep_for(milliseconds(50));
      }
      EXPECT_FALSE(ProcessAlive(pid))
          << "worker " << pid << " outlived the job";
    }
  }

  TempDir dir_;
  std::unique_ptr<SlurmCluster> cluster_;
  std::string pids_;
};

// Inside salloc, with no -H: one srun step over both nodes, output by
// rank, every rank on the node the allocation lists for it.
TEST_F(SlurmTest, SallocRunsTheJobThroughOneSrunStep) {
  Result r = Run(Salloc({"--verbose", "-np", "4", HVD_HELLO}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectHello(r.out, 4);
  EXPECT_NE(r.err.find("4 workers in one srun step"), std::string::npos)
      << r.err;
  // Each worker sees where srun put it.
  r = Run(Salloc({"-np", "4", "/bin/sh", "-c",
                  "echo $HOROVOD_RANK $HVD_HOST $SLURMD_NODENAME"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> lines;
  for (const std::string& l : Lines(r.out)) lines.insert(l);
  const std::string a = cluster_->node(0), b = cluster_->node(1);
  EXPECT_EQ(lines, (std::set<std::string>{"[0]<stdout>:0 " + a + " " + a,
                                          "[1]<stdout>:1 " + a + " " + a,
                                          "[2]<stdout>:2 " + b + " " + b,
                                          "[3]<stdout>:3 " + b + " " + b}))
      << r.out;
}

// It trains: train_mnist through one srun step over both nodes learns, and
// every rank ends with the same weights (its per-epoch check).
TEST_F(SlurmTest, TrainMnistThroughSrun) {
  Result r =
      Run(Salloc({"-np", "4", HVD_TRAIN_MNIST, "--train-limit", "4000",
                  "--test-limit", "1000", "--epochs", "2", "--warmup-epochs",
                  "1", "--log-dir", "", "--checkpoint-dir", dir_.path()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("differ"), std::string::npos) << r.err;
  EXPECT_GT(TestAccuracy(r.out), 0.6) << r.out;
}

// A failing rank ends the step, and horovodrun exits with its status,
// naming it and its node.
TEST_F(SlurmTest, FailingRankEndsTheJobWithItsStatus) {
  Result r = Run(Salloc({"-np", "4", HVD_TEST_WORKER, "--pid-dir", pids_,
                         "--fail-rank", "2", "--code", "3", "--sleep", "60"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("horovodrun: rank 2 on host " + cluster_->node(1) +
                       " exited with code 3; stopping the srun step"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the first was rank 2 on host " + cluster_->node(1)),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.took, seconds(30));  // not the sleeping ranks' 60 s
  ExpectNoWorkerLeft();
}

// The same job from an sbatch script, waited for.
TEST_F(SlurmTest, SbatchScriptRunsTheJob) {
  const std::string out = dir_.path() + "/job.out";
  const std::string script =
      dir_.Write("job.sh",
                 "#!/bin/sh\n#SBATCH -N2\n#SBATCH -n4\n"
                 "exec " HVD_HOROVODRUN " -np 4 " HVD_HELLO "\n",
                 0755);
  Result r = Run({"/usr/bin/sbatch", "--wait", "-o", out, script});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  ExpectHello(text, 4, /*others_allowed=*/true);
}

// scancel of the allocation ends the job: horovodrun and every worker.
TEST_F(SlurmTest, ScancelEndsTheJob) {
  Subprocess job(Salloc({"-np", "4", HVD_TEST_WORKER, "--pid-dir", pids_,
                         "--fail-rank", "9", "--sleep", "120"}),
                 cluster_->env());
  const std::string id =
      job.WaitForStderr("Granted job allocation (\\d+)", seconds(30));
  ASSERT_FALSE(id.empty()) << job.StderrSoFar();
  ASSERT_EQ(WaitForPids(4).size(), 4u);
  Result cancel = Run({"/usr/bin/scancel", id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  Result r = job.Wait(kTimeout);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.took, seconds(100)) << "the job outlived scancel";
  // Slurm's own line names the node of the cancelled step.
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("STEP " + id + R"(\.0 ON hvdn[12] CANCELLED)")))
      << r.err;
  ExpectNoWorkerLeft();
}

// A node's workers die (as when the node fails): the job ends with a line
// naming that node.
TEST_F(SlurmTest, KilledNodeEndsTheJobNamingIt) {
  Subprocess job(Salloc({"-np", "4", HVD_TEST_WORKER, "--pid-dir", pids_,
                         "--fail-rank", "9", "--sleep", "120"}),
                 cluster_->env());
  ASSERT_EQ(WaitForPids(4).size(), 4u) << job.StderrSoFar();
  // Killed while ranks 0 and 1 still wait in the startup barrier, they
  // would fail there first and their exits could be the ones named.
  for (const char* rank : {"0", "1", "2", "3"}) {
    ASSERT_TRUE(WaitForFile(pids_ + "/" + rank + ".ready", kTimeout))
        << job.StderrSoFar();
  }
  // Ranks 2 and 3 run on the second node.
  for (const char* rank : {"2", "3"}) {
    std::ifstream f(pids_ + "/" + rank + ".pid");
    pid_t pid = 0;
    ASSERT_TRUE(f >> pid);
    kill(pid, SIGKILL);
  }
  Result r = job.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("horovodrun: rank [23] on host " + cluster_->node(1) +
                        " was killed by signal 9")))
      << r.err;
  ExpectNoWorkerLeft();
}

}  // namespace
}  // namespace hvd::testing
