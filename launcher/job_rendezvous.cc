#include "launcher/job_rendezvous.h"

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "common/files.h"
#include "common/host_port.h"
#include "common/random.h"
#include "rendezvous/client.h"
#include "rendezvous/flight_keys.h"
#include "rendezvous/server.h"

namespace hvd::launcher {
namespace {

std::vector<rendezvous::Member> MembersFrom(const StatusOr<std::string>& text) {
  if (!text.ok()) return {};
  auto members = rendezvous::ParseMembers(*text);
  return members.ok() ? *members : std::vector<rendezvous::Member>{};
}

class EmbeddedRendezvous final : public JobRendezvous {
 public:
  EmbeddedRendezvous(std::unique_ptr<rendezvous::RendezvousServer> server,
                     JobAccess access)
      : server_(std::move(server)), access_(std::move(access)) {}

  const JobAccess& access() const override { return access_; }
  std::vector<int> JoinedRanks() override {
    auto joined = server_->table().JoinedRanks(access_.job_id);
    return joined.ok() ? *joined : std::vector<int>{};
  }
  void RecordExit(const std::string& host, int slot, int exit_status) override {
    (void)server_->table().Set(access_.job_id, rendezvous::ExitKey(host, slot),
                               std::to_string(exit_status));
  }
  std::vector<rendezvous::Member> Members() override {
    return MembersFrom(
        server_->table().Get(access_.job_id, rendezvous::kMembersKey));
  }
  Status Set(const std::string& key, const std::string& value) override {
    return server_->table().Set(access_.job_id, key, value);
  }
  StatusOr<std::string> Get(const std::string& key) override {
    return server_->table().Get(access_.job_id, key);
  }
  StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) override {
    // The deadline is kept here: the server's expirer is not told of a
    // wait made on its table directly.
    auto got =
        std::make_shared<std::promise<StatusOr<std::vector<std::string>>>>();
    std::future<StatusOr<std::vector<std::string>>> answer = got->get_future();
    const rendezvous::JobTable::WaitId id = server_->table().Wait(
        access_.job_id, keys, rendezvous::Clock::now() + timeout,
        [got](StatusOr<std::vector<std::string>> v) {
          got->set_value(std::move(v));
        });
    if (answer.wait_for(timeout) == std::future_status::timeout) {
      server_->table().CancelWait(id);
      return Status::DeadlineExceeded(
          "rendezvous wait", "not every key was set within " +
                                 std::to_string(timeout.count()) + " ms");
    }
    return answer.get();
  }
  void End(const std::string& reason) override {
    server_->Shutdown(Status::Cancelled(reason));
  }
  std::vector<std::string> MetricsReports() override {
    return ValuesUnder(rendezvous::kMetricsKeyPrefix);
  }
  std::vector<std::string> ArrivalReports() override {
    return ValuesUnder(rendezvous::kArrivalsKeyPrefix);
  }
  Status SetMembership(std::vector<rendezvous::HostSlots> hosts,
                       int size) override {
    return server_->table()
        .SetMembership(access_.job_id, std::move(hosts), size)
        .status();
  }

 private:
  std::vector<std::string> ValuesUnder(const std::string& prefix) {
    std::vector<std::string> out;
    auto kv = server_->table().GetPrefix(access_.job_id, prefix);
    if (!kv.ok()) return out;
    for (auto& [key, value] : *kv) out.push_back(std::move(value));
    return out;
  }

  std::unique_ptr<rendezvous::RendezvousServer> server_;
  JobAccess access_;
};

class DaemonRendezvous final : public JobRendezvous {
 public:
  // `asker` serves the background asks (MembersAsync) alone, so that the
  // warning of an outage names the call that holds up the job.
  DaemonRendezvous(std::unique_ptr<rendezvous::RendezvousClient> client,
                   std::unique_ptr<rendezvous::RendezvousClient> asker,
                   JobAccess access, int ttl_seconds)
      : client_(std::move(client)),
        asker_(std::move(asker)),
        access_(std::move(access)) {
    if (ttl_seconds > 0) {
      // Three keep-alives per TTL, so one lost call does not end the job.
      auto period = std::chrono::milliseconds(ttl_seconds * 1000 / 3);
      keepalive_ = std::thread([this, period] { KeepAliveLoop(period); });
    }
  }
  ~DaemonRendezvous() override { End("horovodrun exited"); }

  const JobAccess& access() const override { return access_; }
  std::vector<int> JoinedRanks() override {
    auto info = client_->GetJob();
    return info.ok() ? info->joined : std::vector<int>{};
  }
  void RecordExit(const std::string& host, int slot, int exit_status) override {
    (void)client_->Set(rendezvous::ExitKey(host, slot),
                       std::to_string(exit_status));
  }
  std::vector<rendezvous::Member> Members() override {
    return MembersFrom(client_->Get(rendezvous::kMembersKey));
  }
  void MembersAsync(
      std::function<void(std::vector<rendezvous::Member>)> done) override {
    asker_->GetAsync(rendezvous::kMembersKey,
                     [done = std::move(done)](StatusOr<std::string> text) {
                       done(MembersFrom(std::move(text)));
                     });
  }
  Status Set(const std::string& key, const std::string& value) override {
    return client_->Set(key, value);
  }
  StatusOr<std::string> Get(const std::string& key) override {
    return client_->Get(key);
  }
  StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) override {
    return client_->Wait(keys, timeout);
  }
  void End(const std::string& reason) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      ended_ = true;
    }
    cv_.notify_all();
    if (keepalive_.joinable()) keepalive_.join();
    (void)client_->EndJob(reason);
  }
  std::vector<std::string> MetricsReports() override {
    // The command line refuses --metrics-port with --rendezvous-addr.
    return {};
  }
  std::vector<std::string> ArrivalReports() override { return {}; }
  Status SetMembership(std::vector<rendezvous::HostSlots> hosts,
                       int size) override {
    // From the epoch this launcher set last, so that a retry after a lost
    // answer (a daemon restarted meanwhile) is not applied twice.
    HVD_ASSIGN_OR_RETURN(int epoch,
                         client_->SetMembership(hosts, size, epoch_));
    epoch_ = epoch;
    return Status::Ok();
  }

 private:
  void KeepAliveLoop(std::chrono::milliseconds period) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return ended_; })) {
      lock.unlock();
      (void)client_->KeepAlive();
      lock.lock();
    }
  }

  std::unique_ptr<rendezvous::RendezvousClient> client_;
  std::unique_ptr<rendezvous::RendezvousClient> asker_;
  JobAccess access_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ended_ = false;  // guarded by mu_
  std::thread keepalive_;
  int epoch_ = 0;  // the membership last set (the elastic driver's thread)
};

