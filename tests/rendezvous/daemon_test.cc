// hvd-rendezvousd as an operator runs it, with independent clients.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <fstream>
#include <future>
#include <regex>

#include "common/files.h"
#include "rendezvous/client.h"
#include "tests/rendezvous/daemon_fixture.h"
#include "tests/util/browser.h"
#include "tests/util/http_get.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using rendezvous::ClientTls;
using rendezvous::RendezvousClient;
using std::chrono::milliseconds;
using std::chrono::seconds;

// grpc.health.v1.Health/Check through a generic stub: no hvd code on the
// client side, as a load balancer's probe would do it.
StatusCode HealthCheck(const std::string& address, std::string* status_bytes) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
  grpc::Slice empty("", 0);
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                 &request, &response,
                 [&](grpc::Status s) { done.set_value(s); });
  grpc::Status s = done.get_future().get();
  if (s.ok()) {
    std::vector<grpc::Slice> slices;
    (void)response.Dump(&slices);
    status_bytes->clear();
    for (const auto& sl : slices) {
      status_bytes->append(reinterpret_cast<const char*>(sl.begin()),
                           sl.size());
    }
  }
  return static_cast<StatusCode>(s.error_code());
}

StatusOr<rendezvous::CreatedJob> Create(const std::string& address,
                                        const std::string& admin,
                                        const ClientTls& tls = {}) {
  return RendezvousClient::CreateJob(address, admin, {{"localhost", 2}}, 2,
                                     seconds(10), tls);
}

TEST(DaemonTest, LogsListeningAndServesHealth) {
  TempDir dir;
  Daemon d(dir);
  ASSERT_FALSE(d.address().empty()) << d.process().StderrSoFar();
  EXPECT_TRUE(std::regex_match(d.address(), std::regex(R"(127\.0\.0\.1:\d+)")));
  std::string status;
  ASSERT_EQ(HealthCheck(d.address(), &status), StatusCode::kOk);
  EXPECT_EQ(status, std::string("\x08\x01", 2));  // status: SERVING
  Result r = d.Stop(SIGTERM);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(DaemonTest, AdminTokenGuardsJobCreation) {
  TempDir dir;
  Daemon d(dir);
  EXPECT_TRUE(Create(d.address(), Daemon::kAdminToken).ok());
  auto wrong = Create(d.address(), "guess");
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnauthenticated);
  auto none = Create(d.address(), "");
  EXPECT_EQ(none.status().code(), StatusCode::kUnauthenticated);
}

// --metrics-port: the daemon's own figures, refusals by reason included,
// in a form promtool accepts.
TEST(DaemonTest, ServesItsOwnMetrics) {
  TempDir dir;
  const int port = FreePort("127.0.0.1");
  Daemon d(dir, {"--metrics-port", std::to_string(port)});
  ASSERT_FALSE(d.address().empty()) << d.process().StderrSoFar();
  auto job = Create(d.address(), Daemon::kAdminToken);
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(Create(d.address(), "guess").ok());
  auto client = RendezvousClient::Create(d.address(), job->job_id, job->token);
  ASSERT_TRUE(client->Join("localhost", 0, seconds(5)).ok());
  ASSERT_TRUE(client->Set("k", "v").ok());
  EXPECT_FALSE(client->Get("missing").ok());
  HttpResponse r = HttpGet(port, "/metrics");
  ASSERT_EQ(r.code, 200);
  for (const char* line :
       {"hvd_rendezvous_jobs 1\n", "hvd_rendezvous_workers 1\n",
        "hvd_rendezvous_blocked_waits 0\n",
        "hvd_rendezvous_calls_total{method=\"create_job\",code=\"OK\"} 1\n",
        "hvd_rendezvous_refused_total{method=\"create_job\",reason="
        "\"UNAUTHENTICATED\"} 1\n",
        "hvd_rendezvous_calls_total{method=\"set\",code=\"OK\"} 1\n",
        "hvd_rendezvous_refused_total{method=\"get\",reason=\"NOT_FOUND\"} "
        "1\n",
        "# TYPE hvd_rendezvous_call_seconds histogram\n",
        "hvd_rendezvous_call_seconds_count{method=\"join\"} 1\n"}) {
    EXPECT_NE(r.body.find(line), std::string::npos) << line << r.body;
  }
  if (::access("/usr/bin/promtool", X_OK) == 0) {
    std::string out;
    EXPECT_TRUE(ShellCapture(
        "/usr/bin/promtool check metrics < " + dir.Write("m.txt", r.body),
        &out))
        << out;
  }
}

