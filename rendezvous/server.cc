#include "rendezvous/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/host_port.h"
#include "common/logging.h"
#include "common/random.h"
#include "proto/rendezvous.grpc.pb.h"
#include "rendezvous/expirer.h"
#include "rendezvous/grpc_status.h"
#include "rendezvous/server_session.h"
#include "rendezvous/server_stats.h"
#include "rendezvous/service_util.h"

namespace hvd::rendezvous {
namespace {

namespace pb = ::hvd::rendezvous::v1;

class Service final : public pb::Rendezvous::CallbackService {
 public:
  Service(JobTable* table, std::string admin_token, Expirer* expirer,
          ServerStats* stats)
      : table_(table),
        admin_token_(std::move(admin_token)),
        expirer_(expirer),
        stats_(stats) {}

  grpc::ServerUnaryReactor* CreateJob(grpc::CallbackServerContext* ctx,
                                      const pb::CreateJobRequest* req,
                                      pb::CreateJobResponse* resp) override {
    Call call(stats_, "create_job");
    Status s = CheckAdmin(ctx);
    if (s.ok()) {
      auto job = table_->CreateJob(HostsFromProto(req->hosts()), req->size(),
                                   req->elastic(), req->creation_key());
      if (job.ok()) {
        resp->set_job_id(job->job_id);
        resp->set_job_token(job->token);
        resp->set_ttl_seconds(job->ttl_seconds);
        HVD_LOG(Info) << "created "
                      << (req->elastic() ? "elastic job " : "job ")
                      << job->job_id << " for " << req->size() << " workers on "
                      << req->hosts_size() << " hosts";
        // The expirer may be asleep with nothing to expire.
        if (job->ttl_seconds > 0) expirer_->Kick();
      }
      s = job.status();
    }
    return Answer(ctx, s);
  }

  grpc::ServerBidiReactor<pb::SessionRequest, pb::SessionResponse>* Session(
      grpc::CallbackServerContext* ctx) override {
    std::string job_id = Metadata(ctx, kJobIdMetadata);
    Status auth = CheckJob(ctx, job_id);
    // The session itself counts when refused; its ops count one by one.
    if (!auth.ok()) stats_->Record("session", auth, 0);
    return NewSessionReactor(table_, expirer_, stats_, job_id, auth);
  }

  grpc::ServerUnaryReactor* KeepAlive(grpc::CallbackServerContext* ctx,
                                      const pb::KeepAliveRequest* req,
                                      pb::KeepAliveResponse*) override {
    Call call(stats_, "keep_alive");
    Status s = CheckJob(ctx, req->job_id());
    if (s.ok()) s = table_->KeepAlive(req->job_id());
    return Answer(ctx, s);
  }

  grpc::ServerUnaryReactor* EndJob(grpc::CallbackServerContext* ctx,
                                   const pb::EndJobRequest* req,
                                   pb::EndJobResponse*) override {
    Call call(stats_, "end_job");
    Status s = CheckJob(ctx, req->job_id());
    if (s.ok()) {
      s = table_->EndJob(req->job_id(), req->reason().empty()
                                            ? "its creator ended it"
                                            : req->reason());
      if (s.ok()) {
        HVD_LOG(Info) << "ended job " << req->job_id() << ": " << req->reason();
      }
    }
    return Answer(ctx, s);
  }

  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx,
                                   const pb::GetJobRequest* req,
                                   pb::GetJobResponse* resp) override {
    Call call(stats_, "get_job");
    Status s = CheckJob(ctx, req->job_id());
    if (s.ok()) {
      auto info = table_->Info(req->job_id());
      if (info.ok()) {
        resp->set_size(info->size);
        for (int r : info->joined) resp->add_joined_ranks(r);
      }
      s = info.status();
    }
    return Answer(ctx, s);
  }

  grpc::ServerUnaryReactor* SetMembership(
      grpc::CallbackServerContext* ctx, const pb::SetMembershipRequest* req,
      pb::SetMembershipResponse* resp) override {
    Call call(stats_, "set_membership");
    Status s = CheckJob(ctx, req->job_id());
    if (s.ok()) {
      auto epoch =
          table_->SetMembership(req->job_id(), HostsFromProto(req->hosts()),
                                req->size(), req->epoch());
      if (epoch.ok()) {
        resp->set_epoch(*epoch);
        HVD_LOG(Info) << "job " << req->job_id() << ": membership epoch "
                      << *epoch << ", " << req->size() << " workers on "
                      << req->hosts_size() << " hosts";
      }
      s = epoch.status();
    }
    return Answer(ctx, s);
  }

 private:
  // A unary call being answered: Answer() records its outcome and time.
  struct Call {
    Call(ServerStats* stats, const char* method)
        : stats(stats), method(method), start(Clock::now()) {
      current = this;
    }
    ~Call() { current = nullptr; }
    ServerStats* stats;
    const char* method;
    Clock::time_point start;
    static thread_local Call* current;
  };

