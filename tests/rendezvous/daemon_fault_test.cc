// hvd-rendezvousd going away under its clients: they wait for it to come
// back, and get a clear error, never a hang.
#include <gtest/gtest.h>

#include <future>
#include <regex>

#include "rendezvous/client.h"
#include "tests/rendezvous/daemon_fixture.h"
#include "tests/util/http_get.h"
#include "tests/util/job_pids.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using rendezvous::RendezvousClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Waits until the daemon's metrics say `n` calls block in it (60 s at most).
bool WaitForBlocked(int metrics_port, int n) {
  return WaitForMetric(metrics_port,
                       "hvd_rendezvous_blocked_waits " + std::to_string(n));
}

// SIGTERM (systemctl stop or restart): the daemon exits 0 within its
// grace, and its blocked clients wait for it to come back rather than
// fail; one that comes back without the job (no state directory) ends
// them with an error saying so.
TEST(DaemonFaultTest, SigtermExitsZeroAndBlockedClientsWaitForItsReturn) {
  TempDir dir;
  const int metrics = FreePort("127.0.0.1");
  auto d = std::make_unique<Daemon>(
      dir, std::vector<std::string>{"--shutdown-grace-seconds", "2",
                                    "--metrics-port", std::to_string(metrics)});
  const std::string address = d->address();
  auto job = RendezvousClient::CreateJob(address, Daemon::kAdminToken,
                                         {{"localhost", 3}}, 3, seconds(10));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::vector<std::future<Status>> waits;
  for (int i = 0; i < 4; ++i) {
    waits.push_back(std::async(std::launch::async, [&, i] {
      auto c = RendezvousClient::Create(address, job->job_id, job->token);
      if (i == 3) return c->Barrier("b", 0, seconds(120));
      return c->Wait({"never" + std::to_string(i)}, seconds(120)).status();
    }));
  }
  // SIGTERM only once all four block in the daemon.
  ASSERT_TRUE(WaitForBlocked(metrics, 4)) << d->process().StderrSoFar();
  auto start = std::chrono::steady_clock::now();
  Result r = d->Stop(SIGTERM);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  for (auto& w : waits) {
    EXPECT_EQ(w.wait_for(milliseconds(0)), std::future_status::timeout);
  }
  d = std::make_unique<Daemon>(dir, std::vector<std::string>{}, address);
  ASSERT_EQ(d->address(), address) << d->process().StderrSoFar();
  for (auto& w : waits) {
    Status s = w.get();
    EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
    EXPECT_NE(s.message().find("restarted"), std::string::npos) << s.message();
  }
}

TEST(DaemonFaultTest, KilledDaemonsClientsWaitAndLearnTheJobIsGone) {
  TempDir dir;
  const int metrics = FreePort("127.0.0.1");
  auto d = std::make_unique<Daemon>(
      dir, std::vector<std::string>{"--metrics-port", std::to_string(metrics)});
  std::string address = d->address();
  auto job = RendezvousClient::CreateJob(address, Daemon::kAdminToken,
                                         {{"localhost", 2}}, 2, seconds(10));
  ASSERT_TRUE(job.ok());
  auto worker = RendezvousClient::Create(address, job->job_id, job->token);
  ASSERT_TRUE(worker->Join("localhost", 0, seconds(10)).ok());
  auto blocked = std::async(
      std::launch::async, [&] { return worker->Wait({"peer"}, seconds(120)); });
  ASSERT_TRUE(WaitForBlocked(metrics, 1)) << d->process().StderrSoFar();
  d->Stop(SIGKILL);
  EXPECT_EQ(blocked.wait_for(milliseconds(0)), std::future_status::timeout);

  // The daemon comes back on the same port, without the job (it keeps no
  // state): the wait, sent again, says so.
  d = std::make_unique<Daemon>(dir, std::vector<std::string>{}, address);
  ASSERT_EQ(d->address(), address) << d->process().StderrSoFar();
  auto r = blocked.get();
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("restarted"), std::string::npos)
      << r.status().message();
}

