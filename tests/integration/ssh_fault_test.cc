// Failures of jobs that run over SSH: whatever dies, the job ends with the
// right status and nothing of it is left on any host.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/util/job_pids.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

void ExpectAllGone(const std::vector<pid_t>& pids) {
  for (pid_t p : Survivors(pids))
    ADD_FAILURE() << "pid " << p << " outlived the job";
}

pid_t ReadPid(const std::string& path) {
  std::ifstream f(path);
  pid_t p = 0;
  f >> p;
  return p;
}

class SshFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = WhyNoRootLogin(); !why.empty()) GTEST_SKIP() << why;
    host_ = std::make_unique<SshHost>(dir_, "h1");
    ASSERT_TRUE(host_->ok()) << host_->error();
    pids_ = dir_.path() + "/pids";
    fs::create_directories(pids_);
  }
  // Three workers: rank 0 here, ranks 1 and 2 over SSH; each leaves its pid
  // and its child's pid in pids_ and then sleeps.
  std::unique_ptr<Subprocess> StartJob() {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{
            HVD_HOROVODRUN, "-p", std::to_string(host_->port()), "-i",
            host_->user_key(), "-np", "3", "-H", "localhost:1,root@127.0.0.1:2",
            HVD_TEST_WORKER, "--pid-dir", pids_, "--spawn-child", "--sleep",
            "120"},
        std::vector<std::string>{"HOME=" + home_.path()});
  }
  TempDir dir_, home_;
  std::unique_ptr<SshHost> host_;
  std::string pids_;
};

TEST_F(SshFaultTest, KilledRemoteWorkerEndsTheJob) {
  auto job = StartJob();
  ASSERT_TRUE(WaitForPids(pids_, 6, seconds(60))) << job->StderrSoFar();
  kill(ReadPid(pids_ + "/2.pid"), SIGKILL);
  Result r = job->Wait(seconds(60));
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_NE(r.err.find("rank 2 on host 127.0.0.1 exited with code 137"),
            std::string::npos)
      << r.err;
  ExpectAllGone(ReadPids(pids_));
}

TEST_F(SshFaultTest, KilledLauncherLeavesNothingOnAnyHost) {
  auto job = StartJob();
  ASSERT_TRUE(WaitForPids(pids_, 6, seconds(60))) << job->StderrSoFar();
  kill(job->pid(), SIGKILL);
  job->Wait(seconds(30));
  ExpectAllGone(ReadPids(pids_));
}

TEST_F(SshFaultTest, CtrlCStopsRemoteWorkers) {
  auto job = StartJob();
  ASSERT_TRUE(WaitForPids(pids_, 6, seconds(60))) << job->StderrSoFar();
  kill(job->pid(), SIGINT);
  Result r = job->Wait(seconds(60));
  EXPECT_EQ(r.exit_code, 130) << r.err;
  ExpectAllGone(ReadPids(pids_));
}

TEST_F(SshFaultTest, KilledSshdEndsTheJobWithAMessage) {
  auto job = StartJob();
  ASSERT_TRUE(WaitForPids(pids_, 6, seconds(60))) << job->StderrSoFar();
  host_->KillAll();
  Result r = job->Wait(seconds(60));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("connection lost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("on host 127.0.0.1"), std::string::npos) << r.err;
  ExpectAllGone(ReadPids(pids_));
}

// A host's workers share one SSH connection, held by one of their
// hvd-ssh-exec processes. Whichever rank fails, the holder's or another's,
// the job ends naming that rank and its status (the holder's connection
// closing must not put another rank's "connection lost" first), and
// nothing is left behind.
TEST_F(SshFaultTest, AFailingRankOfASharedHostIsTheOneNamed) {
  for (int fail : {0, 1, 2}) {
    const std::string pids = pids_ + "/" + std::to_string(fail);
    fs::create_directories(pids);
    Subprocess job(
        std::vector<std::string>{
            HVD_HOROVODRUN, "-p", std::to_string(host_->port()), "-i",
            host_->user_key(), "-np", "3", "-H", "root@127.0.0.1:3",
            HVD_TEST_WORKER, "--pid-dir", pids, "--spawn-child", "--fail-rank",
            std::to_string(fail), "--code", "3", "--sleep", "120"},
        std::vector<std::string>{"HOME=" + home_.path()});
    Result r = job.Wait(seconds(90));
    EXPECT_EQ(r.exit_code, 3) << "failing rank " << fail << ": " << r.err;
    EXPECT_NE(r.err.find("rank " + std::to_string(fail) +
                         " on host 127.0.0.1 exited with code 3"),
              std::string::npos)
        << r.err;
    ExpectAllGone(ReadPids(pids));
  }
}

}  // namespace
}  // namespace hvd::testing