// The page of the jobs on --metrics-port: its data only with the admin
// token; each job with its members (and how they exited) and the store's
// health; rendered by a real browser given the token in a link.
TEST(DaemonTest, ServesAPageOfItsJobsBehindTheAdminToken) {
  TempDir dir;
  const int port = FreePort("127.0.0.1");
  Daemon d(dir, {"--metrics-port", std::to_string(port), "--state-dir",
                 dir.path() + "/state"});
  ASSERT_FALSE(d.address().empty()) << d.process().StderrSoFar();
  auto job = Create(d.address(), Daemon::kAdminToken);
  ASSERT_TRUE(job.ok());
  auto client = RendezvousClient::Create(d.address(), job->job_id, job->token);
  ASSERT_TRUE(client->Join("localhost", 1, seconds(5)).ok());
  ASSERT_TRUE(client->Set("hvd/exit/localhost/1", "3").ok());
  EXPECT_EQ(HttpGet(port, "/api/jobs").code, 403);
  EXPECT_EQ(HttpGet(port, "/api/jobs", "Authorization: Bearer guess\r\n").code,
            403);
  // The job's own token is no admin's.
  EXPECT_EQ(
      HttpGet(port, "/api/jobs", "Authorization: Bearer " + job->token + "\r\n")
          .code,
      403);
  HttpResponse r = HttpGet(
      port, "/api/jobs",
      "Authorization: Bearer " + std::string(Daemon::kAdminToken) + "\r\n");
  ASSERT_EQ(r.code, 200) << r.body;
  for (const std::string& part :
       {"\"id\":\"" + job->job_id + "\"", std::string("\"elastic\":false"),
        std::string("\"size\":2"),
        std::string(R"([1,"localhost",1,1,3])"),     // joined, exited 3
        std::string(R"([0,"localhost",0,0,null])"),  // never joined
        std::string(R"("healthy":true)"), std::string("state directory")}) {
    EXPECT_NE(r.body.find(part), std::string::npos) << part << "\n" << r.body;
  }
  EXPECT_EQ(r.body.find(job->token), std::string::npos);  // no secret shown
  const HttpResponse page = HttpGet(port, "/");
  EXPECT_EQ(page.code, 200);
  EXPECT_NE(page.body.find("<title>hvd-rendezvousd</title>"),
            std::string::npos);
  if (!ChromiumPath().empty()) {
    EXPECT_EQ(
        PageLacks("http://127.0.0.1:" + std::to_string(port) +
                      "/#token=" + std::string(Daemon::kAdminToken),
                  {R"(<tr data-job=")" + job->job_id + "\">", "exited 3"}),
        "");
  }
}