StatusOr<std::string> ReadOptional(const std::string& path) {
  if (path.empty()) return std::string();
  return ReadWholeFile(path);
}

}  // namespace

namespace {

StatusOr<std::unique_ptr<JobRendezvous>> StartServer(
    bool loopback, std::vector<rendezvous::HostSlots> hosts, int size,
    bool elastic) {
  HVD_ASSIGN_OR_RETURN(std::string admin, RandomHex(32));
  rendezvous::ServerOptions options;
  options.listen = loopback ? "127.0.0.1:0" : "0.0.0.0:0";
  options.admin_token = admin;
  HVD_ASSIGN_OR_RETURN(auto server,
                       rendezvous::RendezvousServer::Start(options));
  HVD_ASSIGN_OR_RETURN(
      rendezvous::CreatedJob job,
      server->table().CreateJob(std::move(hosts), size, elastic));
  JobAccess access;
  access.rendezvous_addr = server->address();
  access.job_id = job.job_id;
  access.job_token = job.token;
  return std::unique_ptr<JobRendezvous>(
      new EmbeddedRendezvous(std::move(server), std::move(access)));
}

}  // namespace

StatusOr<std::unique_ptr<JobRendezvous>> StartEmbeddedRendezvous(
    const LaunchPlan& plan) {
  return StartServer(plan.all_local, plan.hosts,
                     static_cast<int>(plan.workers.size()), false);
}

StatusOr<std::unique_ptr<JobRendezvous>> StartElasticRendezvous(bool loopback) {
  return StartServer(loopback, {}, 0, true);
}

int RendezvousPort(const JobAccess& access) {
  auto hp = ParseHostPort(access.rendezvous_addr, "rendezvous address");
  return hp.ok() ? hp->port : 0;
}

namespace {

// Registers a job of `hosts` (none for an elastic one) with the daemon.
StatusOr<std::unique_ptr<JobRendezvous>> ConnectDaemon(
    const LaunchOptions& options,
    const std::vector<rendezvous::HostSlots>& hosts, int size, bool elastic) {
  HVD_ASSIGN_OR_RETURN(
      std::string admin,
      ReadSecretFile(options.rendezvous_token_file, "--rendezvous-token-file"));
  rendezvous::ClientTls tls;
  HVD_ASSIGN_OR_RETURN(tls.ca_pem, ReadOptional(options.rendezvous_tls_ca));
  HVD_ASSIGN_OR_RETURN(tls.cert_pem, ReadOptional(options.rendezvous_tls_cert));
  if (!options.rendezvous_tls_key.empty()) {
    HVD_ASSIGN_OR_RETURN(tls.key_pem, ReadSecretFile(options.rendezvous_tls_key,
                                                     "--rendezvous-tls-key"));
  }
  auto job = rendezvous::RendezvousClient::CreateJob(
      options.rendezvous_addr, admin, hosts, size,
      // Across a daemon's restart: as long as workers may take to start.
      std::chrono::seconds(options.start_timeout_s), tls, elastic);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kUnauthenticated) {
      return Status::Unauthenticated(job.status().message(),
                                     "check --rendezvous-token-file: it must "
                                     "hold the daemon's admin token");
    }
    return job.status();
  }
  JobAccess access;
  access.rendezvous_addr = options.rendezvous_addr;
  access.job_id = job->job_id;
  access.job_token = job->token;
  access.tls_ca_pem = tls.ca_pem;
  access.tls_cert_pem = tls.cert_pem;
  access.tls_key_pem = tls.key_pem;
  auto client = rendezvous::RendezvousClient::Create(
      options.rendezvous_addr, job->job_id, job->token, tls);
  auto asker = rendezvous::RendezvousClient::Create(
      options.rendezvous_addr, job->job_id, job->token, tls);
  return std::unique_ptr<JobRendezvous>(
      new DaemonRendezvous(std::move(client), std::move(asker),
                           std::move(access), job->ttl_seconds));
}

}  // namespace

StatusOr<std::unique_ptr<JobRendezvous>> ConnectRendezvousDaemon(
    const LaunchPlan& plan, const LaunchOptions& options) {
  return ConnectDaemon(options, plan.hosts,
                       static_cast<int>(plan.workers.size()), false);
}

StatusOr<std::unique_ptr<JobRendezvous>> ConnectElasticRendezvousDaemon(
    const LaunchOptions& options) {
  return ConnectDaemon(options, {}, 0, true);
}

}  // namespace hvd::launcher