  // Answers once the table's changes so far are durable: a change the
  // caller was told of must outlive the daemon.
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx,
                                   const Status& s) {
    if (Call* c = Call::current) {
      c->stats->Record(
          c->method, s,
          std::chrono::duration<double>(Clock::now() - c->start).count());
    }
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    table_->WhenDurable([r, s](const Status& durable) {
      r->Finish(ToGrpcStatus(durable.ok() ? s : durable));
    });
    return r;
  }

  Status CheckAdmin(grpc::CallbackServerContext* ctx) const {
    std::string token = Metadata(ctx, kAdminTokenMetadata);
    if (token.empty()) {
      return Status::Unauthenticated("CreateJob", "no admin token was sent");
    }
    if (!ConstantTimeEquals(token, admin_token_)) {
      return Status::Unauthenticated("CreateJob", "the admin token is wrong");
    }
    return Status::Ok();
  }

  Status CheckJob(grpc::CallbackServerContext* ctx,
                  const std::string& job_id) const {
    if (job_id.empty()) return Status::InvalidArgument("job_id", "is empty");
    return table_->Authenticate(job_id, Metadata(ctx, kJobTokenMetadata));
  }

  JobTable* table_;
  std::string admin_token_;
  Expirer* expirer_;
  ServerStats* stats_;
};

thread_local Service::Call* Service::Call::current = nullptr;

}  // namespace

class RendezvousServer::Impl {
 public:
  explicit Impl(std::shared_ptr<JobTable> t)
      : owned(std::move(t)), table(*owned) {}
  std::shared_ptr<JobTable> owned;
  JobTable& table;
  ServerStats stats;
  std::unique_ptr<Expirer> expirer;
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  HostPort bound;
  bool shut_down = false;
};

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

RendezvousServer::~RendezvousServer() { Shutdown(); }

StatusOr<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(
    const ServerOptions& options) {
  if (options.admin_token.empty()) {
    return Status::InvalidArgument("admin token",
                                   "is empty; the server needs one");
  }
  HVD_ASSIGN_OR_RETURN(
      HostPort listen,
      ParseHostPort(options.listen, "rendezvous listen address"));
  if (options.tls.cert_pem.empty() != options.tls.key_pem.empty()) {
    return Status::InvalidArgument(
        "TLS", "a certificate needs its key and a key its certificate");
  }
  if (!options.tls.client_ca_pem.empty() && options.tls.cert_pem.empty()) {
    return Status::InvalidArgument(
        "TLS",
        "a client CA (mutual TLS) needs the server's certificate and key");
  }
  TuneGrpcRuntimeOnce();
  auto impl = std::make_unique<Impl>(
      options.table ? options.table
                    : std::make_shared<JobTable>(options.limits));
  impl->expirer = std::make_unique<Expirer>(&impl->table);
  impl->service = std::make_unique<Service>(&impl->table, options.admin_token,
                                            impl->expirer.get(), &impl->stats);
  grpc::ServerBuilder builder;
  int port = 0;
  std::shared_ptr<grpc::ServerCredentials> creds =
      grpc::InsecureServerCredentials();
  if (!options.tls.cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl(
        options.tls.client_ca_pem.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = options.tls.client_ca_pem;
    ssl.pem_key_cert_pairs.push_back(
        {options.tls.key_pem, options.tls.cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  }
  // The standard health service, so probes and load balancers need no
  // client of ours. Process-wide in gRPC; set before the builder.
  grpc::EnableDefaultHealthCheckService(true);
  builder.AddListeningPort(listen.ToString(), creds, &port);
  builder.RegisterService(impl->service.get());
  // SO_REUSEPORT would let a second server silently share the port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl->server = builder.BuildAndStart();
  if (!impl->server || port == 0) {
    return Status::Unavailable("rendezvous",
                               "cannot listen on " + listen.ToString() +
                                   " (address in use or not on this machine)");
  }
  impl->bound = HostPort{listen.host, static_cast<uint16_t>(port)};
  impl->server->GetHealthCheckService()->SetServingStatus(true);
  return std::unique_ptr<RendezvousServer>(
      new RendezvousServer(std::move(impl)));
}

int RendezvousServer::port() const { return impl_->bound.port; }
std::string RendezvousServer::address() const {
  return impl_->bound.ToString();
}
JobTable& RendezvousServer::table() { return impl_->table; }

std::string RendezvousServer::MetricsExposition() const {
  return impl_->stats.Exposition(impl_->table);
}

void RendezvousServer::Shutdown(const Status& why,
                                std::chrono::milliseconds grace) {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->server->GetHealthCheckService()->SetServingStatus(false);
  // Pending waits would otherwise hold Shutdown until their deadlines.
  impl_->table.CancelAll(why);
  // Past the grace, answers still waiting for their change to be durable
  // (an unreachable etcd) end, or gRPC's Shutdown would wait for them
  // until the store's own timeout. Their callers retry, as for any
  // unanswered call.
  std::mutex mu;
  std::condition_variable cv;
  bool shut = false;
  std::thread abandon([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, grace, [&] { return shut; })) {
      impl_->table.AbandonDurability(why);
    }
  });
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  {
    std::lock_guard<std::mutex> lock(mu);
    shut = true;
  }
  cv.notify_all();
  abandon.join();
  impl_->server->Wait();
  impl_->expirer.reset();
}

}  // namespace hvd::rendezvous
