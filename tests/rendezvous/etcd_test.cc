// hvd-rendezvousd on etcd (--store etcd://): a job outlives its daemon
// killed (-9) at any point, a standby daemon takes over from a killed one
// (at the same address, or at its own, listed to the clients),
// a dead etcd member loses nothing, and damaged records are refused.
// Against real etcd members the test starts on 127.0.0.1.
#include <gtest/gtest.h>

#include <future>

#include "rendezvous/client.h"
#include "tests/rendezvous/daemon_fixture.h"
#include "tests/rendezvous/etcd_fixture.h"
#include "tests/util/http_get.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class EtcdStoreTest : public RestartedDaemonTest {
 protected:
  void SetUp() override {
    if (!HaveEtcd()) {
      GTEST_SKIP() << "no etcd: packaging/install-deps.sh installs "
                      "etcd-server and etcd-client";
    }
  }
  void StartEtcd(int members) {
    etcd_ = std::make_unique<EtcdCluster>(dir_, members);
    for (int i = 0; i < members; ++i) {
      ASSERT_TRUE(etcd_->serving(i)) << etcd_->member(i).process->StderrSoFar();
    }
  }
  std::vector<std::string> StoreArgs() override {
    return {"--store", etcd_->url(), "--etcd-lease-seconds", "2"};
  }

  // A second daemon on the same prefix, listening on `listen` once it
  // serves; null (and a failure) when it does not stand by.
  std::unique_ptr<Subprocess> StartStandby(const std::string& listen) {
    std::vector<std::string> argv = {HVD_RENDEZVOUSD, "--listen", listen,
                                     "--admin-token-file",
                                     daemon_->token_file()};
    for (const std::string& a : StoreArgs()) argv.push_back(a);
    auto standby = std::make_unique<Subprocess>(argv);
    if (standby->WaitForStderr("(standing by)", seconds(30)).empty()) {
      ADD_FAILURE() << standby->StderrSoFar();
      return nullptr;
    }
    return standby;
  }
  // The serving daemon killed while the job runs: `standby` serves at
  // `at`, the job finishes every round, and the standby stops cleanly.
  void KillDuringTheJob(Subprocess& standby, const std::string& at) {
    ASSERT_FALSE(
        job_->process().WaitForStdout("(round 2 sum)", seconds(60)).empty())
        << job_->process().StderrSoFar();
    daemon_->Stop(SIGKILL);
    EXPECT_EQ(standby.WaitForStderr("listening on (\\S+)", seconds(30)), at)
        << standby.StderrSoFar();
    job_->ExpectEveryRound(40);
    kill(standby.pid(), SIGTERM);
    EXPECT_EQ(standby.Wait(seconds(30)).exit_code, 0);
  }

  // A daemon on this etcd that must not serve: it exits without ever
  // listening; what it said, for the caller's checks.
  Result RunRefused(const std::string& token_file) {
    Subprocess refused({HVD_RENDEZVOUSD, "--listen", "127.0.0.1:0",
                        "--admin-token-file", token_file, "--store",
                        etcd_->url()});
    Result r = refused.Wait(seconds(60));
    EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;
    return r;
  }

  std::unique_ptr<EtcdCluster> etcd_;
};

TEST_F(EtcdStoreTest, KilledBeforeTheWorkersJoin) {
  StartEtcd(1);
  StartDaemon();
  StartJob(HelloJob::kGated);
  // Not the daemon's job count: the job is in its table before horovodrun
  // hears of it, and horovodrun fails at once if that answer is lost.
  ASSERT_TRUE(job_->WaitForBothAtGate()) << job_->process().StderrSoFar();
  daemon_->Stop(SIGKILL);
  job_->OpenGate();  // the workers start while no daemon runs
  std::this_thread::sleep_for(milliseconds(500));
  StartDaemon();
  job_->ExpectEveryRound(3);
}

TEST_F(EtcdStoreTest, KilledWhileAWorkerWaitsForItsPeer) {
  StartEtcd(1);
  StartDaemon();
  StartJob(HelloJob::kRank1Gated);
  ASSERT_TRUE(WaitForMetric(metrics_, "hvd_rendezvous_workers 1"))
      << job_->process().StderrSoFar();
  KillAndRestart();
  job_->OpenGate();
  job_->ExpectEveryRound(3);
}

