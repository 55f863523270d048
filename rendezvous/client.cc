#include "rendezvous/client.h"

#include <grpcpp/grpcpp.h>

#include <future>
#include <thread>

#include "proto/rendezvous.grpc.pb.h"
#include "rendezvous/client_session.h"
#include "rendezvous/grpc_status.h"
#include "rendezvous/service_util.h"

namespace hvd::rendezvous {
namespace {

namespace pb = ::hvd::rendezvous::v1;

// Unary calls that do not block on the server answer in milliseconds; this
// only bounds a server that has stopped answering.
constexpr auto kCallTimeout = std::chrono::seconds(30);
// Extra time past a server-side wait's own timeout, for the answer to travel.
constexpr auto kWaitSlack = std::chrono::seconds(5);

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const ClientTls& tls) {
  TuneGrpcRuntimeOnce();
  grpc::ChannelArguments args;
  // A worker's environment often has http_proxy set for downloads; the
  // rendezvous is never behind it.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> creds =
      grpc::InsecureChannelCredentials();
  if (!tls.ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = tls.ca_pem;
    ssl.pem_cert_chain = tls.cert_pem;
    ssl.pem_private_key = tls.key_pem;
    creds = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

void SetDeadline(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

}  // namespace

class RendezvousClient::Stub {
 public:
  Stub(const std::string& address, const ClientTls& tls)
      : stub(pb::Rendezvous::NewStub(MakeChannel(address, tls))) {}
  std::unique_ptr<pb::Rendezvous::Stub> stub;
};

RendezvousClient::RendezvousClient(std::string address, std::string job_id,
                                   std::string job_token, const ClientTls& tls)
    : address_(std::move(address)),
      job_id_(std::move(job_id)),
      job_token_(std::move(job_token)),
      stub_(std::make_unique<Stub>(address_, tls)) {}

RendezvousClient::~RendezvousClient() {
  // The session's stream uses the stub; end it first.
  std::lock_guard<std::mutex> lock(session_mu_);
  session_.reset();
}

std::unique_ptr<RendezvousClient> RendezvousClient::Create(
    std::string address, std::string job_id, std::string job_token,
    const ClientTls& tls) {
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(
      std::move(address), std::move(job_id), std::move(job_token), tls));
}

StatusOr<CreatedJob> RendezvousClient::CreateJob(
    const std::string& address, const std::string& admin_token,
    const std::vector<HostSlots>& hosts, int size,
    std::chrono::milliseconds timeout, const ClientTls& tls) {
  auto stub = pb::Rendezvous::NewStub(MakeChannel(address, tls));
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout);
  // The creator is told at once when the daemon is not there, rather
  // than waiting out the timeout for it to appear.
  ctx.set_wait_for_ready(false);
  ctx.AddMetadata(kAdminTokenMetadata, admin_token);
  pb::CreateJobRequest req;
  for (const HostSlots& h : hosts) {
    pb::HostSlots* out = req.add_hosts();
    out->set_host(h.host);
    out->set_slots(h.slots);
    out->set_gpus(h.gpus);
  }
  req.set_size(size);
  pb::CreateJobResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub->CreateJob(&ctx, req, &resp),
                                     "rendezvous " + address));
  return CreatedJob{resp.job_id(), resp.job_token(), resp.ttl_seconds()};
}

Status RendezvousClient::KeepAlive() {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::KeepAliveRequest req;
  req.set_job_id(job_id_);
  pb::KeepAliveResponse resp;
  return FromGrpcStatus(stub_->stub->KeepAlive(&ctx, req, &resp),
                        "rendezvous " + address_ + " keep-alive");
}

Status RendezvousClient::EndJob(const std::string& reason) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::EndJobRequest req;
  req.set_job_id(job_id_);
  req.set_reason(reason);
  pb::EndJobResponse resp;
  return FromGrpcStatus(stub_->stub->EndJob(&ctx, req, &resp),
                        "rendezvous " + address_ + " end job");
}

StatusOr<JobInfo> RendezvousClient::GetJob() {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::GetJobRequest req;
  req.set_job_id(job_id_);
  pb::GetJobResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub_->stub->GetJob(&ctx, req, &resp),
                                     "rendezvous " + address_));
  JobInfo info;
  info.size = resp.size();
  info.joined.assign(resp.joined_ranks().begin(), resp.joined_ranks().end());
  return info;
}

std::shared_ptr<ClientSession> RendezvousClient::Session() {
  std::lock_guard<std::mutex> lock(session_mu_);
  if (!session_ || session_->ended()) {
    session_ = std::make_shared<ClientSession>(
        stub_->stub.get(), job_id_, job_token_, "rendezvous " + address_);
  }
  return session_;
}

void RendezvousClient::JoinAsync(const std::string& host, int slot,
                                 int previous_generation,
                                 std::function<void(StatusOr<Assignment>)> done,
                                 std::chrono::milliseconds wait) {
  pb::Op op;
  op.mutable_join()->set_host(host);
  op.mutable_join()->set_slot(slot);
  op.mutable_join()->set_previous_generation(previous_generation);
  op.mutable_join()->set_timeout_ms(wait.count());
  std::string where = "rendezvous " + address_ + " join";
  Session()->Submit(std::move(op),
                    [done = std::move(done), where](const pb::OpResult& r) {
                      Status s = ResultStatus(r, where);
                      if (!s.ok()) return done(s);
                      done(AssignmentFromProto(r.assignment()));
                    });
}