TEST(DaemonTest, JobsAreIsolatedFromEachOther) {
  TempDir dir;
  Daemon d(dir);
  auto a = Create(d.address(), Daemon::kAdminToken);
  auto b = Create(d.address(), Daemon::kAdminToken);
  ASSERT_TRUE(a.ok() && b.ok());
  auto ca = RendezvousClient::Create(d.address(), a->job_id, a->token);
  auto cb = RendezvousClient::Create(d.address(), b->job_id, b->token);
  ASSERT_TRUE(ca->Set("secret", "a").ok());
  EXPECT_EQ(cb->Get("secret").status().code(), StatusCode::kNotFound);
  // Job a's token opens nothing of job b.
  auto cross = RendezvousClient::Create(d.address(), b->job_id, a->token);
  EXPECT_EQ(cross->Get("secret").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(cross->Join("localhost", 0, seconds(5)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(cross->EndJob("x").code(), StatusCode::kUnauthenticated);
  auto none = RendezvousClient::Create(d.address(), b->job_id, "");
  EXPECT_EQ(none->GetJob().status().code(), StatusCode::kUnauthenticated);
}

// An elastic job is created with no hosts; its creator sends each
// membership, once per epoch, and only its token may.
TEST(DaemonTest, AnElasticJobsMembershipsComeFromItsCreator) {
  TempDir dir;
  Daemon d(dir);
  auto job = RendezvousClient::CreateJob(d.address(), Daemon::kAdminToken, {},
                                         0, seconds(10), {}, /*elastic=*/true);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto owner = RendezvousClient::Create(d.address(), job->job_id, job->token);
  auto first = owner->SetMembership({{"a", 2}}, 2, 0);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, 1);
  // The same change again (an answer lost): its epoch, no new one.
  EXPECT_EQ(*owner->SetMembership({{"a", 2}}, 2, 0), 1);
  auto joined = owner->Join("a", 1, seconds(5));
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->rank, 1);
  EXPECT_EQ(joined->generation, 1);
  EXPECT_EQ(owner->SetMembership({{"b", 1}}, 1, 0).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(*owner->SetMembership({{"b", 1}}, 1, 1), 2);
  auto stranger = RendezvousClient::Create(d.address(), job->job_id, "x");
  EXPECT_EQ(stranger->SetMembership({{"c", 1}}, 1, 2).status().code(),
            StatusCode::kUnauthenticated);
  // A job created with its hosts keeps them.
  auto fixed = Create(d.address(), Daemon::kAdminToken);
  ASSERT_TRUE(fixed.ok());
  auto creator =
      RendezvousClient::Create(d.address(), fixed->job_id, fixed->token);
  EXPECT_EQ(creator->SetMembership({{"c", 1}}, 1, 1).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(DaemonTest, RequestErrorsUseTheRightCodes) {
  TempDir dir;
  Daemon d(dir, {"--max-value-bytes", "16"});
  auto job = Create(d.address(), Daemon::kAdminToken);
  ASSERT_TRUE(job.ok());
  auto c = RendezvousClient::Create(d.address(), job->job_id, job->token);
  Status big = c->Set("k", std::string(17, 'x'));
  EXPECT_EQ(big.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(big.message().find("--max-value-bytes"), std::string::npos);
  EXPECT_EQ(c->Set("", "v").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c->Join("localhost", 2, seconds(5)).status().code(),
            StatusCode::kFailedPrecondition);
  auto first = c->Join("localhost", 1, seconds(5));
  auto again = c->Join("localhost", 1, seconds(5));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(*first, *again);
  auto unknown = RendezvousClient::Create(d.address(), "0000", job->token);
  EXPECT_EQ(unknown->Get("k").status().code(), StatusCode::kNotFound);
  auto bad = RendezvousClient::CreateJob(d.address(), Daemon::kAdminToken,
                                         {{"h", 0}}, 0, seconds(5));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(DaemonTest, TooManyJobsNamesTheFlag) {
  TempDir dir;
  Daemon d(dir, {"--max-jobs", "1"});
  ASSERT_TRUE(Create(d.address(), Daemon::kAdminToken).ok());
  auto second = Create(d.address(), Daemon::kAdminToken);
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("--max-jobs"), std::string::npos);
}

TEST(DaemonTest, EndJobAbortsBlockedWaitsWithTheReason) {
  TempDir dir;
  Daemon d(dir);
  auto job = Create(d.address(), Daemon::kAdminToken);
  auto waiter = RendezvousClient::Create(d.address(), job->job_id, job->token);
  auto owner = RendezvousClient::Create(d.address(), job->job_id, job->token);
  auto result = std::async(
      std::launch::async, [&] { return waiter->Wait({"never"}, seconds(60)); });
  ASSERT_EQ(result.wait_for(milliseconds(200)), std::future_status::timeout);
  ASSERT_TRUE(owner->EndJob("the launcher is done").ok());
  auto r = result.get();
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_NE(r.status().message().find("the launcher is done"),
            std::string::npos);
  EXPECT_EQ(owner->GetJob().status().code(), StatusCode::kNotFound);
}

TEST(DaemonTest, JobWithoutKeepAliveExpires) {
  TempDir dir;
  Daemon d(dir, {"--job-ttl-seconds", "1"});
  auto job = Create(d.address(), Daemon::kAdminToken);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->ttl_seconds, 1);
  auto c = RendezvousClient::Create(d.address(), job->job_id, job->token);
  auto start = std::chrono::steady_clock::now();
  auto r = c->Wait({"never"}, seconds(60));
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_NE(r.status().message().find("expired"), std::string::npos)
      << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  EXPECT_EQ(c->GetJob().status().code(), StatusCode::kNotFound);
}

TEST(DaemonTest, KeepAliveKeepsTheJob) {
  TempDir dir;
  Daemon d(dir, {"--job-ttl-seconds", "1"});
  auto job = Create(d.address(), Daemon::kAdminToken);
  auto c = RendezvousClient::Create(d.address(), job->job_id, job->token);
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(milliseconds(300));
    ASSERT_TRUE(c->KeepAlive().ok()) << i;
  }
  EXPECT_TRUE(c->GetJob().ok());
}

TEST(DaemonTest, ConfigFileSetsTheSameKeys) {
  TempDir dir;
  std::string token = dir.Write("tok", "from-config\n");
  std::string cfg = dir.Write(
      "d.yaml",
      "listen: 127.0.0.1:0\nadmin_token_file: " + token + "\nmax-jobs: 1\n",
      0644);
  Subprocess p({HVD_RENDEZVOUSD, "--config", cfg});
  std::string address = p.WaitForStderr("listening on (\\S+)", seconds(20));
  ASSERT_FALSE(address.empty()) << p.StderrSoFar();
  EXPECT_TRUE(Create(address, "from-config").ok());
  EXPECT_EQ(Create(address, "from-config").status().code(),
            StatusCode::kResourceExhausted);
  kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.Wait(seconds(30)).exit_code, 0);
}

TEST(DaemonTest, BadStartIsOneLineAndNonZero) {
  TempDir dir;
  std::string open_token = dir.Write("open", "t\n", 0644);
  Result r = RunCommand({HVD_RENDEZVOUSD, "--admin-token-file", open_token},
                        seconds(30));
  EXPECT_NE(r.exit_code, 0);
  ASSERT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
  r = RunCommand({HVD_RENDEZVOUSD}, seconds(30));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--admin-token-file: is required"), std::string::npos);
  std::string token = dir.Write("tok", "t\n");
  r = RunCommand(
      {HVD_RENDEZVOUSD, "--admin-token-file", token, "--listen", "nonsense"},
      seconds(30));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
}

TEST(DaemonTest, NotifyProtocolReadyThenStopping) {
  TempDir dir;
  std::string path = dir.path() + "/notify";
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  Daemon d(dir, {}, "127.0.0.1:0", {"NOTIFY_SOCKET=" + path});
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  ASSERT_GT(n, 0);
  std::string ready(buf, n);
  EXPECT_EQ(ready.rfind("READY=1\n", 0), 0u) << ready;
  EXPECT_NE(ready.find("STATUS=listening on " + d.address()),
            std::string::npos);
  // READY comes only once the listener accepts calls.
  std::string status;
  EXPECT_EQ(HealthCheck(d.address(), &status), StatusCode::kOk);
  kill(d.process().pid(), SIGTERM);
  n = recv(fd, buf, sizeof(buf), 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, n), "STOPPING=1");
  EXPECT_EQ(d.Stop(SIGTERM).exit_code, 0);
  close(fd);
}

TEST(DaemonTest, TlsServesVerifiedClientsOnly) {
  TempDir dir;
  Certs certs;
  ASSERT_TRUE(MakeCerts(dir, certs)) << "openssl failed";
  Daemon d(dir,
           {"--tls-cert", certs.server_cert, "--tls-key", certs.server_key});
  ASSERT_FALSE(d.address().empty()) << d.process().StderrSoFar();
  EXPECT_NE(d.process().StderrSoFar().find("(TLS)"), std::string::npos);
  ClientTls tls{*ReadWholeFile(certs.ca), "", ""};
  auto job = Create(d.address(), Daemon::kAdminToken, tls);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto c = RendezvousClient::Create(d.address(), job->job_id, job->token, tls);
  EXPECT_TRUE(c->Set("k", "v").ok());
  // A plaintext client cannot talk to it.
  auto plain = Create(d.address(), Daemon::kAdminToken);
  EXPECT_EQ(plain.status().code(), StatusCode::kUnavailable);
}

TEST(DaemonTest, MutualTlsNeedsAClientCertificate) {
  TempDir dir;
  Certs certs;
  ASSERT_TRUE(MakeCerts(dir, certs)) << "openssl failed";
  Daemon d(dir, {"--tls-cert", certs.server_cert, "--tls-key", certs.server_key,
                 "--tls-client-ca", certs.ca});
  ASSERT_FALSE(d.address().empty()) << d.process().StderrSoFar();
  std::string ca = *ReadWholeFile(certs.ca);
  auto without = Create(d.address(), Daemon::kAdminToken, {ca, "", ""});
  EXPECT_FALSE(without.ok());
  ClientTls tls{ca, *ReadWholeFile(certs.client_cert),
                *ReadWholeFile(certs.client_key)};
  auto with = Create(d.address(), Daemon::kAdminToken, tls);
  EXPECT_TRUE(with.ok()) << with.status().ToString();
}

// horovodrun with --rendezvous-addr: the job's workers join through the
// daemon.
TEST(DaemonLauncherTest, JobRunsThroughTheDaemon) {
  TempDir dir;
  Daemon d(dir);
  Result r =
      RunCommand({HVD_HOROVODRUN, "-np", "2", "--rendezvous-addr", d.address(),
                  "--rendezvous-token-file", d.token_file(), HVD_HELLO},
                 seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  std::sort(lines.begin(), lines.end());
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0], "[0]<stdout>:rank 0/2: sum=3");
  EXPECT_EQ(lines[1], "[1]<stdout>:rank 1/2: sum=3");
}