TEST_F(EtcdStoreTest, KilledWhileTheJobStepsThroughGenerations) {
  StartEtcd(1);
  StartDaemon();
  StartJob(HelloJob::kGenerations);
  ASSERT_FALSE(
      job_->process().WaitForStdout("(round 2 sum)", seconds(60)).empty())
      << job_->process().StderrSoFar();
  KillAndRestart();
  job_->ExpectEveryRound(40);
}

// Two daemons on one address and one prefix: the second stands by (it
// holds no port) and serves once the first is killed, with its jobs.
TEST_F(EtcdStoreTest, KilledWhileAnElasticJobLosesAHost) {
  StartEtcd(1);
  StartDaemon();
  ElasticHostLeavesWhileTheDaemonIsDown();
}

TEST_F(EtcdStoreTest, AStandbyDaemonTakesOverFromAKilledOne) {
  StartEtcd(1);
  StartDaemon();
  std::unique_ptr<Subprocess> standby = StartStandby(address_);
  ASSERT_TRUE(standby);
  StartJob(HelloJob::kGenerations);
  KillDuringTheJob(*standby, address_);
}

// Two daemons on one prefix at addresses of their own, both given to the
// job (--rendezvous-addr A,B): the serving one killed, the standby takes
// over at its address, and horovodrun and every worker move to it.
TEST_F(EtcdStoreTest, ClientsMoveToTheNextListedDaemon) {
  StartEtcd(1);
  StartDaemon();
  const std::string other =
      "127.0.0.1:" + std::to_string(FreePort("127.0.0.1"));
  std::unique_ptr<Subprocess> standby = StartStandby(other);
  ASSERT_TRUE(standby);
  job_ =
      std::make_unique<HelloJob>(dir_, address_ + "," + other,
                                 daemon_->token_file(), HelloJob::kGenerations);
  KillDuringTheJob(*standby, other);
}

// A three-member etcd cluster loses the member the daemon speaks to
// (the first listed) while the job runs: the daemon moves to another.
// etcd goes away, then the daemon is told to stop: a call whose change
// etcd never got is not answered as done, and the daemon stops at the end
// of its grace rather than after the store's own 30 s. (The lease is long,
// so that losing it does not stop the daemon first.)
TEST_F(EtcdStoreTest, StopsAtTheEndOfItsGraceWhileEtcdIsGone) {
  StartEtcd(1);
  const int metrics = FreePort("127.0.0.1");
  Daemon d(dir_, {"--store", etcd_->url(), "--etcd-lease-seconds", "60",
                  "--shutdown-grace-seconds", "1", "--metrics-port",
                  std::to_string(metrics)});
  auto first = rendezvous::RendezvousClient::CreateJob(
      d.address(), Daemon::kAdminToken, {{"localhost", 1}}, 1, seconds(10));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  etcd_->Kill(0);
  auto blocked = std::async(std::launch::async, [&] {
    return rendezvous::RendezvousClient::CreateJob(
        d.address(), Daemon::kAdminToken, {{"localhost", 1}}, 1, seconds(20));
  });
  // In the table, its answer waiting for etcd.
  ASSERT_TRUE(WaitForMetric(
      metrics,
      R"(hvd_rendezvous_calls_total{method="create_job",code="OK"} 2)"))
      << d.process().StderrSoFar();
  const auto start = std::chrono::steady_clock::now();
  Result r = d.Stop(SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(25)) << r.err;
  auto second = blocked.get();
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable)
      << second.status().ToString();
}

TEST_F(EtcdStoreTest, AnEtcdMemberKilledLosesNothing) {
  StartEtcd(3);
  StartDaemon();
  StartJob(HelloJob::kGenerations);
  ASSERT_FALSE(
      job_->process().WaitForStdout("(round 2 sum)", seconds(60)).empty())
      << job_->process().StderrSoFar();
  etcd_->Kill(0);
  job_->ExpectEveryRound(40);
}

