// A real hvd-rendezvousd process for tests: a private token file, a port
// chosen by the daemon and read back from its "listening on" line.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/util/http_get.h"
#include "tests/util/job_pids.h"
#include "tests/util/ssh_host.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {

class Daemon {
 public:
  // Starts hvd-rendezvousd on `listen` with the admin token "admin-token".
  explicit Daemon(const TempDir& dir, std::vector<std::string> extra = {},
                  std::string listen = "127.0.0.1:0",
                  std::vector<std::string> env = {})
      : token_file_(dir.Write("admin-token", kAdminToken + std::string("\n"))) {
    std::vector<std::string> argv = {HVD_RENDEZVOUSD, "--listen", listen,
                                     "--admin-token-file", token_file_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Subprocess>(argv, env);
    address_ = process_->WaitForStderr("listening on (\\S+)",
                                       std::chrono::seconds(20));
  }
  ~Daemon() {
    if (!stopped_) Stop(SIGKILL);
  }

  static constexpr char kAdminToken[] = "admin-token";
  const std::string& address() const { return address_; }
  const std::string& token_file() const { return token_file_; }
  Subprocess& process() { return *process_; }

  Result Stop(int sig) {
    stopped_ = true;
    kill(process_->pid(), sig);
    return process_->Wait(std::chrono::seconds(30));
  }

 private:
  std::string token_file_;
  std::unique_ptr<Subprocess> process_;
  std::string address_;
  bool stopped_ = false;
};

// Waits until the daemon's metrics show `line` (60 s at most).
inline bool WaitForMetric(int metrics_port, const std::string& line) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (HttpGet(metrics_port, "/metrics").body.find(line + "\n") !=
        std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

#ifdef HVD_HELLO
// A two-rank horovodrun job against a daemon: `worker` runs in sh -c on
// each rank, and GATE in it names a file that OpenGate creates.
class HelloJob {
 public:
  HelloJob(const TempDir& dir, const std::string& address,
           const std::string& token_file, std::string worker)
      : dir_(dir), gate_(dir.path() + "/gate") {
    for (size_t at; (at = worker.find("GATE")) != std::string::npos;) {
      worker.replace(at, 4, gate_);
    }
    process_ = std::make_unique<Subprocess>(std::vector<std::string>{
        HVD_HOROVODRUN, "-np", "2", "--rendezvous-addr", address,
        "--rendezvous-token-file", token_file, "/bin/sh", "-c", worker});
  }
  Subprocess& process() { return *process_; }
  void OpenGate() { dir_.Write("gate", ""); }
  // Both ranks of kGated run, so horovodrun has its job.
  bool WaitForBothAtGate() {
    return WaitForFile(gate_ + ".0", std::chrono::seconds(60)) &&
           WaitForFile(gate_ + ".1", std::chrono::seconds(60));
  }
  // The job ends well, each rank having printed round `rounds`'s sum
  // (hvd_hello checks every sum).
  void ExpectEveryRound(int rounds) {
    Result r = process_->Wait(std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    for (int rank = 0; rank < 2; ++rank) {
      const std::string line = "[" + std::to_string(rank) + "]<stdout>:rank " +
                               std::to_string(rank) + "/2: round " +
                               std::to_string(rounds) + " sum=";
      EXPECT_NE(r.out.find(line), std::string::npos) << r.out << r.err;
    }
  }

  // Both ranks say they started (GATE.RANK) and wait at the gate, then
  // run 3 rounds.
  static constexpr char kGated[] =
      "touch GATE.$HOROVOD_RANK; while [ ! -e GATE ]; do sleep 0.05; done; "
      "exec " HVD_HELLO " --rounds 3";
  // Rank 1 waits at the gate; rank 0 joins and waits for it.
  static constexpr char kRank1Gated[] =
      "if [ \"$HOROVOD_RANK\" = 1 ]; then while [ ! -e GATE ]; do sleep "
      "0.05; done; fi; exec " HVD_HELLO " --rounds 3";
  // 40 rounds, each a new generation of the job, rank 1 starting each
  // 300 ms late: once round 2 is out, 11 s of rounds remain.
  static constexpr char kGenerations[] =
      "exec " HVD_HELLO " --rounds 40 --late-rank 1 --late-ms 300";

 private:
  const TempDir& dir_;
  std::string gate_;
  std::unique_ptr<Subprocess> process_;
};

// hvd-rendezvousd killed (-9) and started again on the same address under
// a running HelloJob; a subclass says where the daemon keeps its jobs.
class RestartedDaemonTest : public ::testing::Test {
 protected:
  virtual std::vector<std::string> StoreArgs() = 0;

  // A daemon that serves on the test's address (a free one the first time).
  void StartDaemon() {
    metrics_ = FreePort("127.0.0.1");
    std::vector<std::string> args = StoreArgs();
    args.push_back("--metrics-port");
    args.push_back(std::to_string(metrics_));
    daemon_ = std::make_unique<Daemon>(
        dir_, args, address_.empty() ? "127.0.0.1:0" : address_);
    if (address_.empty()) address_ = daemon_->address();
    ASSERT_EQ(daemon_->address(), address_) << daemon_->process().StderrSoFar();
  }
  void StartJob(const std::string& worker) {
    job_ = std::make_unique<HelloJob>(dir_, address_, daemon_->token_file(),
                                      worker);
  }
  void KillAndRestart() {
    daemon_->Stop(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    StartDaemon();
  }

#ifdef HVD_TEST_WORKER
  // An elastic job's membership changes while its daemon is down: an
  // elastic horovodrun job of two local hosts ("localhost" and
  // "127.0.0.1", one worker each, found by a discovery script) runs on the
  // daemon; the daemon is killed, the script then drops 127.0.0.1, and the
  // daemon comes back once horovodrun says its change waits for it. The
  // job must finish on the host left, with every step counted once (the
  // worker's weight is its steps).
  void ElasticHostLeavesWhileTheDaemonIsDown() {
    const std::string hosts = dir_.path() + "/hosts";
    const std::string pids = dir_.path() + "/pids";
    std::filesystem::create_directories(pids);
    dir_.Write("hosts", "localhost:1\n127.0.0.1:1\n");
    constexpr int kSteps = 60;
    Subprocess job({HVD_HOROVODRUN, "-np", "2", "--min-np", "1",
                    "--host-discovery-script", "cat " + hosts,
                    "--rendezvous-addr", address_, "--rendezvous-token-file",
                    daemon_->token_file(), HVD_TEST_WORKER, "--elastic-job",
                    std::to_string(kSteps), "--step-ms", "50", "--pid-dir",
                    pids});
    ASSERT_FALSE(
        job.WaitForStderr("elastic: (2) workers on", std::chrono::seconds(60))
            .empty())
        << job.StderrSoFar();
    ASSERT_TRUE(
        WaitForFile(pids + "/127.0.0.1-0.pid", std::chrono::seconds(60)))
        << job.StderrSoFar();
    daemon_->Stop(SIGKILL);
    // Renamed into place: the script never reads half a file.
    dir_.Write("hosts.new", "localhost:1\n");
    std::filesystem::rename(dir_.path() + "/hosts.new", hosts);
    ASSERT_FALSE(
        job.WaitForStderr("(set membership)", std::chrono::seconds(60)).empty())
        << job.StderrSoFar();
    StartDaemon();
    Result r = job.Wait(std::chrono::seconds(120));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("elastic: 1 worker on localhost:1"), std::string::npos)
        << r.err;
    const std::regex done(
        R"(\[0\]<stdout>:ELASTIC rank=0 size=1 steps=\d+ weight=)" +
        std::to_string(kSteps) + " ");
    EXPECT_TRUE(std::regex_search(r.out, done)) << r.out << r.err;
    for (pid_t pid : ReadPids(pids)) {
      EXPECT_FALSE(ProcessAlive(pid)) << "worker " << pid << " outlived it";
    }
  }
#endif

  TempDir dir_;
  std::string address_;
  int metrics_ = 0;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<HelloJob> job_;
};
#endif

// Certificates made with openssl for the TLS tests: a CA, a server
// certificate for 127.0.0.1, and a client certificate.
struct Certs {
  std::string ca, server_cert, server_key, client_cert, client_key;
};

inline bool MakeCerts(const TempDir& dir, Certs& out) {
  const std::string d = dir.path();
  std::string ext =
      dir.Write("san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  std::string cmd =
      "cd " + d +
      " && "
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
      "-nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=hvd-test-ca && "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-keyout server.key -out server.csr -subj /CN=localhost && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out server.pem -days 2 -extfile san.ext && "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-keyout client.key -out client.csr -subj /CN=hvd-client && "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out client.pem -days 2 && "
      "chmod 600 server.key client.key";
  if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) return false;
  out = {d + "/ca.pem", d + "/server.pem", d + "/server.key", d + "/client.pem",
         d + "/client.key"};
  return true;
}

}  // namespace hvd::testing