TEST(DaemonLauncherTest, JobRunsThroughTheDaemonOverTls) {
  TempDir dir;
  Certs certs;
  ASSERT_TRUE(MakeCerts(dir, certs)) << "openssl failed";
  Daemon d(dir, {"--tls-cert", certs.server_cert, "--tls-key", certs.server_key,
                 "--tls-client-ca", certs.ca});
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--rendezvous-addr", d.address(),
       "--rendezvous-token-file", d.token_file(), "--rendezvous-tls-ca",
       certs.ca, "--rendezvous-tls-cert", certs.client_cert,
       "--rendezvous-tls-key", certs.client_key, HVD_HELLO},
      seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u);
}

TEST(DaemonLauncherTest, WrongTokenIsOneLineSayingSo) {
  TempDir dir;
  Daemon d(dir);
  std::string wrong = dir.Write("wrong", "not-the-token\n");
  Result r =
      RunCommand({HVD_HOROVODRUN, "-np", "2", "--rendezvous-addr", d.address(),
                  "--rendezvous-token-file", wrong, HVD_HELLO},
                 seconds(60));
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("admin token is wrong"), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("--rendezvous-token-file"), std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

// An absent daemon is retried until --start-timeout: one line says so
// while it waits, and one when it gives up.
TEST(DaemonLauncherTest, UnreachableDaemonIsOneLineSayingSo) {
  TempDir dir;
  std::string address;
  {
    Daemon d(dir);
    address = d.address();
    d.Stop(SIGTERM);
  }
  std::string token = dir.Write("tok", "admin-token\n");
  Result r = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--start-timeout", "2", "--rendezvous-addr",
       address, "--rendezvous-token-file", token, HVD_HELLO},
      seconds(60));
  EXPECT_EQ(r.exit_code, 1);
  auto lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_NE(lines[0].find("retrying until it answers (create job"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("cannot reach the rendezvous server"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[1].find("still unreachable after 2"), std::string::npos)
      << lines[1];
  EXPECT_LT(r.took, seconds(15));
}

// A daemon that comes up (or back) while horovodrun creates its job: the
// job is made once and runs.
TEST(DaemonLauncherTest, ADaemonThatComesUpLateStillGetsTheJob) {
  TempDir dir;
  const int port = FreePort("127.0.0.1");
  const std::string address = "127.0.0.1:" + std::to_string(port);
  std::string token = dir.Write("tok", std::string(Daemon::kAdminToken) + "\n");
  Subprocess job({HVD_HOROVODRUN, "-np", "2", "--rendezvous-addr", address,
                  "--rendezvous-token-file", token, HVD_HELLO});
  ASSERT_FALSE(
      job.WaitForStderr("(retrying until it answers)", seconds(60)).empty())
      << job.StderrSoFar();
  Daemon d(dir, {}, address);
  Result r = job.Wait(seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(SystemdUnitTest, VerifiesCleanAndIsHardened) {
  std::string unit = *ReadWholeFile(
      HVD_SOURCE_DIR "/packaging/systemd/hvd-rendezvousd.service");
  for (const char* line :
       {"Type=notify", "DynamicUser=yes", "NoNewPrivileges=yes",
        "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
        "LoadCredential=admin-token:/etc/hvd/admin-token",
        "--config /etc/hvd/rendezvousd.yaml",
        "StateDirectory=hvd-rendezvousd"}) {
    EXPECT_NE(unit.find(line), std::string::npos) << line;
  }
  // The state directory comes from StateDirectory= ($STATE_DIRECTORY), so
  // that a store: etcd://... in the YAML file needs no edit of the unit.
  EXPECT_EQ(unit.find("--state-dir"), std::string::npos);
  TempDir dir;
  std::string copy = std::regex_replace(
      unit, std::regex("/usr/bin/hvd-rendezvousd"), HVD_RENDEZVOUSD);
  std::string path = dir.Write("hvd-rendezvousd.service", copy, 0644);
  Result r =
      RunCommand({"/usr/bin/systemd-analyze", "verify", path}, seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "systemd-analyze has complaints";
}

}  // namespace
}  // namespace hvd::testing