void RendezvousClient::SetAsync(const std::string& key,
                                const std::string& value,
                                std::function<void(Status)> done) {
  pb::Op op;
  op.mutable_set()->set_key(key);
  op.mutable_set()->set_value(value);
  std::string where = "rendezvous " + address_ + " set '" + key + "'";
  Session()->Submit(std::move(op),
                    [done = std::move(done), where](const pb::OpResult& r) {
                      done(ResultStatus(r, where));
                    });
}

void RendezvousClient::GetAsync(
    const std::string& key, std::function<void(StatusOr<std::string>)> done) {
  pb::Op op;
  op.mutable_get()->set_key(key);
  std::string where = "rendezvous " + address_ + " get";
  Session()->Submit(std::move(op),
                    [done = std::move(done), where](const pb::OpResult& r) {
                      Status s = ResultStatus(r, where);
                      if (!s.ok()) return done(s);
                      done(r.value());
                    });
}

void RendezvousClient::WaitAsync(
    const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
    std::function<void(StatusOr<std::vector<std::string>>)> done) {
  pb::Op op;
  for (const std::string& k : keys) op.mutable_wait()->add_keys(k);
  op.mutable_wait()->set_timeout_ms(std::max<int64_t>(1, timeout.count()));
  std::string where = "rendezvous " + address_;
  Session()->Submit(std::move(op),
                    [done = std::move(done), where](const pb::OpResult& r) {
                      Status s = ResultStatus(r, where);
                      if (!s.ok()) return done(s);
                      done(std::vector<std::string>(r.wait().values().begin(),
                                                    r.wait().values().end()));
                    });
}

void RendezvousClient::BarrierAsync(const std::string& name, int rank,
                                    std::chrono::milliseconds timeout,
                                    std::function<void(Status)> done) {
  pb::Op op;
  op.mutable_barrier()->set_name(name);
  op.mutable_barrier()->set_rank(rank);
  op.mutable_barrier()->set_timeout_ms(std::max<int64_t>(1, timeout.count()));
  std::string where = "rendezvous " + address_;
  Session()->Submit(std::move(op),
                    [done = std::move(done), where](const pb::OpResult& r) {
                      done(ResultStatus(r, where));
                    });
}

namespace {

// Runs an async call and waits for its answer up to `timeout`. The promise
// is shared, so an answer arriving after the caller gave up is harmless.
template <typename T, typename Start>
T Await(Start&& start, std::chrono::milliseconds timeout,
        const std::string& what) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  start([promise](T value) { promise->set_value(std::move(value)); });
  if (future.wait_for(timeout) != std::future_status::ready) {
    return Status::DeadlineExceeded(
        what, "no answer within " + std::to_string(timeout.count()) +
                  " ms; the server may be overloaded or unreachable");
  }
  return future.get();
}

}  // namespace

StatusOr<Assignment> RendezvousClient::Join(const std::string& host, int slot,
                                            std::chrono::milliseconds timeout,
                                            int previous_generation) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto backoff = std::chrono::milliseconds(20);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto r = Await<StatusOr<Assignment>>(
        [&](auto done) {
          // An elastic job's member waits at the server for the next
          // membership, as long as this join may take.
          JoinAsync(host, slot, previous_generation, std::move(done),
                    std::max(left, std::chrono::milliseconds(1)));
        },
        std::max(left, std::chrono::milliseconds(1)) + kWaitSlack,
        "rendezvous " + address_ + " join");
    // Retry only while the server cannot be reached (not started yet, or
    // restarting); every other answer is final.
    if (r.ok() || r.status().code() != StatusCode::kUnavailable) return r;
    if (std::chrono::steady_clock::now() + backoff >= deadline) {
      return Status::DeadlineExceeded(
          r.status().message(),
          "still unreachable after " + std::to_string(timeout.count() / 1000) +
              " s (raise --start-timeout if the server starts slowly)");
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

Status RendezvousClient::Set(const std::string& key, const std::string& value) {
  return Await<Status>(
      [&](auto done) { SetAsync(key, value, std::move(done)); }, kCallTimeout,
      "rendezvous " + address_ + " set '" + key + "'");
}

StatusOr<std::string> RendezvousClient::Get(const std::string& key) {
  return Await<StatusOr<std::string>>(
      [&](auto done) { GetAsync(key, std::move(done)); }, kCallTimeout,
      "rendezvous " + address_ + " get '" + key + "'");
}

StatusOr<std::vector<std::string>> RendezvousClient::Wait(
    const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  return Await<StatusOr<std::vector<std::string>>>(
      [&](auto done) { WaitAsync(keys, timeout, std::move(done)); },
      timeout + kWaitSlack, "rendezvous " + address_ + " wait");
}

Status RendezvousClient::Barrier(const std::string& name, int rank,
                                 std::chrono::milliseconds timeout) {
  return Await<Status>(
      [&](auto done) { BarrierAsync(name, rank, timeout, std::move(done)); },
      timeout + kWaitSlack, "rendezvous " + address_ + " barrier");
}

}  // namespace hvd::rendezvous