// etcd with its auth on: the daemon signs in with --etcd-user and
// --etcd-password-file and serves; without them etcd refuses it, and it
// says so in one line and exits 1.
TEST_F(EtcdStoreTest, EtcdAuthWithUserAndPassword) {
  StartEtcd(1);
  ASSERT_EQ(etcd_
                ->Ctl({"user", "add", "root", "--new-user-password",
                       "secret-pw", "--interactive=false"})
                .exit_code,
            0);
  ASSERT_EQ(etcd_->Ctl({"auth", "enable"}).exit_code, 0);
  const std::string token = dir_.Write("admin-token", "admin-token\n", 0600);
  Result r = RunRefused(token);
  EXPECT_GT(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("etcd 127.0.0.1"), std::string::npos) << r.err;
  const std::string pw = dir_.Write("etcd-password", "secret-pw\n", 0600);
  daemon_ = std::make_unique<Daemon>(
      dir_, std::vector<std::string>{"--store", etcd_->url(), "--etcd-user",
                                     "root", "--etcd-password-file", pw});
  ASSERT_FALSE(daemon_->address().empty()) << daemon_->process().StderrSoFar();
  address_ = daemon_->address();
  StartJob(HelloJob::kGated);
  job_->OpenGate();
  job_->ExpectEveryRound(3);
}

// etcd serving TLS only, with client certificates required: the daemon
// without --etcd-ca cannot reach it and says so; with the CA and a client
// certificate it serves.
TEST_F(EtcdStoreTest, TlsToEtcdWithAClientCertificate) {
  Certs certs;
  ASSERT_TRUE(MakeCerts(dir_, certs)) << "openssl failed";
  etcd_ = std::make_unique<EtcdCluster>(
      dir_, 1,
      EtcdTlsFiles{certs.ca, certs.server_cert, certs.server_key,
                   certs.client_cert, certs.client_key});
  ASSERT_TRUE(etcd_->serving(0)) << etcd_->member(0).process->StderrSoFar();
  const std::string token = dir_.Write("admin-token", "admin-token\n", 0600);
  Result r = RunRefused(token);
  EXPECT_GT(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("etcd 127.0.0.1"), std::string::npos) << r.err;
  daemon_ = std::make_unique<Daemon>(
      dir_, std::vector<std::string>{"--store", etcd_->url(), "--etcd-ca",
                                     certs.ca, "--etcd-cert", certs.client_cert,
                                     "--etcd-key", certs.client_key});
  ASSERT_FALSE(daemon_->address().empty()) << daemon_->process().StderrSoFar();
  address_ = daemon_->address();
  StartJob(HelloJob::kGated);
  job_->OpenGate();
  job_->ExpectEveryRound(3);
}

// A log key that is not a batch of records: the daemon refuses to serve
// and names the key.
TEST_F(EtcdStoreTest, ADamagedRecordIsRefusedWithItsKey) {
  StartEtcd(1);
  StartDaemon();
  auto job = rendezvous::RendezvousClient::CreateJob(
      address_, Daemon::kAdminToken, {{"localhost", 1}}, 1, seconds(10));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  Result stopped = daemon_->Stop(SIGTERM);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  Result listed =
      etcd_->Ctl({"get", "--prefix", "--keys-only", "/hvd-rendezvous/log/"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const std::string key = listed.out.substr(0, listed.out.find('\n'));
  ASSERT_NE(key.find("/hvd-rendezvous/log/"), std::string::npos) << listed.out;
  ASSERT_EQ(etcd_->Ctl({"put", key, "not a record"}).exit_code, 0);
  Result r = RunRefused(daemon_->token_file());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(key), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--discard-damaged-state"), std::string::npos) << r.err;

  // Told to, it keeps the records aside and starts empty.
  Daemon empty(dir_, {"--store", etcd_->url(), "--discard-damaged-state"});
  ASSERT_FALSE(empty.address().empty()) << empty.process().StderrSoFar();
  EXPECT_NE(empty.process().StderrSoFar().find("starting empty"),
            std::string::npos)
      << empty.process().StderrSoFar();
  Result aside =
      etcd_->Ctl({"get", "--prefix", "--keys-only", "/hvd-rendezvous/"});
  EXPECT_NE(aside.out.find("/hvd-rendezvous/damaged-"), std::string::npos)
      << aside.out;
  EXPECT_EQ(aside.out.find("/hvd-rendezvous/log/"), std::string::npos)
      << aside.out;
  auto job2 = rendezvous::RendezvousClient::CreateJob(
      empty.address(), Daemon::kAdminToken, {{"localhost", 1}}, 1, seconds(10));
  EXPECT_TRUE(job2.ok()) << job2.status().ToString();
}

}  // namespace
}  // namespace hvd::testing
