// hvd-rendezvousd going away under its clients: they get a clear error,
// never a hang.
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
  const std::string line =
      "hvd_rendezvous_blocked_waits " + std::to_string(n) + "\n";
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (HttpGet(metrics_port, "/metrics").body.find(line) !=
        std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

TEST(DaemonFaultTest, SigtermCancelsBlockedWaitsAndExitsZero) {
  TempDir dir;
  const int metrics = FreePort("127.0.0.1");
  Daemon d(dir, {"--shutdown-grace-seconds", "2", "--metrics-port",
                 std::to_string(metrics)});
  auto job = RendezvousClient::CreateJob(d.address(), Daemon::kAdminToken,
                                         {{"localhost", 3}}, 3, seconds(10));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::vector<std::future<Status>> waits;
  for (int i = 0; i < 4; ++i) {
    waits.push_back(std::async(std::launch::async, [&, i] {
      auto c = RendezvousClient::Create(d.address(), job->job_id, job->token);
      if (i == 3) return c->Barrier("b", 0, seconds(60));
      return c->Wait({"never" + std::to_string(i)}, seconds(60)).status();
    }));
  }
  // SIGTERM only once all four block in the daemon.
  ASSERT_TRUE(WaitForBlocked(metrics, 4)) << d.process().StderrSoFar();
  auto start = std::chrono::steady_clock::now();
  Result r = d.Stop(SIGTERM);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.took, seconds(30));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  for (auto& w : waits) {
    Status s = w.get();
    EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
    EXPECT_NE(s.message().find("shutting down (SIGTERM)"), std::string::npos)
        << s.message();
  }
}

TEST(DaemonFaultTest, RestartDuringAJobGivesClearErrorsNotHangs) {
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
  auto start = std::chrono::steady_clock::now();
  d->Stop(SIGKILL);
  auto r = blocked.get();
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable)
      << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));

  // The daemon comes back on the same port, without the job.
  d = std::make_unique<Daemon>(dir, std::vector<std::string>{}, address);
  ASSERT_EQ(d->address(), address) << d->process().StderrSoFar();
  auto again = worker->Wait({"peer"}, seconds(10));
  EXPECT_EQ(again.status().code(), StatusCode::kNotFound);
  EXPECT_NE(again.status().message().find("restarted"), std::string::npos)
      << again.status().message();
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