// Waits until the daemon's metrics show `line` (60 s at most).
// hvd-rendezvousd with a state directory, killed (-9) and started again on
// the same address half a second later, as an operator or an OOM kill
// would, at one point of a two-rank horovodrun job; the job must finish
// with every round's sum right (hvd_hello checks them).
class StateDirTest : public RestartedDaemonTest {
 protected:
  std::vector<std::string> StoreArgs() override {
    return {"--state-dir", dir_.path() + "/state"};
  }
  void OpenGate() { job_->OpenGate(); }
  void ExpectEveryRound(int rounds) { job_->ExpectEveryRound(rounds); }
};

TEST_F(StateDirTest, KilledBeforeTheWorkersJoin) {
  StartDaemon();
  StartJob(HelloJob::kGated);
  // Not the daemon's job count: the job is in its table before horovodrun
  // hears of it, and horovodrun fails at once if that answer is lost.
  ASSERT_TRUE(job_->WaitForBothAtGate()) << job_->process().StderrSoFar();
  daemon_->Stop(SIGKILL);
  // The workers start and join while no daemon runs.
  OpenGate();
  std::this_thread::sleep_for(milliseconds(500));
  StartDaemon();
  ExpectEveryRound(3);
}

TEST_F(StateDirTest, KilledWhileAWorkerWaitsForItsPeer) {
  StartDaemon();
  StartJob(HelloJob::kRank1Gated);
  // Rank 0 has joined; its init waits in the daemon for rank 1.
  ASSERT_TRUE(WaitForMetric(metrics_, "hvd_rendezvous_workers 1"))
      << job_->process().StderrSoFar();
  KillAndRestart();
  OpenGate();
  ExpectEveryRound(3);
}

TEST_F(StateDirTest, KilledWhileTheJobStepsThroughGenerations) {
  StartDaemon();
  StartJob(HelloJob::kGenerations);
  ASSERT_FALSE(
      job_->process().WaitForStdout("(round 2 sum)", seconds(60)).empty())
      << job_->process().StderrSoFar();
  KillAndRestart();
  ExpectEveryRound(40);
}

// The same for a Python job (horovod.torch over libhvd's client): 40
// rounds, each a new init(), the daemon killed after round 2.
TEST_F(StateDirTest, KilledWhileAPythonJobStepsThroughGenerations) {
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0 ||
      !std::filesystem::exists(HVD_PYTHON_PACKAGE "/hvd/__init__.py")) {
    GTEST_SKIP() << "no python3-torch or no hvd Python package built";
  }
  StartDaemon();
  StartJob("exec /usr/bin/python3 " HVD_SOURCE_DIR
           "/tests/python/rounds_job.py --rounds 40 --late-rank 1 "
           "--late-ms 300");
  ASSERT_FALSE(
      job_->process().WaitForStdout("(round 2 sum)", seconds(120)).empty())
      << job_->process().StderrSoFar();
  KillAndRestart();
  ExpectEveryRound(40);
}

TEST_F(StateDirTest, KilledWhileAnElasticJobLosesAHost) {
  StartDaemon();
  ElasticHostLeavesWhileTheDaemonIsDown();
}

TEST(DaemonFaultTest, LauncherDeathEndsItsJobByTtl) {
  TempDir dir;
  // horovodrun creates the job and is killed before it can end it; once the
  // job is gone by TTL, a daemon limited to one job takes a new one.
  Daemon one(dir, {"--job-ttl-seconds", "1", "--max-jobs", "1"});
  // Its worker starts once the job exists, and says so.
  const std::string up = dir.path() + "/up";
  Subprocess run2({HVD_HOROVODRUN, "-np", "1", "--rendezvous-addr",
                   one.address(), "--rendezvous-token-file", one.token_file(),
                   "/bin/sh", "-c", "touch " + up + "; exec sleep 60"});
  ASSERT_TRUE(WaitForFile(up, seconds(60))) << run2.StderrSoFar();
  kill(run2.pid(), SIGKILL);
  run2.Wait(seconds(30));
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  StatusOr<rendezvous::CreatedJob> next = Status::Internal("not tried");
  while (std::chrono::steady_clock::now() < deadline) {
    next = RendezvousClient::CreateJob(one.address(), Daemon::kAdminToken,
                                       {{"h", 1}}, 1, seconds(5));
    if (next.ok()) break;
    EXPECT_EQ(next.status().code(), StatusCode::kResourceExhausted);
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(next.ok()) << next.status().ToString();
}

}  // namespace
}  // namespace hvd::testing
